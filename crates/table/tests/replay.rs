//! Replay: a long, seeded, random but valid session (200 rounds, 20 players, every bet
//! kind, raises, retries, clears, rebets, misscans with undo, voids, shoe changes) is
//! applied to one table, the wallet answering each bet request and owed movement at once
//! (`banco_table::instant_wallet`); the accepted commands, journaled as JSON, are replayed into a
//! fresh table, which must give the same events and the same state. Every settlement is
//! recomputed independently with `banco_rules::settle`, every balance is recomputed from
//! the events, and the books balance after every command.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use banco_rules::shoe::BurnRule;
use banco_rules::{Bet, BetKind, settle};
use banco_table::instant_wallet::instant_answer;
use banco_table::{CardSource, Command, Event, Pacing, Refusal, Table, TableConfig};
use support::*;

/// splitmix64: the test's own choices (the cards come from the seeded shuffled shoe).
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Default)]
struct Session {
    journal: Vec<String>,
    events: Vec<Vec<Event>>,
    refused: usize,
    apply_ns: u128,
}

impl Session {
    /// Applies `cmd` and then the wallet's answers to it, each journaled as the actor
    /// journals them; the events of all of them.
    fn apply(&mut self, t: &mut Table, cmd: Command) -> Result<Vec<Event>, Refusal> {
        let mut all = self.apply_one(t, &cmd)?;
        let mut i = 0;
        while i < all.len() {
            if let Some(answer) = instant_answer(t, &all[i], cmd.now_ms()) {
                let more = self
                    .apply_one(t, &answer)
                    .unwrap_or_else(|r| panic!("{answer:?} refused: {r}"));
                all.extend(more);
            }
            i += 1;
        }
        Ok(all)
    }

    fn apply_one(&mut self, t: &mut Table, cmd: &Command) -> Result<Vec<Event>, Refusal> {
        let before = t.clone();
        let start = Instant::now();
        let outcome = t.apply(cmd);
        self.apply_ns += start.elapsed().as_nanos();
        match &outcome {
            Ok(events) => {
                self.journal.push(journaled(cmd));
                self.events.push(events.clone());
            }
            Err(_) => {
                assert_eq!(*t, before, "refused {cmd:?} changed the table");
                self.refused += 1;
            }
        }
        t.check_books()
            .unwrap_or_else(|e| panic!("after {cmd:?}: {e}"));
        outcome
    }

    fn must(&mut self, t: &mut Table, cmd: Command) -> Vec<Event> {
        let shown = format!("{cmd:?}");
        self.apply(t, cmd)
            .unwrap_or_else(|r| panic!("{shown} refused: {r}"))
    }
}

const AMOUNTS: [i64; 7] = [100, 500, 700, 1_000, 2_500, 5_000, 12_000];

fn table_config() -> TableConfig {
    let mut cfg = config(Pacing::Live);
    cfg.policy.live_betting_ms = Some(15_000);
    cfg.policy.progression_cap = Some(true);
    cfg
}

#[test]
fn a_journaled_session_replays_to_the_same_state() {
    let players: Vec<String> = (0..20).map(|i| format!("player{i:02}")).collect();
    let mut choose = Choices(2024);
    let mut t = Table::new(table_config()).unwrap();
    let mut s = Session::default();
    let mut now = 1_700_000_000_000u64;
    // What the cashier moved, told by the wallet.
    let mut funded: BTreeMap<String, i64> = BTreeMap::new();
    let mut fund = |s: &mut Session, t: &mut Table, p: &str, delta: i64| {
        s.must(t, funding(t, p, delta));
        *funded.entry(p.to_owned()).or_default() += delta;
    };
    for p in &players {
        fund(&mut s, &mut t, p, 300_000);
    }
    let shoe_cfg = shoe_config(8, BurnRule::ExposeAndBurn);
    let mut dealer = Dealer::new(shoe_cfg, 0);
    let mut shoes = 0u64;
    let mut finished = 0;
    let mut key = 0u64;
    let mut next_key = || {
        key += 1;
        format!("req-{key}")
    };
    while finished < 200 {
        now += 1_000;
        if t.shoe().is_none() {
            shoes += 1;
            dealer = Dealer::new(shoe_cfg, shoes);
            s.must(&mut t, open_shoe(shoe_cfg, now));
            s.must(&mut t, dealer.burn(now + 1));
        }
        s.must(&mut t, open_betting(now));
        let round = t.round_id().unwrap().clone();
        let closes_at = now + 15_000;
        for p in &players {
            if !choose.chance(60) {
                continue;
            }
            let at = now + 1 + choose.below(14_999);
            let k = next_key();
            let cmd = if choose.chance(10) {
                Command::Rebet {
                    player: p.clone(),
                    round_id: None,
                    key: k,
                    now_ms: at,
                }
            } else {
                let n = 1 + choose.below(3);
                let bets: Vec<(BetKind, i64)> = (0..n)
                    .map(|_| {
                        let kind = BetKind::ALL[choose.below(9) as usize];
                        (kind, AMOUNTS[choose.below(AMOUNTS.len() as u64) as usize])
                    })
                    .collect();
                Command::PlaceBets {
                    player: p.clone(),
                    round_id: round.clone(),
                    bets,
                    key: k,
                    now_ms: at,
                }
            };
            if s.apply(&mut t, cmd.clone()).is_ok() && choose.chance(10) {
                // A retry of the same request: its original answer, no second debit.
                let again = s.must(&mut t, cmd);
                assert!(matches!(&again[..], [Event::Replayed { .. }]), "{again:?}");
            }
            if choose.chance(5) {
                let _ = s.apply(
                    &mut t,
                    Command::ClearBets {
                        player: p.clone(),
                        round_id: None,
                        key: next_key(),
                        now_ms: at + 1,
                    },
                );
            }
            if choose.chance(2) {
                // Too late, by the server clock.
                let late = Command::PlaceBets {
                    player: p.clone(),
                    round_id: round.clone(),
                    bets: vec![(BetKind::Player, 500)],
                    key: next_key(),
                    now_ms: closes_at,
                };
                assert!(matches!(
                    s.apply(&mut t, late),
                    Err(Refusal::BettingClosedAt { .. })
                ));
            }
        }
        if choose.chance(3) {
            let cmd = void(&t, "table malfunction before the draw", now + 15_500);
            s.must(&mut t, cmd);
            finished += 1;
            continue;
        }
        if choose.chance(50) {
            s.must(
                &mut t,
                Command::Tick {
                    now_ms: closes_at + choose.below(800),
                },
            );
        } else {
            s.must(&mut t, close_betting(now + 14_000));
        }
        let deal_at = now + 16_000;
        let misscan = choose.chance(8);
        let void_mid = choose.chance(3);
        while t.due().is_some_and(|d| d.side().is_some()) {
            if misscan && t.snapshot().cards.len() == 1 + choose.below(3) as usize {
                // The scanner read a different card: take it back, deal the real one.
                let real = dealer.peek();
                let shoe = t.shoe().unwrap();
                let wrong = (1..52)
                    .map(|d| banco_rules::Card::ALL[(usize::from(real.index()) + d) % 52])
                    .find(|c| shoe.composition().count(*c) > 0)
                    .unwrap();
                s.must(
                    &mut t,
                    Command::DealCard {
                        card: wrong,
                        source: CardSource::Manual,
                        now_ms: deal_at,
                    },
                );
                s.must(
                    &mut t,
                    Command::UndoLastCard {
                        reason: format!("misscan, was {real}"),
                        by: CROUPIER.into(),
                        now_ms: deal_at + 1,
                    },
                );
            }
            s.must(&mut t, dealer.next_card(deal_at + 2));
            if void_mid {
                break;
            }
        }
        if void_mid {
            let cmd = void(&t, "card scanner failed", deal_at + 3);
            s.must(&mut t, cmd);
        } else {
            let cmd = confirm(&t, deal_at + 3);
            s.must(&mut t, cmd);
        }
        finished += 1;
        if choose.chance(5) {
            let p = &players[choose.below(20) as usize];
            fund(&mut s, &mut t, p, 50_000);
        }
        if choose.chance(3) {
            let p = &players[choose.below(20) as usize];
            if t.balance(p).unwrap_or(0) >= 20_000 {
                fund(&mut s, &mut t, p, -20_000);
            }
        }
    }

    // Every settlement, recomputed independently; every bet kind was settled.
    let paytable = &t.config().policy.paytable;
    let (mut settled, mut voided, mut corrections, mut raised, mut replayed) = (0, 0, 0, 0, 0);
    let mut kinds = BTreeSet::new();
    let mut balances = funded.clone();
    for event in s.events.iter().flatten() {
        match event {
            Event::RoundFinished(record) => {
                corrections += record.corrections.len();
                if record.void.is_some() {
                    voided += 1;
                    continue;
                }
                let result = record.result.unwrap();
                for (player, stakes) in &record.bets {
                    let bets: Vec<Bet> = stakes.iter().map(|(&k, &a)| Bet::new(k, a)).collect();
                    assert_eq!(
                        settle(&bets, &result, paytable).unwrap(),
                        record.settlements[player]
                    );
                    kinds.extend(stakes.keys().copied());
                    settled += bets.len();
                }
            }
            Event::BetsAccepted {
                player,
                bets,
                raised: r,
                ..
            } => {
                raised += r.len();
                *balances.entry(player.clone()).or_default() -=
                    bets.iter().map(|(_, a)| a).sum::<i64>();
            }
            Event::BetsCleared {
                player, refunded, ..
            } => {
                *balances.entry(player.clone()).or_default() += refunded.values().sum::<i64>();
            }
            Event::RoundVoided { refunds, .. } => {
                for (p, a) in refunds {
                    *balances.entry(p.clone()).or_default() += a;
                }
            }
            Event::Settled { players, .. } => {
                for (p, list) in players {
                    *balances.entry(p.clone()).or_default() +=
                        list.iter().map(|x| x.returned).sum::<i64>();
                }
            }
            Event::Replayed { .. } => replayed += 1,
            _ => {}
        }
    }
    assert_eq!(kinds.len(), 9, "every bet kind settled: {kinds:?}");
    for (p, b) in &balances {
        assert_eq!(t.balance(p), Some(*b), "balance of {p}");
    }
    assert!(voided > 0 && corrections > 0 && raised > 0 && replayed > 0 && shoes > 1);

    // Replay the journal into a fresh table.
    let mut fresh = Table::new(table_config()).unwrap();
    let start = Instant::now();
    for (line, events) in s.journal.iter().zip(&s.events) {
        let cmd = from_journal(line);
        assert_eq!(&fresh.apply(&cmd).unwrap(), events, "replaying {line}");
    }
    let replay = start.elapsed();
    assert_eq!(fresh, t);
    println!(
        "{} commands accepted ({} refused), {} rounds ({voided} void), {settled} bets settled, {corrections} corrections, \
         {raised} raises, {replayed} retries, {shoes} shoes; apply {:.1} µs/command; replay {:.1} µs/command",
        s.journal.len(),
        s.refused,
        finished,
        s.apply_ns as f64 / 1_000.0 / (s.journal.len() + s.refused) as f64,
        replay.as_secs_f64() * 1e6 / s.journal.len() as f64,
    );
}
