//! An independent model of a table's money: what each PlaceBets should do (the limits of
//! docs/src/rules/limits.md as ListTables states them, raise under the minimum, Tie only with a
//! main bet, all or nothing, never beyond the balance) and what each round pays, settled by
//! `banco_rules::settle` from the cards dealt. The tests compare the services with it.

use std::collections::BTreeMap;

use banco_rules::{Bet, BetKind, Card, Coup, Paytable, Settlement, settle};
use banco_wire::pb;

/// A player's stakes in one round, by position.
pub type Stakes = BTreeMap<BetKind, i64>;

/// The table's limits per position, from ListTables.
#[derive(Clone, Debug)]
pub struct Limits(pub BTreeMap<BetKind, (i64, i64)>);

impl Limits {
    pub fn from_info(info: &pb::TableInfo) -> Limits {
        Limits(
            info.limits
                .iter()
                .map(|l| (kind_from_pb(l.kind), (l.min_minor, l.max_minor)))
                .collect(),
        )
    }

    pub fn of(&self, kind: BetKind) -> (i64, i64) {
        self.0
            .get(&kind)
            .copied()
            .unwrap_or_else(|| panic!("ListTables gave no limits for {kind}"))
    }
}

pub fn kind_from_pb(raw: i32) -> BetKind {
    match pb::BetKind::try_from(raw) {
        Ok(pb::BetKind::Player) => BetKind::Player,
        Ok(pb::BetKind::Banker) => BetKind::Banker,
        Ok(pb::BetKind::Tie) => BetKind::Tie,
        Ok(pb::BetKind::PlayerPair) => BetKind::PlayerPair,
        Ok(pb::BetKind::BankerPair) => BetKind::BankerPair,
        Ok(pb::BetKind::EitherPair) => BetKind::EitherPair,
        Ok(pb::BetKind::PerfectPair) => BetKind::PerfectPair,
        Ok(pb::BetKind::Big) => BetKind::Big,
        Ok(pb::BetKind::Small) => BetKind::Small,
        other => panic!("bet kind {raw}: {other:?}"),
    }
}

/// What should become of one requested position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// Accepted, adding this amount (the request, or what brings the position to the
    /// minimum).
    Accepted(i64),
    Refused(pb::RefusalCode),
}

/// The decision on each position of a request (at most one entry per position).
pub fn predict(
    limits: &Limits,
    existing: Option<&Stakes>,
    balance: i64,
    request: &[(BetKind, i64)],
) -> Vec<Expected> {
    let before = |kind| existing.and_then(|s| s.get(&kind)).copied().unwrap_or(0);
    let mut own: Vec<Option<pb::RefusalCode>> = vec![None; request.len()];
    let mut adds = Vec::with_capacity(request.len());
    for (i, &(kind, asked)) in request.iter().enumerate() {
        let (min, max) = limits.of(kind);
        let add = if before(kind) + asked < min {
            min - before(kind)
        } else {
            asked
        };
        if before(kind) + add > max {
            own[i] = Some(pb::RefusalCode::AboveMaximum);
        }
        adds.push(add);
    }
    let has = |k| request.iter().any(|&(kind, _)| kind == k) || before(k) > 0;
    if let Some(i) = request.iter().position(|&(k, _)| k == BetKind::Tie)
        && !has(BetKind::Player)
        && !has(BetKind::Banker)
        && own[i].is_none()
    {
        // A Tie also over its maximum is refused for that first.
        own[i] = Some(pb::RefusalCode::NotAllowed);
    }
    if own.iter().any(Option::is_some) {
        return own
            .into_iter()
            .map(|o| Expected::Refused(o.unwrap_or(pb::RefusalCode::NotAllowed)))
            .collect();
    }
    if adds.iter().sum::<i64>() > balance {
        return vec![Expected::Refused(pb::RefusalCode::InsufficientFunds); request.len()];
    }
    adds.into_iter().map(Expected::Accepted).collect()
}

/// Checks a PlaceBets reply against the prediction; `Err` says where they differ.
pub fn check_decisions(
    expected: &[Expected],
    request: &[(BetKind, i64)],
    existing: Option<&Stakes>,
    reply: &pb::PlaceBetsResponse,
) -> Result<(), String> {
    if reply.decisions.len() != expected.len() {
        return Err(format!(
            "{} decisions for {} bets: {reply:?}",
            reply.decisions.len(),
            expected.len()
        ));
    }
    for (i, (want, got)) in expected.iter().zip(&reply.decisions).enumerate() {
        let (kind, asked) = request[i];
        let before = existing.and_then(|s| s.get(&kind)).copied().unwrap_or(0);
        match (want, &got.decision) {
            (Expected::Accepted(add), Some(pb::bet_decision::Decision::Accepted(a)))
                if a.accepted_minor == *add
                    && a.requested_minor == asked
                    && kind_from_pb(a.kind) == kind
                    && a.position_total_minor == before + add => {}
            (Expected::Refused(code), Some(pb::bet_decision::Decision::Refusal(r)))
                if r.code() == *code => {}
            _ => {
                return Err(format!(
                    "bets[{i}] {kind} {asked} (had {before}): expected {want:?}, got {got:?}"
                ));
            }
        }
    }
    Ok(())
}

/// Every player's money as the model sees it.
#[derive(Clone, Debug)]
pub struct Books {
    pub limits: Limits,
    pub paytable: Paytable,
    pub welcome_credit: i64,
    /// Available to bet.
    pub balances: BTreeMap<String, i64>,
    /// Stakes of the round open (or being dealt).
    pub round: BTreeMap<String, Stakes>,
    /// Everything credited (welcome credits).
    pub credited: i64,
    /// The house's result over every settled round.
    pub house: i64,
}

impl Books {
    pub fn new(limits: Limits, paytable: Paytable, welcome_credit: i64) -> Books {
        Books {
            limits,
            paytable,
            welcome_credit,
            balances: BTreeMap::new(),
            round: BTreeMap::new(),
            credited: 0,
            house: 0,
        }
    }

    pub fn balance(&self, player: &str) -> i64 {
        self.balances.get(player).copied().unwrap_or(0)
    }

    /// Whether `told` (a reply's balance) agrees with the model for `player`: the wallet's
    /// available balance may still lack the last round's payouts, but then they are in
    /// `pending`, on their way (which may also hold cancels of debits the wallet never
    /// took, so the sum may be more than the model, never the available part alone).
    pub fn check_balance(&self, player: &str, told: Option<&pb::Balance>) -> Result<(), String> {
        let want = self.balance(player);
        let Some(told) = told else {
            return Err(format!("{player}: no balance in the reply"));
        };
        let (available, pending) = (told.available_minor, told.pending_minor);
        if available <= want && want <= available + pending {
            Ok(())
        } else {
            Err(format!(
                "{player}: available {available} (pending {pending}), the model says {want}"
            ))
        }
    }

    /// The broadcaster credits a player's first bet request at a table.
    pub fn welcome(&mut self, player: &str) {
        if !self.balances.contains_key(player) {
            self.balances.insert(player.to_owned(), self.welcome_credit);
            self.credited += self.welcome_credit;
        }
    }

    /// A request's expected decisions (after the welcome credit).
    pub fn predict(&mut self, player: &str, request: &[(BetKind, i64)]) -> Vec<Expected> {
        self.welcome(player);
        predict(
            &self.limits,
            self.round.get(player),
            self.balance(player),
            request,
        )
    }

    /// Books the decisions of an accepted request.
    pub fn apply(&mut self, player: &str, request: &[(BetKind, i64)], expected: &[Expected]) {
        let mut total = 0;
        for (&(kind, _), e) in request.iter().zip(expected) {
            if let Expected::Accepted(add) = e {
                *self
                    .round
                    .entry(player.to_owned())
                    .or_default()
                    .entry(kind)
                    .or_default() += add;
                total += add;
            }
        }
        *self.balances.entry(player.to_owned()).or_default() -= total;
    }

    /// Settles the round on `cards` (the whole hand in dealing order): every player's
    /// settlements, in position order, paid into the model's balances.
    pub fn settle(&mut self, cards: &[Card]) -> BTreeMap<String, Vec<Settlement>> {
        let result = Coup::judge(cards).unwrap_or_else(|e| panic!("{cards:?}: {e}"));
        let mut out = BTreeMap::new();
        for (player, stakes) in std::mem::take(&mut self.round) {
            let bets: Vec<Bet> = stakes.iter().map(|(&k, &s)| Bet::new(k, s)).collect();
            let settled =
                settle(&bets, &result, &self.paytable).unwrap_or_else(|e| panic!("{player}: {e}"));
            for s in &settled {
                self.house += s.stake - s.returned;
                *self.balances.entry(player.clone()).or_default() += s.returned;
            }
            out.insert(player, settled);
        }
        out
    }

    /// A voided round: every stake back.
    pub fn void(&mut self) {
        for (player, stakes) in std::mem::take(&mut self.round) {
            *self.balances.entry(player).or_default() += stakes.values().sum::<i64>();
        }
    }
}
