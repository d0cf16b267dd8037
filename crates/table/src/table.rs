//! The table: a deterministic state machine over [`Command`]s.
//!
//! [`Table::apply`] is the only way to change a table. It reads no clock, no randomness
//! and no I/O: the same commands from the same [`TableConfig`] give the same state and the
//! same events, which is what lets the actor rebuild a table from its journal.
//!
//! A refused command changes nothing. Every handler decides all of its refusals before
//! its first change: it checks, works out what would change (settlements, ledger entries,
//! the shoe after the hand, on copies of the few small values involved), and only then
//! changes the table, with at most one fallible step left, itself all-or-nothing
//! ([`Ledger::post_all`], or a `banco_rules` shoe or coup call that changes nothing when
//! it refuses). So `apply` never copies the table, whose size grows with its players.
//!
//! Seats and passing live in `table/seating.rs`, chat and mutes in `table/talk.rs`; each
//! player's own history ([`crate::history`]) is kept up to date by the bet, clear, settle
//! and void handlers here, so a replay rebuilds it too.
//!
//! For the actor: journal every command that `apply` accepted with at least one event
//! (a `Tick` that changed nothing returns no events; a retried request returns only
//! [`Event::Replayed`] and changed nothing, so neither needs journaling, though
//! journaling them is harmless). Replaying the journal from the same [`TableConfig`]
//! rebuilds the same table.

mod seating;
mod talk;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use banco_rules::shoe::{Shoe, ShoeConfig, ShoeState};
use banco_rules::{Bet, BetKind, Card, Coup, Due, Scoreboard, Settlement, settle};
use banco_wallet::{CreditKind, TxId};

use crate::book::{self, Book, PlayerContext, Stakes};
use crate::command::{CardSource, Command, DebitAnswer, DebitOutcome, WalletAck};
use crate::event::{
    BalanceReason, BetRefusal, BurnRecord, Event, FinishedRound, Placement, RoundTotals,
    ShoeOpening, TableSnapshot,
};
use crate::history::{History, HistoryEntry};
use crate::ledger::{Account, Entry, EntryKind, Ledger};
use crate::phase::{Correction, DealtCard, Phase, VoidRecord};
use crate::policy::{ConfigError, Pacing, TableConfig};
use crate::refusal::Refusal;
use crate::round_id::RoundId;
use crate::wallet_book::{self, Owed, OwedOp, PendingRequest, TxPurpose, WalletBook};

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
    /// How the shoe was put in play, told in its first round's record.
    opening: ShoeOpening,
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
    /// Seated players who passed this round.
    passed: BTreeSet<String>,
    /// Who opened betting (the croupier at the table, or `auto`).
    opened_by: String,
    /// Bet requests each player has had decided on this round, numbering their debits.
    requests: BTreeMap<String, u32>,
    /// Clears each player made on this round, numbering their refunds.
    clears: BTreeMap<String, u32>,
    /// The debits taken for each accepted stake, by player and position: what the
    /// position's settlement or refund credit settles.
    debits: BTreeMap<(String, BetKind), Vec<TxId>>,
    /// Each player's accepted stakes as placed (see [`FinishedRound::placements`]).
    placements: BTreeMap<String, Vec<Placement>>,
    /// The cut card came out during this hand.
    cut_card: bool,
    /// Set on the shoe's first round.
    shoe_opening: Option<ShoeOpening>,
    /// What the round moved, once settled or voided.
    totals: Option<RoundTotals>,
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
    events: Vec<Event>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PlayerState {
    /// Stakes of the player's last settled round with bets (for Rebet).
    last_bets: Stakes,
    /// Player, Banker.
    streaks: [Streak; 2],
    answered: VecDeque<Answered>,
    /// The player's recent rounds with a stake.
    history: History,
    /// Times of the player's last chat lines (at most the policy's burst), oldest first.
    chat_times: VecDeque<u64>,
    mute: Option<Mute>,
}

/// A mute of a player's chat.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mute {
    until: u64,
    reason: String,
}

/// What a PlaceBets or a Rebet asks for.
struct BetRequest<'a> {
    /// The round the request names (a Rebet names none: it is for the open round).
    round: Option<&'a RoundId>,
    bets: Vec<(BetKind, i64)>,
}

/// The cards of a complete coup and every player's settlements of it.
pub type PendingSettlement = (Vec<Card>, BTreeMap<String, Vec<Settlement>>);

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
    /// What the table asked of the players' wallet and has not heard back.
    wallet: WalletBook,
    players: BTreeMap<String, PlayerState>,
    /// The results of the shoe in play (or of the last one, until a new shoe opens):
    /// settled rounds only, a voided round has no result.
    scoreboard: Scoreboard,
    /// Who sits at each seat (index 0 is seat 1); empty on a table without seats.
    seats: Vec<Option<String>>,
    /// The chat's blocked words, lowercased.
    blocked_words: BTreeSet<String>,
}

fn required(field: &'static str, value: &str) -> Result<(), Refusal> {
    if value.trim().is_empty() {
        Err(Refusal::Missing { field })
    } else {
        Ok(())
    }
}

impl Table {
    /// The number the next shoe opened will have (1 for the table's first).
    pub const fn next_shoe_number(&self) -> u32 {
        self.shoes_opened + 1
    }

    pub fn new(config: TableConfig) -> Result<Table, ConfigError> {
        config.validate()?;
        let seats = vec![None; usize::from(config.policy.seats)];
        let blocked_words = crate::chat::blocked_set(&config.policy.chat.blocked_words);
        Ok(Table {
            seats,
            blocked_words,
            config,
            shoe: None,
            shoes_opened: 0,
            phase: Phase::NoShoe,
            round: None,
            settled_rounds: 0,
            ledger: Ledger::default(),
            wallet: WalletBook::default(),
            players: BTreeMap::new(),
            scoreboard: Scoreboard::new(),
        })
    }

    /// Applies `cmd`: its events on success; on a refusal nothing changes.
    pub fn apply(&mut self, cmd: &Command) -> Result<Vec<Event>, Refusal> {
        match cmd {
            Command::OpenShoe {
                config,
                by,
                now_ms,
                commitment,
            } => self.open_shoe(*config, commitment.clone(), by, *now_ms),
            Command::Burn {
                exposed,
                by,
                now_ms,
            } => self.burn(*exposed, by, *now_ms),
            Command::EndShoe { reason, by, now_ms } => self.end_shoe(reason, by, *now_ms),
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
            Command::ConfirmResult {
                round_id,
                by,
                now_ms,
            } => self.confirm(round_id, by, *now_ms),
            Command::VoidRound {
                round_id,
                reason,
                by,
                now_ms,
            } => self.void(round_id, reason, by, *now_ms),
            Command::PlaceBets {
                player,
                round_id,
                bets,
                key,
                now_ms,
            } => {
                let fingerprint = format!("place {round_id} {bets:?}");
                let request = Ok(BetRequest {
                    round: Some(round_id),
                    bets: bets.clone(),
                });
                self.bet_request(player, key, fingerprint, *now_ms, request)
            }
            Command::ClearBets {
                player,
                round_id,
                key,
                now_ms,
            } => self.clear_bets(player, round_id.as_ref(), key, *now_ms),
            Command::Rebet {
                player,
                round_id,
                key,
                now_ms,
            } => {
                let request = self
                    .players
                    .get(player)
                    .map(|p| &p.last_bets)
                    .filter(|b| !b.is_empty())
                    .map(|last| BetRequest {
                        round: round_id.as_ref(),
                        bets: last.iter().map(|(&k, &a)| (k, a)).collect(),
                    })
                    .ok_or_else(|| Refusal::NoPreviousBets {
                        player: player.clone(),
                    });
                let fingerprint = match round_id {
                    Some(round_id) => format!("rebet {round_id}"),
                    None => "rebet".to_owned(),
                };
                self.bet_request(player, key, fingerprint, *now_ms, request)
            }
            Command::WalletDebited {
                player,
                key,
                outcome,
                now_ms,
            } => self.wallet_debited(player, key, outcome, *now_ms),
            Command::WalletDebitedMany { answers, now_ms } => {
                Ok(self.wallet_debited_many(answers, *now_ms))
            }
            Command::WalletAcked { acks, now_ms: _ } => Ok(self.wallet_acked(acks)),
            Command::WalletChanged {
                player,
                balance,
                delta,
                reason: _,
                version,
                now_ms: _,
            } => {
                required("player", player)?;
                let before = self.wallet.balance(player);
                let shown = self.wallet.set_balance(player, *balance, *version);
                // Told an older balance than it shows, or the same: nothing to show.
                if before == Some(shown) {
                    return Ok(Vec::new());
                }
                // The change of what this table last showed: the wallet's own delta holds
                // only if the table had heard of every change before it (a retried or
                // reordered notice, a change missed while away).
                let delta = before.map_or(*delta, |before| shown - before);
                Ok(vec![self.balance_event(
                    player,
                    shown,
                    delta,
                    BalanceReason::Elsewhere,
                )])
            }
            Command::TakeSeat {
                player,
                seat,
                now_ms: _,
            } => self.take_seat(player, *seat),
            Command::LeaveSeat { player, now_ms } => self.leave_seat(player, *now_ms),
            Command::PassHand {
                player,
                round_id,
                now_ms,
            } => self.pass_hand(player, round_id, *now_ms),
            Command::Chat {
                player,
                text,
                now_ms,
            } => self.chat(player, text, *now_ms),
            Command::MutePlayer {
                player,
                minutes,
                reason,
                by,
                now_ms,
            } => self.mute(player, *minutes, reason, by, *now_ms),
        }
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

    /// The player's available balance as the wallet last told this table, if it has.
    pub fn balance(&self, player: &str) -> Option<i64> {
        self.wallet.balance(player)
    }

    /// What the table asked of the wallet and has not heard back: pending bet requests and
    /// owed credits and cancels (the actor sends them; `banco audit reconcile` shows them).
    pub const fn wallet(&self) -> &WalletBook {
        &self.wallet
    }

    pub const fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The player's stakes in the current round.
    pub fn stakes(&self, player: &str) -> Option<&Stakes> {
        self.round.as_ref().and_then(|r| r.book.of(player))
    }

    /// The player's stakes in the round under way (betting open, closed, dealing, result):
    /// what the ledger holds in play for them. Empty between rounds.
    pub fn stakes_in_play(&self, player: &str) -> Stakes {
        self.round
            .as_ref()
            .filter(|_| self.phase.round_in_progress())
            .and_then(|r| r.book.of(player))
            .cloned()
            .unwrap_or_default()
    }

    /// The results of the shoe in play (or of the last one, until a new shoe opens).
    pub const fn scoreboard(&self) -> &Scoreboard {
        &self.scoreboard
    }

    /// The player's rounds with a stake (the last [`crate::HISTORY_PER_PLAYER`] finished
    /// ones and the round under way), newest first, strictly older than `before` when
    /// given, at most `limit`.
    pub fn history(
        &self,
        player: &str,
        before: Option<&RoundId>,
        limit: usize,
    ) -> Vec<HistoryEntry> {
        self.players
            .get(player)
            .map(|p| p.history.page(before, limit))
            .unwrap_or_default()
    }

    /// What the player has staked on the round under way.
    fn in_play_of(&self, player: &str) -> i64 {
        self.round
            .as_ref()
            .filter(|_| self.phase.round_in_progress())
            .and_then(|r| r.book.of(player))
            .map_or(0, |s| s.values().sum())
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

    /// What the console and a new subscriber see. The last round of an ended shoe stays
    /// on show until the next shoe opens, which starts with no round.
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
            opened_at: round
                .filter(|_| self.phase.round_in_progress())
                .map(|r| r.opened_at),
            closes_at: match self.phase {
                Phase::BettingOpen { closes_at, .. } => closes_at,
                _ => None,
            },
            cards: round.map(|r| r.cards.clone()).unwrap_or_default(),
            due: dealing.then(|| coup.due()),
            player_total: coup.player_total(),
            banker_total: coup.banker_total(),
            bet_totals: round.map(|r| r.book.totals()).unwrap_or_default(),
            bettors: round.map_or(0, |r| r.book.bettors()),
            results: self.scoreboard.results().to_vec(),
            burn: self
                .shoe
                .as_ref()
                .and_then(|run| run.opening.burn.as_ref())
                .map(|b| banco_rules::shoe::Burn {
                    exposed: b.exposed,
                    face_down: b.face_down,
                }),
            totals: round.and_then(|r| r.totals),
        }
    }

    /// The books balance: the ledger's invariants, and bets in play hold exactly the
    /// stakes of the round under way (nothing once it is settled or voided), whose
    /// published totals agree with them.
    pub fn check_books(&self) -> Result<(), String> {
        self.ledger.check().map_err(|e| e.to_string())?;
        if let Some(round) = &self.round {
            round.book.check_totals()?;
        }
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

    // ----- shoe ------------------------------------------------------------------------

    fn open_shoe(
        &mut self,
        config: ShoeConfig,
        commitment: Option<String>,
        by: &str,
        now: u64,
    ) -> Result<Vec<Event>, Refusal> {
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
            opening: ShoeOpening {
                config,
                paytable: self.config.policy.paytable.clone(),
                opened_by: by.to_owned(),
                opened_at: now,
                burn: None,
                commitment: commitment.clone(),
            },
        });
        self.phase = Phase::Idle;
        self.scoreboard = Scoreboard::new();
        // The last round of the shoe before is over and in its FinishedRound: nothing
        // (a croupier's command, a late bet, the console) is to find it now.
        self.round = None;
        Ok(vec![Event::ShoeOpened {
            shoe: number,
            config,
            by: by.to_owned(),
            at: now,
            commitment,
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
        run.opening.burn = Some(BurnRecord {
            exposed: burn.exposed,
            face_down: burn.face_down,
            by: by.to_owned(),
            at: now,
        });
        Ok(vec![Event::Burned {
            shoe: run.number,
            burn,
            by: by.to_owned(),
            at: now,
        }])
    }

    fn end_shoe(&mut self, reason: &str, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("reason", reason)?;
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
            reason: Some(reason.to_owned()),
            at: now,
            shuffle_key: None,
        }])
    }

    /// After a round, the shoe's hand is over if any card of it was dealt: the shoe as it
    /// will be then, worked out on a copy so that the round's end can still be refused.
    /// `None`: no hand to finish.
    fn finished_hand(&self) -> Result<Option<Shoe>, Refusal> {
        let Some(run) = self
            .shoe
            .as_ref()
            .filter(|r| !r.shoe.hand_cards().is_empty())
        else {
            return Ok(None);
        };
        let mut shoe = run.shoe.clone();
        shoe.hand_finished()?;
        Ok(Some(shoe))
    }

    /// Puts the shoe from [`Table::finished_hand`] in play (or out, once it has ended).
    fn finish_hand(&mut self, finished: Option<Shoe>, now: u64) -> Vec<Event> {
        let (Some(shoe), Some(run)) = (finished, self.shoe.as_mut()) else {
            return Vec::new();
        };
        let number = run.number;
        match shoe.state() {
            ShoeState::LastHand => {
                run.shoe = shoe;
                vec![Event::LastHand { shoe: number }]
            }
            ShoeState::Ended => {
                self.shoe = None;
                vec![Event::ShoeEnded {
                    shoe: number,
                    by: None,
                    reason: None,
                    at: now,
                    shuffle_key: None,
                }]
            }
            _ => {
                run.shoe = shoe;
                Vec::new()
            }
        }
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
            passed: BTreeSet::new(),
            requests: BTreeMap::new(),
            clears: BTreeMap::new(),
            debits: BTreeMap::new(),
            placements: BTreeMap::new(),
            opened_by: by.to_owned(),
            cut_card: false,
            shoe_opening: (run.hands == 1).then(|| run.opening.clone()),
            totals: None,
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
        let Some(to) = to else {
            // `coup.deal` refuses a card when none is due, so a side was due.
            return Err(Refusal::NotNow { action, phase });
        };
        let before = run.shoe.state();
        // The last check, and the first change: the shoe refuses a card without changing.
        let after = run.shoe.deal(card)?;
        round.coup = coup;
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
            round.cut_card = true;
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
        let mut coup = round.coup;
        let card = coup.undo().ok_or(Refusal::NothingToUndo)?;
        // The last check, and the first change.
        run.shoe.undo(card)?;
        round.cut_card = run.shoe.state() == ShoeState::CutCardOut;
        round.coup = coup;
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

    fn confirm(&mut self, asked: &RoundId, by: &str, now: u64) -> Result<Vec<Event>, Refusal> {
        required("by", by)?;
        let action = "confirm the result";
        self.check_round_in_play(action, asked)?;
        let phase = self.phase;
        let (Phase::Result, Some(round)) = (phase, self.round.as_ref()) else {
            return Err(Refusal::NotNow { action, phase });
        };
        let settled = self.settle_round(round)?;
        let winner = round.coup.result().map(|r| r.winner());
        let (entries, house_net) = settlement_entries(&round.id, &settled);
        let credits = self.settlement_credits(round, &settled);
        let shoe = self.finished_hand()?;
        self.ledger.post_all(entries)?;
        // Nothing below can fail.
        self.settled_rounds += 1;
        let n = self.settled_rounds;
        let result = round.coup.result();
        for (player, stakes) in round.book.players() {
            let state = self.players.entry(player.clone()).or_default();
            let mine = settled.get(player).map_or(&[][..], Vec::as_slice);
            state.history.settled(&round.id, mine, result);
            state.last_bets = stakes.clone();
            for (&kind, &stake) in stakes {
                if let Some(i) = book::main_chance(kind) {
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
        let owed: Vec<_> = credits.into_iter().map(|c| self.wallet.owe(c)).collect();
        let mut events = vec![
            Event::Settled {
                round_id: round.id.clone(),
                players: settled.clone(),
                house_net,
                at: now,
            },
            Event::WalletOwed { owed: owed.clone() },
        ];
        let totals = RoundTotals {
            staked: settled.values().flatten().map(|s| s.stake).sum(),
            returned: settled.values().flatten().map(|s| s.returned).sum(),
        };
        events.push(self.finished(round, None, settled, Some(by), now));
        if let Some(round) = self.round.as_mut() {
            round.totals = Some(totals);
        }
        self.phase = Phase::Settled;
        // Told once the round is settled, so that nothing reads as still in play.
        events.extend(self.pending_events(&owed, BalanceReason::Settlement));
        if let Some(winner) = winner {
            self.scoreboard.push(winner);
        }
        events.extend(self.finish_hand(shoe, now));
        Ok(events)
    }

    /// Every player's settlements of the round, as [`Command::ConfirmResult`] would pay
    /// them now. Refused unless the coup is complete.
    fn settle_round(&self, round: &Round) -> Result<BTreeMap<String, Vec<Settlement>>, Refusal> {
        let Some(result) = round.coup.result() else {
            return Err(Refusal::NotNow {
                action: "confirm the result",
                phase: self.phase,
            });
        };
        let paytable = &self.config.policy.paytable;
        let mut settled = BTreeMap::new();
        for (player, stakes) in round.book.players() {
            let bets: Vec<Bet> = stakes.iter().map(|(&k, &s)| Bet::new(k, s)).collect();
            settled.insert(player.clone(), settle(&bets, &result, paytable)?);
        }
        Ok(settled)
    }

    /// The credit that settles each bet of the round: its stake back and its winnings, or
    /// nothing for a lost bet (which still closes the bet at the wallet).
    fn settlement_credits(
        &self,
        round: &Round,
        settled: &BTreeMap<String, Vec<Settlement>>,
    ) -> Vec<OwedOp> {
        let (table, currency) = (&self.config.table_id, self.config.policy.currency.as_str());
        settled
            .iter()
            .flat_map(|(player, list)| list.iter().map(move |s| (player, s)))
            .map(|(player, s)| {
                let debits = round
                    .debits
                    .get(&(player.clone(), s.kind))
                    .cloned()
                    .unwrap_or_default();
                OwedOp::Credit(wallet_book::credit(
                    wallet_book::settlement_id(&round.id, player, s.kind),
                    CreditKind::Settlement,
                    table,
                    currency,
                    &round.id,
                    player,
                    s.kind,
                    s.returned,
                    debits,
                ))
            })
            .collect()
    }

    /// What a `ConfirmResult` now would pay: the round's cards in dealing order and every
    /// player's settlements. `None` unless a result is showing. Changes nothing; the actor
    /// compares it with the rules authority's settlement before confirming.
    pub fn pending_settlement(&self) -> Option<Result<PendingSettlement, Refusal>> {
        let round = self
            .round
            .as_ref()
            .filter(|_| self.phase == Phase::Result)?;
        let cards = round.cards.iter().map(|c| c.card).collect();
        Some(self.settle_round(round).map(|settled| (cards, settled)))
    }

    fn void(
        &mut self,
        asked: &RoundId,
        reason: &str,
        by: &str,
        now: u64,
    ) -> Result<Vec<Event>, Refusal> {
        let action = "void the round";
        self.check_round_in_play(action, asked)?;
        let phase = self.phase;
        if !phase.round_in_progress() {
            return Err(Refusal::NotNow { action, phase });
        }
        required("reason", reason)?;
        required("by", by)?;
        let round = self
            .round
            .as_ref()
            .ok_or(Refusal::NotNow { action, phase })?;
        let mut entries = Vec::new();
        let mut credits = Vec::new();
        let mut refunds = BTreeMap::new();
        for (player, stakes) in round.book.players() {
            let id = |kind| wallet_book::void_refund_id(&round.id, player, kind);
            let (mut e, mut c) = self.refunds(round, player, stakes, "void", id);
            entries.append(&mut e);
            credits.append(&mut c);
            refunds.insert(player.clone(), stakes.values().sum::<i64>());
        }
        let shoe = self.finished_hand()?;
        self.ledger.post_all(entries)?;
        // Nothing below can fail.
        for player in round.book.players().keys() {
            if let Some(state) = self.players.get_mut(player) {
                state.history.voided(&round.id);
            }
        }
        let void = VoidRecord {
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
        };
        let owed: Vec<_> = credits.into_iter().map(|c| self.wallet.owe(c)).collect();
        let mut events = vec![
            Event::RoundVoided {
                round_id: round.id.clone(),
                void: void.clone(),
                refunds,
            },
            Event::WalletOwed { owed: owed.clone() },
        ];
        let staked = round.book.total();
        events.push(self.finished(round, Some(void), BTreeMap::new(), None, now));
        if let Some(round) = self.round.as_mut() {
            round.totals = Some(RoundTotals {
                staked,
                returned: staked,
            });
        }
        self.phase = Phase::Voided;
        events.extend(self.pending_events(&owed, BalanceReason::VoidRefund));
        events.extend(self.finish_hand(shoe, now));
        Ok(events)
    }

    /// Each player `owed` pays, told their balance with what is now pending for them
    /// (credited when the wallet acknowledges it).
    fn pending_events(&self, owed: &[Owed], reason: BalanceReason) -> Vec<Event> {
        let players: BTreeSet<&str> = owed.iter().map(|o| o.op.player()).collect();
        players
            .into_iter()
            .filter_map(|player| {
                let balance = self.wallet.balance(player)?;
                Some(self.balance_event(player, balance, 0, reason))
            })
            .collect()
    }

    /// The ledger entries and the wallet credits that give `player` back their `stakes` of
    /// `round` (a clear, a void): one credit per position under the id `id(kind)`, settling
    /// the position's debits.
    fn refunds(
        &self,
        round: &Round,
        player: &str,
        stakes: &Stakes,
        what: &str,
        id: impl Fn(BetKind) -> TxId,
    ) -> (Vec<Entry>, Vec<OwedOp>) {
        let (table, currency) = (&self.config.table_id, self.config.policy.currency.as_str());
        stakes
            .iter()
            .map(|(&kind, &amount)| {
                let tx = id(kind);
                let entry = round_entry(
                    format!("{what}:{tx}"),
                    EntryKind::Refund,
                    (Account::InPlay, Account::Player(player.to_owned())),
                    amount,
                    &round.id,
                    Some(tx.clone()),
                );
                let debits = round
                    .debits
                    .get(&(player.to_owned(), kind))
                    .cloned()
                    .unwrap_or_default();
                let credit = wallet_book::credit(
                    tx,
                    CreditKind::Refund,
                    table,
                    currency,
                    &round.id,
                    player,
                    kind,
                    amount,
                    debits,
                );
                (entry, OwedOp::Credit(credit))
            })
            .unzip()
    }

    /// Refuses a croupier command naming another round than the current one.
    fn check_round_in_play(&self, action: &'static str, asked: &RoundId) -> Result<(), Refusal> {
        let current = self.round.as_ref().map(|r| &r.id);
        if current == Some(asked) {
            Ok(())
        } else {
            Err(Refusal::WrongRound {
                action,
                asked: asked.clone(),
                current: current.cloned(),
            })
        }
    }

    fn finished(
        &self,
        round: &Round,
        void: Option<VoidRecord>,
        settlements: BTreeMap<String, Vec<Settlement>>,
        confirmed_by: Option<&str>,
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
            opened_by: Some(round.opened_by.clone()),
            confirmed_by: confirmed_by.map(str::to_owned),
            cut_card: round.cut_card,
            revealed: None,
            shoe_opening: round.shoe_opening.clone(),
            placements: round.placements.clone(),
        }))
    }

    /// The [`Event::BalanceChanged`] of a change of `delta` already posted, with the
    /// player's stakes on the round under way after the command.
    fn balance_event(
        &self,
        player: &str,
        balance: i64,
        delta: i64,
        reason: BalanceReason,
    ) -> Event {
        Event::BalanceChanged {
            player: player.to_owned(),
            balance,
            delta,
            in_play: self.in_play_of(player),
            pending: self.wallet.owed_to(player),
            reason,
        }
    }

    // ----- bets ------------------------------------------------------------------------

    /// The original answer to a retried request, or `None` for a new key.
    fn answered(
        &self,
        player: &str,
        key: &str,
        fingerprint: &str,
    ) -> Result<Option<Vec<Event>>, Refusal> {
        // Still at the wallet: the retry waits for the same answer.
        if let Some(pending) = self.wallet.pending(player, key) {
            if pending.fingerprint != fingerprint {
                return Err(Refusal::KeyReused {
                    player: player.to_owned(),
                    key: key.to_owned(),
                });
            }
            return Ok(Some(vec![Event::Replayed {
                player: player.to_owned(),
                key: key.to_owned(),
                original: vec![Event::BetsPending {
                    request: pending.clone(),
                }],
            }]));
        }
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
            original: earlier.events.clone(),
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
            events: events.to_vec(),
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

    /// PlaceBets and Rebet: `request` is the round the request names (if any) and the
    /// positions to add, or why there are none (judged after the retry and timing checks).
    fn bet_request(
        &mut self,
        player: &str,
        key: &str,
        fingerprint: String,
        now: u64,
        request: Result<BetRequest<'_>, Refusal>,
    ) -> Result<Vec<Event>, Refusal> {
        required("player", player)?;
        required("key", key)?;
        if let Some(events) = self.answered(player, key, &fingerprint)? {
            return Ok(events);
        }
        let round = self.open_round(now)?;
        let BetRequest {
            round: asked_round,
            bets: request,
        } = request?;
        if let Some(asked) = asked_round
            && *asked != round.id
        {
            return Err(Refusal::WrongRound {
                action: "place bets",
                asked: asked.clone(),
                current: Some(round.id.clone()),
            });
        }
        self.check_may_bet(player, round)?;
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
        // What the player has on the round, taken or still at the wallet: the limits hold
        // for the sum, however many requests are in flight.
        let mut existing = round.book.of(player).cloned().unwrap_or_default();
        for (kind, amount) in self.wallet.pending_stakes(player, &round.id) {
            *existing.entry(kind).or_insert(0) += amount;
        }
        let context = PlayerContext {
            existing: Some(&existing),
            self_limit: None,
            capped_previous,
        };
        let accepted =
            book::check_bets(&self.config.policy, &request, context).map_err(|reasons| {
                Refusal::Bets {
                    player: player.to_owned(),
                    reasons,
                }
            })?;
        // The last check; nothing has changed yet.
        let round_id = round.id.clone();
        let n = round.requests.get(player).copied().unwrap_or(0) + 1;
        let (table, currency) = (&self.config.table_id, self.config.policy.currency.as_str());
        let debits = accepted
            .bets
            .iter()
            .map(|&(kind, amount)| {
                let total = existing.get(&kind).copied().unwrap_or(0) + amount;
                wallet_book::debit(table, currency, &round_id, player, n, kind, amount, total)
            })
            .collect();
        let request = PendingRequest {
            player: player.to_owned(),
            key: key.to_owned(),
            round_id,
            bets: accepted.bets,
            raised: accepted.raised,
            debits,
            fingerprint,
            at: now,
        };
        if let Some(round) = self.round.as_mut() {
            round.requests.insert(player.to_owned(), n);
        }
        self.wallet.add_pending(request.clone());
        Ok(vec![Event::BetsPending { request }])
    }

    /// The wallet answered the debits of a pending bet request: the bets are taken if it
    /// took them all and betting is still open on their round; otherwise the request is
    /// refused and every debit of it cancelled.
    fn wallet_debited(
        &mut self,
        player: &str,
        key: &str,
        outcome: &DebitOutcome,
        now: u64,
    ) -> Result<Vec<Event>, Refusal> {
        let Some(request) = self.wallet.pending(player, key).cloned() else {
            return Err(Refusal::NotPending {
                player: player.to_owned(),
                key: key.to_owned(),
            });
        };
        let open = self
            .open_round(now)
            .is_ok_and(|round| round.id == request.round_id);
        let why = match outcome {
            DebitOutcome::Taken { .. } if open => None,
            DebitOutcome::Taken { .. } => Some(BetRefusal::BettingClosed {
                round_id: request.round_id.clone(),
            }),
            DebitOutcome::Refused { error } => Some(BetRefusal::Wallet {
                error: error.clone(),
            }),
        };
        if let Some(why) = why {
            self.wallet.take_pending(player, key);
            let owed = request
                .debits
                .iter()
                .map(|d| self.wallet.owe(OwedOp::Cancel(wallet_book::cancel(d))))
                .collect();
            return Ok(vec![
                Event::BetsRefused {
                    player: player.to_owned(),
                    round_id: request.round_id,
                    key: key.to_owned(),
                    bets: request.bets,
                    why,
                },
                Event::WalletOwed { owed },
            ]);
        }
        let DebitOutcome::Taken { balance, version } = *outcome else {
            return Ok(Vec::new());
        };
        let round_id = request.round_id.clone();
        let entries = request
            .debits
            .iter()
            .map(|debit| {
                round_entry(
                    format!("stake:{}", debit.tx),
                    EntryKind::Stake,
                    (Account::Player(player.to_owned()), Account::InPlay),
                    debit.amount,
                    &round_id,
                    Some(debit.tx.clone()),
                )
            })
            .collect();
        let Some(round) = self.round.as_mut() else {
            return Err(Refusal::BettingNotOpen { phase: self.phase });
        };
        // The last check, and the first change.
        self.ledger.post_all(entries)?;
        self.wallet.take_pending(player, key);
        // A payout acknowledged after these debits were answered may have been applied
        // first: the newest balance is the one to show.
        let balance = self.wallet.set_balance(player, balance, version);
        round.book.add(player, &request.bets);
        for (debit, &(kind, _)) in request.debits.iter().zip(&request.bets) {
            round
                .debits
                .entry((player.to_owned(), kind))
                .or_default()
                .push(debit.tx.clone());
        }
        round
            .placements
            .entry(player.to_owned())
            .or_default()
            .extend(request.bets.iter().map(|&(kind, amount)| Placement {
                kind,
                amount,
                key: key.to_owned(),
                at: request.at,
            }));
        let stakes = round.book.of(player).cloned().unwrap_or_default();
        let totals = round.book.totals();
        let staked: i64 = request.bets.iter().map(|(_, a)| a).sum();
        let state = self.players.entry(player.to_owned()).or_default();
        state.history.staked(&round_id, &stakes, now);
        let mut events = vec![
            Event::BetsAccepted {
                player: player.to_owned(),
                round_id: round_id.clone(),
                key: key.to_owned(),
                bets: request.bets,
                raised: request.raised,
                stakes,
            },
            self.balance_event(player, balance, -staked, BalanceReason::Bet),
            Event::BetTotals { round_id, totals },
        ];
        events.extend(self.close_if_all_seats_decided(now));
        self.remember(player, key, request.fingerprint, &events);
        Ok(events)
    }

    /// Each answer decided as [`Table::wallet_debited`] decides it, in order: the events
    /// of all of them, each answer's starting with its `BetsAccepted` or `BetsRefused`. An
    /// answer refused (its request no longer pending: a bug, since only the wallet task
    /// answers, once) changed nothing and is left out, the others stand.
    fn wallet_debited_many(&mut self, answers: &[DebitAnswer], now: u64) -> Vec<Event> {
        let mut events = Vec::new();
        for answer in answers {
            match self.wallet_debited(&answer.player, &answer.key, &answer.outcome, now) {
                Ok(decided) => events.extend(decided),
                Err(refusal) => {
                    tracing::warn!(%refusal, "a wallet's answer changed nothing");
                }
            }
        }
        events
    }

    /// The wallet acknowledged owed movements: each is done; the players hear of their
    /// balance once (the newest the wallet told).
    fn wallet_acked(&mut self, acks: &[WalletAck]) -> Vec<Event> {
        // Per player: the balance shown before, the credits' sum, why.
        let mut changes: BTreeMap<String, (Option<i64>, i64, BalanceReason)> = BTreeMap::new();
        let mut done = Vec::new();
        for ack in acks {
            let Some(owed) = self.wallet.acknowledged(ack.number) else {
                continue;
            };
            done.push(ack.number);
            let reason = match &owed.op {
                OwedOp::Cancel(_) => BalanceReason::Cancelled,
                OwedOp::Credit(c) => match TxPurpose::of(c.tx.as_str()) {
                    Some(TxPurpose::VoidRefund) => BalanceReason::VoidRefund,
                    _ if c.kind == CreditKind::Settlement => BalanceReason::Settlement,
                    _ => BalanceReason::Clear,
                },
            };
            let player = owed.op.player().to_owned();
            let change = changes
                .entry(player.clone())
                .or_insert_with(|| (self.wallet.balance(&player), 0, reason));
            // A cancel undoes a debit the player was never shown as taken (its request was
            // refused): it changes nothing the table told, whatever the wallet had done; the
            // balance the wallet answers is the truth either way.
            if let OwedOp::Credit(credit) = &owed.op {
                change.1 += credit.amount;
            }
            change.2 = reason;
            if let Some(balance) = ack.balance {
                self.wallet.set_balance(&player, balance, ack.version);
            }
        }
        if done.is_empty() {
            return Vec::new();
        }
        let mut events = vec![Event::WalletAcked { numbers: done }];
        for (player, (before, delta, reason)) in changes {
            let shown = self.wallet.balance(&player);
            let quiet = reason == BalanceReason::Cancelled && shown == before;
            if let Some(balance) = shown.filter(|_| !quiet) {
                events.push(self.balance_event(&player, balance, delta, reason));
            }
        }
        events
    }

    fn clear_bets(
        &mut self,
        player: &str,
        asked: Option<&RoundId>,
        key: &str,
        now: u64,
    ) -> Result<Vec<Event>, Refusal> {
        required("player", player)?;
        required("key", key)?;
        let fingerprint = match asked {
            Some(round_id) => format!("clear {round_id}"),
            None => "clear".to_owned(),
        };
        if let Some(events) = self.answered(player, key, &fingerprint)? {
            return Ok(events);
        }
        let round = self.open_round(now)?;
        if let Some(asked) = asked
            && *asked != round.id
        {
            return Err(Refusal::WrongRound {
                action: "clear bets",
                asked: asked.clone(),
                current: Some(round.id.clone()),
            });
        }
        let refunded = round
            .book
            .of(player)
            .cloned()
            .ok_or_else(|| Refusal::NoBets {
                player: player.to_owned(),
            })?;
        let round_id = round.id.clone();
        let n = round.clears.get(player).copied().unwrap_or(0) + 1;
        let id = |kind| wallet_book::clear_refund_id(&round_id, player, n, kind);
        let (entries, credits) = self.refunds(round, player, &refunded, "clear", id);
        let round = self
            .round
            .as_mut()
            .ok_or(Refusal::BettingNotOpen { phase: self.phase })?;
        // The last check, and the first change.
        self.ledger.post_all(entries)?;
        round.book.clear(player);
        round.clears.insert(player.to_owned(), n);
        for kind in refunded.keys() {
            round.debits.remove(&(player.to_owned(), *kind));
        }
        round.placements.remove(player);
        let totals = round.book.totals();
        if let Some(state) = self.players.get_mut(player) {
            state.history.cleared(&round_id);
        }
        let owed: Vec<_> = credits.into_iter().map(|c| self.wallet.owe(c)).collect();
        let mut pending = self.pending_events(&owed, BalanceReason::Clear);
        let mut events = vec![
            Event::BetsCleared {
                player: player.to_owned(),
                round_id: round_id.clone(),
                key: key.to_owned(),
                refunded,
            },
            Event::WalletOwed { owed },
            Event::BetTotals { round_id, totals },
        ];
        events.append(&mut pending);
        self.remember(player, key, fingerprint, &events);
        Ok(events)
    }
}

/// A transfer of the round `round_id` between two accounts of the table.
fn round_entry(
    key: String,
    kind: EntryKind,
    (from, to): (Account, Account),
    amount: i64,
    round_id: &RoundId,
    tx: Option<TxId>,
) -> Entry {
    Entry {
        key,
        kind,
        from,
        to,
        amount,
        round_id: Some(round_id.clone()),
        tx,
    }
}

/// The ledger entries that settle a round, and the house's net gain on it.
fn settlement_entries(
    round_id: &RoundId,
    settled: &BTreeMap<String, Vec<Settlement>>,
) -> (Vec<Entry>, i64) {
    let mut entries = Vec::new();
    let mut house_net = 0i64;
    for (player, settlements) in settled {
        let to = Account::Player(player.clone());
        for s in settlements {
            let tx = wallet_book::settlement_id(round_id, player, s.kind);
            let entry = |what: &str, kind, accounts, amount| {
                let key = format!("{what}:{round_id}:{player}:{}", s.kind);
                let paid = matches!(kind, EntryKind::Payout).then(|| tx.clone());
                round_entry(key, kind, accounts, amount, round_id, paid)
            };
            if s.returned > 0 {
                let accounts = (Account::InPlay, to.clone());
                entries.push(entry("return", EntryKind::Payout, accounts, s.stake));
            } else {
                let accounts = (Account::InPlay, Account::House);
                entries.push(entry("loss", EntryKind::Loss, accounts, s.stake));
                house_net += s.stake;
            }
            if s.winnings > 0 {
                let accounts = (Account::House, to.clone());
                entries.push(entry("win", EntryKind::Payout, accounts, s.winnings));
                house_net -= s.winnings;
            }
        }
    }
    (entries, house_net)
}
