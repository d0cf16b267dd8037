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
//! The handlers live by the seam they serve: `table/shoe.rs`, `table/betting.rs`,
//! `table/dealing.rs`, `table/settling.rs`, `table/voiding.rs`, with seats and passing in
//! `table/seating.rs` and chat and mutes in `table/talk.rs`; each player's own history
//! ([`crate::history`]) is kept up to date by the bet, clear, settle and void handlers, so a
//! replay rebuilds it too.
//!
//! For the actor: journal every command that `apply` accepted with at least one event
//! (a `Tick` that changed nothing returns no events; a retried request returns only
//! [`Event::Replayed`] and changed nothing, so neither needs journaling, though
//! journaling them is harmless). Replaying the journal from the same [`TableConfig`]
//! rebuilds the same table.

mod betting;
mod dealing;
mod seating;
mod settling;
mod shoe;
mod talk;
mod voiding;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use banco_rules::shoe::Shoe;
use banco_rules::{BetKind, Card, Coup, Due, Scoreboard, Settlement};
use banco_wallet::TxId;

use crate::book::{Book, Stakes};
use crate::command::Command;
use crate::event::{Event, Placement, RoundTotals, ShoeOpening, TableSnapshot};
use crate::history::{History, HistoryEntry};
use crate::ledger::{Account, Entry, EntryKind, Ledger};
use crate::phase::{Correction, DealtCard, Phase};
use crate::policy::{ConfigError, TableConfig};
use crate::refusal::Refusal;
use crate::round_id::RoundId;
use crate::wallet_book::{DebitNumbering, WalletBook};

pub use betting::REMEMBERED_REQUESTS;

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
    /// Bet requests each player has had decided on this round, numbering their debits in
    /// a journal of format 1.
    requests: BTreeMap<String, u32>,
    /// Bet requests the round has had decided, numbering their debits in a journal of
    /// format 2 on.
    numbered: u32,
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
    /// [`key_digest`] of `key`: a request's look-up compares these first, as most keys
    /// are new and a player's remembered keys differ in their last characters only.
    digest: u64,
    key: String,
    fingerprint: String,
    events: Vec<Event>,
}

/// FNV-1a of an idempotency key: a few nanoseconds for keys of a few bytes, where a
/// comparison of the strings is a call to `memcmp`, 64 of them for each new key of a
/// player who has made 64 requests (about a microsecond a bet in `banco-bench bets`).
fn key_digest(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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

/// What a handler gives [`Table::apply`]: the events of a change, or why nothing changed.
type Handled = Result<Vec<Event>, Refusal>;

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
    /// How the debits of a bet request are numbered: as the journal being replayed did.
    numbering: DebitNumbering,
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
            numbering: DebitNumbering::InRound,
        })
    }

    /// Numbers debits as a journal of `format` did (the newest format's way unless told).
    #[must_use]
    pub(crate) const fn numbering_debits_as(mut self, format: u32) -> Table {
        self.numbering = DebitNumbering::of_journal_format(format);
        self
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
            Command::CloseBetting { by, now_ms } => self.croupier_close_betting(by, *now_ms),
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
            } => self.place_bets(player, round_id, bets, key, *now_ms),
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
            } => self.rebet(player, round_id.as_ref(), key, *now_ms),
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
            } => self.wallet_changed(player, *balance, *delta, *version),
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
