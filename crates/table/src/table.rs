//! The table: a deterministic state machine over [`Command`]s.
//!
//! [`Table::apply`] is the only way to change a table. It reads no clock, no randomness
//! and no I/O: the same commands from the same [`TableConfig`] give the same state and the
//! same events, which is what lets the actor rebuild a table from its journal. A refused
//! command changes nothing: `apply` works on a copy and keeps it only on success.
//!
//! For the actor: journal every command that `apply` accepted with at least one event
//! (a `Tick` that changed nothing returns no events; a retried request returns only
//! [`Event::Replayed`] and changed nothing, so neither needs journaling, though
//! journaling them is harmless). Replaying the journal from the same [`TableConfig`]
//! rebuilds the same table. The copy costs a clone of the table per command: players'
//! answered requests share their events (`Arc`), so it stays small.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use banco_rules::shoe::{Shoe, ShoeConfig, ShoeState};
use banco_rules::{Bet, BetKind, Card, Coup, Due, settle};

use crate::book::{self, Book, PlayerContext, Stakes};
use crate::command::{CardSource, Command};
use crate::event::{Event, FinishedRound, TableSnapshot};
use crate::ledger::{Account, Entry, EntryKind, Ledger, Posted};
use crate::phase::{Correction, DealtCard, Phase, VoidRecord};
use crate::policy::{ConfigError, Pacing, TableConfig};
use crate::refusal::Refusal;
use crate::round_id::RoundId;

/// A self-limit may change at most once in this many milliseconds (seed 000: a week).
pub const SELF_LIMIT_PERIOD_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// How many answered requests (PlaceBets, ClearBets, Rebet) are remembered per player for
/// idempotency. A retry is recognised as long as the player has made fewer than this many
/// newer requests; after that the key may be reused. Refused requests are not remembered
/// (a refusal changes nothing), so a retry of one is judged afresh.
pub const REMEMBERED_REQUESTS: usize = 64;

/// The shoe in play and its count of rounds opened.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ShoeRun {
    number: u32,
    shoe: Shoe,
    hands: u32,
}

/// The current (or last finished) round.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Round {
    id: RoundId,
    shoe: u32,
    hand: u32,
    opened_at: u64,
    closed_at: Option<u64>,
    draw_at: Option<u64>,
    coup: Coup,
    cards: Vec<DealtCard>,
    corrections: Vec<Correction>,
    book: Book,
}

/// A player's consecutive settled rounds with a bet on one chance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Streak {
    /// Number of the last settled round with a bet on the chance (0: never).
    last_round: u64,
    count: u32,
    stake: i64,
}

/// An answered request, kept for idempotent retries.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Answered {
    key: String,
    fingerprint: String,
    /// Shared, so that copying the table for a command does not copy every answer.
    events: Arc<[Event]>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PlayerState {
    /// (limit, set at).
    self_limit: Option<(i64, u64)>,
    /// Stakes of the player's last settled round with bets (for Rebet).
    last_bets: Stakes,
    /// Player, Banker.
    streaks: [Streak; 2],
    answered: VecDeque<Answered>,
}

/// One table's whole state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    config: TableConfig,
    shoe: Option<ShoeRun>,
    shoes_opened: u32,
    phase: Phase,
    round: Option<Round>,
    /// Rounds settled so far (void ones not counted): numbers the progression streaks.
    settled_rounds: u64,
    ledger: Ledger,
    players: BTreeMap<String, PlayerState>,
}

fn required(field: &'static str, value: &str) -> Result<(), Refusal> {
    if value.trim().is_empty() {
        Err(Refusal::Missing { field })
    } else {
        Ok(())
    }
}

fn main_index(kind: BetKind) -> Option<usize> {
    match kind {
        BetKind::Player => Some(0),
        BetKind::Banker => Some(1),
        _ => None,
    }
}

impl Table {
    pub fn new(config: TableConfig) -> Result<Table, ConfigError> {
        config.validate()?;
        Ok(Table {
            config,
            shoe: None,
            shoes_opened: 0,
            phase: Phase::NoShoe,
            round: None,
            settled_rounds: 0,
            ledger: Ledger::default(),
            players: BTreeMap::new(),
        })
    }

    /// Applies `cmd`: its events on success; on a refusal nothing changes.
    pub fn apply(&mut self, cmd: &Command) -> Result<Vec<Event>, Refusal> {
        let mut next = self.clone();
        let events = next.step(cmd)?;
        *self = next;
        Ok(events)
    }

    pub const fn config(&self) -> &TableConfig {
        &self.config
    }

    pub const fn phase(&self) -> Phase {
        self.phase
    }

    pub fn round_id(&self) -> Option<&RoundId> {
        self.round.as_ref().map(|r| &r.id)
    }

    pub fn balance(&self, player: &str) -> i64 {
        self.ledger.balance(player)
    }

    pub const fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The player's stakes in the current round.
    pub fn stakes(&self, player: &str) -> Option<&Stakes> {
        self.round.as_ref().and_then(|r| r.book.of(player))
    }

    /// The player's self-limit, if set.
    pub fn self_limit(&self, player: &str) -> Option<i64> {
        self.players
            .get(player)
            .and_then(|p| p.self_limit)
            .map(|(l, _)| l)
    }

    pub fn shoe(&self) -> Option<&Shoe> {
        self.shoe.as_ref().map(|r| &r.shoe)
    }

    /// When a `Tick` will next change something (betting closes) or, on automated tables,
    /// when the draw may start. `None`: nothing is timed.
    pub const fn next_deadline(&self) -> Option<u64> {
        match self.phase {
            Phase::BettingOpen { closes_at, .. } => closes_at,
            Phase::BettingClosed { draw_at, .. } => draw_at,
            _ => None,
        }
    }

    /// What the next card is for while cards may be dealt (closed for bets, dealing);
    /// `None` otherwise. An automated driver deals while this is a card.
    pub fn due(&self) -> Option<Due> {
        match self.phase {
            Phase::BettingClosed { .. } | Phase::Dealing => {
                self.round.as_ref().map(|r| r.coup.due())
            }
            _ => None,
        }
    }

    /// What the console and a new subscriber see.
    pub fn snapshot(&self) -> TableSnapshot {
        let round = self.round.as_ref();
        let coup = round.map(|r| r.coup).unwrap_or_default();
        let dealing = matches!(
            self.phase,
            Phase::BettingClosed { .. } | Phase::Dealing | Phase::Result
        );
        TableSnapshot {
            table: self.config.table_id.clone(),
            phase: self.phase,
            shoe: self.shoe.as_ref().map(|s| s.number),
            shoe_state: self.shoe().map(Shoe::state),
            cards_left: self.shoe().map(Shoe::cards_left),
            round_id: round.map(|r| r.id.clone()),
            cards: round.map(|r| r.cards.clone()).unwrap_or_default(),
            due: dealing.then(|| coup.due()),
            player_total: coup.player_total(),
            banker_total: coup.banker_total(),
            bet_totals: round.map(|r| r.book.totals()).unwrap_or_default(),
        }
    }

    /// The books balance: the ledger's invariants, and bets in play hold exactly the
    /// stakes of the round under way (nothing once it is settled or voided).
    pub fn check_books(&self) -> Result<(), String> {
        self.ledger.check().map_err(|e| e.to_string())?;
        let open = match (&self.round, self.phase.round_in_progress()) {
            (Some(round), true) => round.book.total(),
            _ => 0,
        };
        if self.ledger.in_play() != open {
            return Err(format!(
                "bets in play hold {}, the open round's stakes are {open}",
                self.ledger.in_play()
            ));
        }
        Ok(())
    }

    fn step(&mut self, cmd: &Command) -> Result<Vec<Event>, Refusal> {
        match cmd {
            Command::OpenShoe { config, by, now_ms } => self.open_shoe(*config, by, *now_ms),
            Command::Burn {
                exposed,
                by,
                now_ms,
            } => self.burn(*exposed, by, *now_ms),
            Command::EndShoe { by, now_ms } => self.end_shoe(by, *now_ms),
            Command::OpenBetting { by, now_ms } => self.open_betting(by, *now_ms),
            Command::CloseBetting { by, now_ms } => {
                required("by", by)?;
                match self.phase {
                    Phase::BettingOpen { .. } => Ok(self.close_betting(*now_ms)),
                    phase => Err(Refusal::NotNow {
                        action: "close betting",
                        phase,
                    }),
                }
            }
            Command::Tick { now_ms } => Ok(match self.phase {
                Phase::BettingOpen {
                    closes_at: Some(closes_at),
                    ..
                } if *now_ms >= closes_at => self.close_betting(closes_at),
                _ => Vec::new(),
            }),
            Command::Deal { player, now_ms } => self.player_deal(player, *now_ms),
            Command::DealCard {
                card,
                source,
                now_ms,
            } => self.deal_card(*card, *source, *now_ms),
            Command::UndoLastCard { reason, by, now_ms } => self.undo(reason, by, *now_ms),
            Command::ConfirmResult { by, now_ms } => self.confirm(by, *now_ms),
            Command::VoidRound { reason, by, now_ms } => self.void(reason, by, *now_ms),
            Command::PlaceBets {
                player,
                round_id,
                bets,
                key,
                now_ms,
            } => {
                let fingerprint = format!("place {round_id} {bets:?}");
                self.bet_request(player, key, fingerprint, *now_ms, |_| {
                    Ok((Some(round_id.clone()), bets.clone()))
                })
            }
            Command::ClearBets {
                player,
                key,
                now_ms,
            } => self.clear_bets(player, key, *now_ms),
            Command::Rebet {
                player,
                key,
                now_ms,
            } => self.bet_request(player, key, "rebet".to_owned(), *now_ms, |table| {
                let last = table
                    .players
                    .get(player)
                    .map(|p| &p.last_bets)
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| Refusal::NoPreviousBets {
                        player: player.clone(),
                    })?;
                Ok((None, last.iter().map(|(&k, &a)| (k, a)).collect()))
            }),
            Command::SetSelfLimit {
                player,
                max_bet_minor,
                now_ms,
            } => self.set_self_limit(player, *max_bet_minor, *now_ms),
            Command::Deposit {
                player,
                amount,
                key,
                ..
            } => self.transfer_external(player, *amount, key, EntryKind::Deposit),
            Command::Withdraw {
                player,
                amount,
                key,
                ..
            } => self.transfer_external(player, *amount, key, EntryKind::Withdrawal),
        }
    }

    // ----- shoe ------------------------------------------------------------------------

    fn open_shoe(&mut self, config: ShoeConfig, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("by", by)?;
        if self.phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action: "open a shoe",
                phase: self.phase,
            });
        }
        if let Some(run) = &self.shoe {
            return Err(Refusal::ShoeInPlay { shoe: run.number });
        }
        let shoe = Shoe::new(config)?;
        self.shoes_opened += 1;
        let number = self.shoes_opened;
        self.shoe = Some(ShoeRun {
            number,
            shoe,
            hands: 0,
        });
        self.phase = Phase::Idle;
        Ok(vec![Event::ShoeOpened {
            shoe: number,
            config,
            by: by.to_owned(),
            at: now,
        }])
    }

    fn burn(&mut self, exposed: Card, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("by", by)?;
        let phase = self.phase;
        let run = self
            .shoe
            .as_mut()
            .ok_or(Refusal::NoShoe { action: "burn" })?;
        if phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action: "burn",
                phase,
            });
        }
        let burn = run.shoe.burn(exposed)?;
        Ok(vec![Event::Burned {
            shoe: run.number,
            burn,
            by: by.to_owned(),
            at: now,
        }])
    }

    fn end_shoe(&mut self, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("by", by)?;
        let action = "end the shoe";
        if self.phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        let run = self.shoe.take().ok_or(Refusal::NoShoe { action })?;
        self.phase = Phase::NoShoe;
        Ok(vec![Event::ShoeEnded {
            shoe: run.number,
            by: Some(by.to_owned()),
            at: now,
        }])
    }

    /// After a round: the shoe's hand is over if any card of it was dealt.
    fn finish_hand(&mut self, now: u64) -> Result<Vec<Event>, Refusal> {
        let Some(run) = self.shoe.as_mut() else {
            return Ok(Vec::new());
        };
        if run.shoe.hand_cards().is_empty() {
            return Ok(Vec::new());
        }
        Ok(match run.shoe.hand_finished()? {
            ShoeState::LastHand => vec![Event::LastHand { shoe: run.number }],
            ShoeState::Ended => {
                let number = run.number;
                self.shoe = None;
                vec![Event::ShoeEnded {
                    shoe: number,
                    by: None,
                    at: now,
                }]
            }
            _ => Vec::new(),
        })
    }

    // ----- round -----------------------------------------------------------------------

    fn open_betting(&mut self, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("by", by)?;
        let action = "open betting";
        let run = self.shoe.as_mut().ok_or(Refusal::NoShoe { action })?;
        if !matches!(self.phase, Phase::Idle | Phase::Settled | Phase::Voided) {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        match run.shoe.state() {
            ShoeState::AwaitingBurn => {
                return Err(Refusal::BurnPending {
                    action,
                    shoe: run.number,
                });
            }
            ShoeState::Ended => {
                return Err(Refusal::ShoeEnded {
                    action,
                    shoe: run.number,
                });
            }
            ShoeState::InPlay | ShoeState::CutCardOut | ShoeState::LastHand => {}
        }
        run.hands += 1;
        let id = RoundId::new(&self.config.table_id, run.number, run.hands);
        let policy = &self.config.policy;
        let closes_at = match self.config.pacing {
            Pacing::Live => policy.live_betting_ms.map(|d| now.saturating_add(d)),
            Pacing::AutomatedMultiplayer => Some(now.saturating_add(policy.automated_betting_ms)),
            Pacing::SinglePlayer => None,
        };
        let last_hand = run.shoe.state() == ShoeState::LastHand;
        self.round = Some(Round {
            id: id.clone(),
            shoe: run.number,
            hand: run.hands,
            opened_at: now,
            closed_at: None,
            draw_at: None,
            coup: Coup::new(),
            cards: Vec::new(),
            corrections: Vec::new(),
            book: Book::default(),
        });
        // The previous round's entries are in its FinishedRound.
        self.ledger.start_round();
        self.phase = Phase::BettingOpen {
            opened_at: now,
            closes_at,
        };
        Ok(vec![Event::BettingOpened {
            round_id: id,
            opened_at: now,
            closes_at,
            last_hand,
        }])
    }

    /// Closes betting at `closed_at`. The phase must be `BettingOpen` and a round exists.
    fn close_betting(&mut self, closed_at: u64) -> Vec<Event> {
        let draw_at = match self.config.pacing {
            Pacing::AutomatedMultiplayer => {
                Some(closed_at.saturating_add(self.config.policy.automated_draw_delay_ms))
            }
            Pacing::Live | Pacing::SinglePlayer => None,
        };
        self.phase = Phase::BettingClosed { closed_at, draw_at };
        let Some(round) = self.round.as_mut() else {
            return Vec::new();
        };
        round.closed_at = Some(closed_at);
        round.draw_at = draw_at;
        vec![Event::BettingClosed {
            round_id: round.id.clone(),
            closed_at,
            draw_at,
        }]
    }

    fn player_deal(&mut self, player: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        let action = "deal";
        if self.config.pacing != Pacing::SinglePlayer {
            return Err(Refusal::WrongPacing {
                action,
                pacing: self.config.pacing,
            });
        }
        if !matches!(self.phase, Phase::BettingOpen { .. }) {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        if self.stakes(player).is_none() {
            return Err(Refusal::NoBets {
                player: player.to_owned(),
            });
        }
        Ok(self.close_betting(now))
    }

    fn deal_card(
        &mut self,
        card: Card,
        source: CardSource,
        now: u64,
    ) -> Result<Vec<Event>, Refusal> {
        let phase = self.phase;
        match phase {
            Phase::BettingOpen { .. } => return Err(Refusal::BettingStillOpen { card }),
            Phase::BettingClosed {
                draw_at: Some(draw_at),
                ..
            } if now < draw_at => {
                return Err(Refusal::BeforeDraw {
                    card,
                    draw_at,
                    now_ms: now,
                });
            }
            Phase::BettingClosed { .. } | Phase::Dealing | Phase::Result => {}
            Phase::NoShoe | Phase::Idle | Phase::Settled | Phase::Voided => {
                return Err(Refusal::NotNow {
                    action: "deal a card",
                    phase,
                });
            }
        }
        let action = "deal a card";
        let (Some(round), Some(run)) = (self.round.as_mut(), self.shoe.as_mut()) else {
            return Err(Refusal::NoShoe { action });
        };
        let to = round.coup.due().side();
        let mut coup = round.coup;
        let due_next = coup.deal(card)?;
        let before = run.shoe.state();
        let after = run.shoe.deal(card)?;
        round.coup = coup;
        let Some(to) = to else {
            // `coup.deal` refuses a card when none is due, so a side was due.
            return Err(Refusal::NotNow { action, phase });
        };
        round.cards.push(DealtCard {
            card,
            to,
            source,
            at: now,
        });
        let mut events = vec![Event::CardDealt {
            round_id: round.id.clone(),
            card,
            to,
            due_next,
            source,
            at: now,
        }];
        if before == ShoeState::InPlay && after == ShoeState::CutCardOut {
            events.push(Event::CutCardOut {
                round_id: round.id.clone(),
            });
        }
        match coup.result() {
            Some(result) => {
                self.phase = Phase::Result;
                events.push(Event::Result {
                    round_id: round.id.clone(),
                    result,
                });
            }
            None => self.phase = Phase::Dealing,
        }
        Ok(events)
    }

    fn undo(&mut self, reason: &str, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        match self.phase {
            Phase::Dealing | Phase::Result => {}
            Phase::BettingClosed { .. } => return Err(Refusal::NothingToUndo),
            phase => {
                return Err(Refusal::NotNow {
                    action: "take a card back",
                    phase,
                });
            }
        }
        required("reason", reason)?;
        required("by", by)?;
        let action = "take a card back";
        let (Some(round), Some(run)) = (self.round.as_mut(), self.shoe.as_mut()) else {
            return Err(Refusal::NoShoe { action });
        };
        let card = round.coup.undo().ok_or(Refusal::NothingToUndo)?;
        run.shoe.undo(card)?;
        round.cards.pop();
        round.corrections.push(Correction {
            card,
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
        });
        self.phase = if round.coup.cards_dealt() == 0 {
            Phase::BettingClosed {
                closed_at: round.closed_at.unwrap_or(now),
                draw_at: round.draw_at,
            }
        } else {
            Phase::Dealing
        };
        Ok(vec![Event::CardUndone {
            round_id: round.id.clone(),
            card,
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
            due_next: round.coup.due(),
        }])
    }

    fn confirm(&mut self, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("by", by)?;
        let action = "confirm the result";
        let phase = self.phase;
        let round = self.round.take().ok_or(Refusal::NotNow { action, phase })?;
        let (Phase::Result, Some(result)) = (phase, round.coup.result()) else {
            return Err(Refusal::NotNow { action, phase });
        };
        let paytable = &self.config.policy.paytable;
        let mut settled = BTreeMap::new();
        for (player, stakes) in round.book.players() {
            let bets: Vec<Bet> = stakes.iter().map(|(&k, &s)| Bet::new(k, s)).collect();
            settled.insert(player.clone(), settle(&bets, &result, paytable)?);
        }
        let mut house_net = 0i64;
        for (player, settlements) in &settled {
            let to = Some(Account::Player(player.clone()));
            for s in settlements {
                let key = |what: &str| format!("{what}:{}:{player}:{}", round.id, s.kind);
                let entry = |key: String, kind, from, to: Option<Account>, amount| Entry {
                    key,
                    kind,
                    from: Some(from),
                    to,
                    amount,
                    round_id: Some(round.id.clone()),
                };
                if s.returned > 0 {
                    self.ledger.post(entry(
                        key("return"),
                        EntryKind::Payout,
                        Account::InPlay,
                        to.clone(),
                        s.stake,
                    ))?;
                } else {
                    self.ledger.post(entry(
                        key("loss"),
                        EntryKind::Loss,
                        Account::InPlay,
                        Some(Account::House),
                        s.stake,
                    ))?;
                    house_net += s.stake;
                }
                if s.winnings > 0 {
                    self.ledger.post(entry(
                        key("win"),
                        EntryKind::Payout,
                        Account::House,
                        to.clone(),
                        s.winnings,
                    ))?;
                    house_net -= s.winnings;
                }
            }
        }
        self.settled_rounds += 1;
        let n = self.settled_rounds;
        for (player, stakes) in round.book.players() {
            let state = self.players.entry(player.clone()).or_default();
            state.last_bets = stakes.clone();
            for (&kind, &stake) in stakes {
                if let Some(i) = main_index(kind) {
                    let s = &mut state.streaks[i];
                    let count = if s.last_round + 1 == n {
                        s.count + 1
                    } else {
                        1
                    };
                    *s = Streak {
                        last_round: n,
                        count,
                        stake,
                    };
                }
            }
        }
        let mut events = vec![Event::Settled {
            round_id: round.id.clone(),
            players: settled.clone(),
            house_net,
            at: now,
        }];
        events.extend(self.balance_events(round.book.players().keys()));
        events.push(self.finished(&round, None, settled, now));
        self.round = Some(round);
        self.phase = Phase::Settled;
        events.extend(self.finish_hand(now)?);
        Ok(events)
    }

    fn void(&mut self, reason: &str, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        let action = "void the round";
        if !self.phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        required("reason", reason)?;
        required("by", by)?;
        let phase = self.phase;
        let round = self.round.take().ok_or(Refusal::NotNow { action, phase })?;
        let mut refunds = BTreeMap::new();
        for (player, stakes) in round.book.players() {
            for (&kind, &amount) in stakes {
                self.ledger.post(Entry {
                    key: format!("void:{}:{player}:{kind}", round.id),
                    kind: EntryKind::Refund,
                    from: Some(Account::InPlay),
                    to: Some(Account::Player(player.clone())),
                    amount,
                    round_id: Some(round.id.clone()),
                })?;
            }
            refunds.insert(player.clone(), stakes.values().sum::<i64>());
        }
        let void = VoidRecord {
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
        };
        let mut events = vec![Event::RoundVoided {
            round_id: round.id.clone(),
            void: void.clone(),
            refunds,
        }];
        events.extend(self.balance_events(round.book.players().keys()));
        events.push(self.finished(&round, Some(void), BTreeMap::new(), now));
        self.round = Some(round);
        self.phase = Phase::Voided;
        events.extend(self.finish_hand(now)?);
        Ok(events)
    }

    fn finished(
        &self,
        round: &Round,
        void: Option<VoidRecord>,
        settlements: BTreeMap<String, Vec<banco_rules::Settlement>>,
        now: u64,
    ) -> Event {
        Event::RoundFinished(Box::new(FinishedRound {
            round_id: round.id.clone(),
            table: self.config.table_id.clone(),
            shoe: round.shoe,
            hand: round.hand,
            betting_opened_at: round.opened_at,
            betting_closed_at: round.closed_at,
            cards: round.cards.clone(),
            corrections: round.corrections.clone(),
            void,
            result: round.coup.result(),
            bets: round.book.players().clone(),
            settlements,
            entries: self.ledger.round_entries().to_vec(),
            finished_at: now,
        }))
    }

    fn balance_events<'a>(&self, players: impl Iterator<Item = &'a String>) -> Vec<Event> {
        players
            .map(|p| Event::BalanceChanged {
                player: p.clone(),
                balance: self.ledger.balance(p),
            })
            .collect()
    }

    // ----- bets ------------------------------------------------------------------------

    /// The original answer to a retried request, or `None` for a new key.
    fn answered(
        &self,
        player: &str,
        key: &str,
        fingerprint: &str,
    ) -> Result<Option<Vec<Event>>, Refusal> {
        let Some(earlier) = self
            .players
            .get(player)
            .and_then(|p| p.answered.iter().find(|a| a.key == key))
        else {
            return Ok(None);
        };
        if earlier.fingerprint != fingerprint {
            return Err(Refusal::KeyReused {
                player: player.to_owned(),
                key: key.to_owned(),
            });
        }
        Ok(Some(vec![Event::Replayed {
            player: player.to_owned(),
            key: key.to_owned(),
            original: earlier.events.to_vec(),
        }]))
    }

    fn remember(&mut self, player: &str, key: &str, fingerprint: String, events: &[Event]) {
        let state = self.players.entry(player.to_owned()).or_default();
        if state.answered.len() >= REMEMBERED_REQUESTS {
            state.answered.pop_front();
        }
        state.answered.push_back(Answered {
            key: key.to_owned(),
            fingerprint,
            events: events.into(),
        });
    }

    /// The open round, if bets are taken at `now` (judged by the server clock, whether or
    /// not a `Tick` has closed betting yet).
    fn open_round(&self, now: u64) -> Result<&Round, Refusal> {
        let Phase::BettingOpen { closes_at, .. } = self.phase else {
            return Err(Refusal::BettingNotOpen { phase: self.phase });
        };
        if let Some(closes_at) = closes_at
            && now >= closes_at
        {
            return Err(Refusal::BettingClosedAt {
                closes_at,
                now_ms: now,
            });
        }
        self.round
            .as_ref()
            .ok_or(Refusal::BettingNotOpen { phase: self.phase })
    }

    /// PlaceBets and Rebet: `bets_of` gives the round the request names (if any) and the
    /// positions to add.
    fn bet_request(
        &mut self,
        player: &str,
        key: &str,
        fingerprint: String,
        now: u64,
        bets_of: impl FnOnce(&Table) -> Result<(Option<RoundId>, Vec<(BetKind, i64)>), Refusal>,
    ) -> Result<Vec<Event>, Refusal> {
        required("player", player)?;
        required("key", key)?;
        if let Some(events) = self.answered(player, key, &fingerprint)? {
            return Ok(events);
        }
        let round = self.open_round(now)?;
        let (asked_round, request) = bets_of(self)?;
        if let Some(asked) = asked_round
            && asked != round.id
        {
            return Err(Refusal::WrongRound {
                asked,
                current: round.id.clone(),
            });
        }
        if request.is_empty() {
            return Err(Refusal::NoBetsGiven);
        }
        let state = self.players.get(player);
        let cap_on = self.config.policy.progression_cap_on(self.config.pacing);
        let capped_previous = [0, 1].map(|i| {
            let s = state.map(|p| p.streaks[i]).unwrap_or_default();
            (cap_on && s.last_round == self.settled_rounds && s.last_round > 0 && s.count >= 3)
                .then_some(s.stake)
        });
        let context = PlayerContext {
            existing: round.book.of(player),
            self_limit: state.and_then(|p| p.self_limit).map(|(l, _)| l),
            capped_previous,
        };
        let accepted =
            book::check_bets(&self.config.policy, &request, context).map_err(|reasons| {
                Refusal::Bets {
                    player: player.to_owned(),
                    reasons,
                }
            })?;
        let balance = self.ledger.balance(player);
        if accepted.total() > balance {
            return Err(Refusal::OverBalance {
                player: player.to_owned(),
                needed: accepted.total(),
                balance,
            });
        }
        let round_id = round.id.clone();
        for &(kind, amount) in &accepted.bets {
            self.ledger.post(Entry {
                key: format!("stake:{round_id}:{player}:{key}:{kind}"),
                kind: EntryKind::Stake,
                from: Some(Account::Player(player.to_owned())),
                to: Some(Account::InPlay),
                amount,
                round_id: Some(round_id.clone()),
            })?;
        }
        let round = self
            .round
            .as_mut()
            .ok_or(Refusal::BettingNotOpen { phase: self.phase })?;
        round.book.add(player, &accepted.bets);
        let events = vec![
            Event::BetsAccepted {
                player: player.to_owned(),
                round_id: round_id.clone(),
                key: key.to_owned(),
                bets: accepted.bets,
                raised: accepted.raised,
                stakes: round.book.of(player).cloned().unwrap_or_default(),
            },
            Event::BalanceChanged {
                player: player.to_owned(),
                balance: self.ledger.balance(player),
            },
            Event::BetTotals {
                round_id,
                totals: round.book.totals(),
            },
        ];
        self.remember(player, key, fingerprint, &events);
        Ok(events)
    }

    fn clear_bets(&mut self, player: &str, key: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("player", player)?;
        required("key", key)?;
        let fingerprint = "clear".to_owned();
        if let Some(events) = self.answered(player, key, &fingerprint)? {
            return Ok(events);
        }
        let round_id = self.open_round(now)?.id.clone();
        let round = self
            .round
            .as_mut()
            .ok_or(Refusal::BettingNotOpen { phase: self.phase })?;
        let refunded = round.book.clear(player).ok_or_else(|| Refusal::NoBets {
            player: player.to_owned(),
        })?;
        let totals = round.book.totals();
        for (&kind, &amount) in &refunded {
            self.ledger.post(Entry {
                key: format!("clear:{round_id}:{player}:{key}:{kind}"),
                kind: EntryKind::Refund,
                from: Some(Account::InPlay),
                to: Some(Account::Player(player.to_owned())),
                amount,
                round_id: Some(round_id.clone()),
            })?;
        }
        let events = vec![
            Event::BetsCleared {
                player: player.to_owned(),
                round_id: round_id.clone(),
                key: key.to_owned(),
                refunded,
            },
            Event::BalanceChanged {
                player: player.to_owned(),
                balance: self.ledger.balance(player),
            },
            Event::BetTotals { round_id, totals },
        ];
        self.remember(player, key, fingerprint, &events);
        Ok(events)
    }

    fn set_self_limit(&mut self, player: &str, max: i64, now: u64) -> Result<Vec<Event>, Refusal> {
        required("player", player)?;
        if max <= 0 {
            return Err(Refusal::SelfLimitNotPositive { asked: max });
        }
        let state = self.players.entry(player.to_owned()).or_default();
        if let Some((current, set_at)) = state.self_limit {
            if max >= current {
                return Err(Refusal::SelfLimitNotLower {
                    asked: max,
                    current,
                });
            }
            let next_at = set_at.saturating_add(SELF_LIMIT_PERIOD_MS);
            if now < next_at {
                return Err(Refusal::SelfLimitTooSoon {
                    asked: max,
                    set_at,
                    next_at,
                });
            }
        }
        state.self_limit = Some((max, now));
        Ok(vec![Event::SelfLimitSet {
            player: player.to_owned(),
            max_bet_minor: max,
            at: now,
        }])
    }

    // ----- cashier ---------------------------------------------------------------------

    fn transfer_external(
        &mut self,
        player: &str,
        amount: i64,
        key: &str,
        kind: EntryKind,
    ) -> Result<Vec<Event>, Refusal> {
        required("player", player)?;
        required("key", key)?;
        let what = match kind {
            EntryKind::Deposit => "deposit",
            _ => "withdrawal",
        };
        if amount <= 0 {
            return Err(Refusal::NotPositive { what, amount });
        }
        let account = Some(Account::Player(player.to_owned()));
        let (from, to) = match kind {
            EntryKind::Deposit => (None, account),
            _ => (account, None),
        };
        let posted = self.ledger.post(Entry {
            key: key.to_owned(),
            kind,
            from,
            to,
            amount,
            round_id: None,
        })?;
        let (player, key) = (player.to_owned(), key.to_owned());
        let done = match kind {
            EntryKind::Deposit => Event::Deposited {
                player: player.clone(),
                amount,
                key: key.clone(),
            },
            _ => Event::Withdrawn {
                player: player.clone(),
                amount,
                key: key.clone(),
            },
        };
        Ok(match posted {
            Posted::Duplicate => vec![Event::Replayed {
                player,
                key,
                original: vec![done],
            }],
            Posted::New => {
                let balance = self.ledger.balance(&player);
                vec![done, Event::BalanceChanged { player, balance }]
            }
        })
    }
}
