//! Everything the console shows, and the commands it has not yet had answered.

use std::collections::VecDeque;

use banco_rules::Scoreboard;
use banco_wire::pb;

use crate::command::{Command, Pending};
use crate::entry::Entry;

/// The link to the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    /// Not connected yet since the console started.
    Connecting,
    Online,
    /// Lost; the gRPC task is reconnecting. Why it was lost.
    Down(String),
}

/// A line under the prompt: the last refusal (red, with a bell), or a note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub text: String,
    pub refusal: bool,
    /// Where the table stood when it was given: once the round moves on, it is old news.
    pub stage: Stage,
}

/// How far the table has got: its shoe, round, phase and cards of the hand. A change of any
/// of them is the round moving on (bets and chat lines are not).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stage {
    pub shoe_id: String,
    pub round_id: String,
    pub phase: i32,
    pub cards: usize,
}

/// What a reason is asked for, and what the table showed when it was asked: the
/// question is withdrawn if the table moves on before it is answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Purpose {
    Undo {
        round_id: String,
        card: banco_rules::Card,
    },
    Void {
        round_id: String,
    },
    EndShoe {
        shoe_id: String,
    },
    Mute {
        player: String,
        minutes: u32,
    },
}

/// What the keyboard is doing: typing cards and pacing, or answering a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// The list of keys (`?`); any key closes it.
    Help,
    /// A reason being typed.
    Reason {
        purpose: Purpose,
        text: String,
    },
    /// Which player to mute (`alice`, `alice 30`, `alice 0` lifts).
    MuteWho {
        text: String,
    },
    /// The second question before a void.
    ConfirmVoid {
        round_id: String,
        reason: String,
    },
    /// The second question before a shoe is ended.
    ConfirmEndShoe {
        shoe_id: String,
        reason: String,
    },
    /// Quit while a round is open or commands are unsent.
    ConfirmQuit {
        why: String,
    },
}

/// The console's whole state.
#[derive(Clone, Debug)]
pub struct Model {
    pub table_id: String,
    /// Who is at the table (the token's subject unless `--croupier-name`).
    pub croupier: String,
    /// The betting window asked for by `O` (0: the table's configured one).
    pub betting_ms: u32,
    pub connection: Connection,
    pub scanner: Option<(bool, String)>,
    /// The table as last received (none before the first snapshot).
    pub table: Option<pb::TableState>,
    /// Roads of the whole shoe, rebuilt from every result the table's roads hold.
    pub roads: Scoreboard,
    /// Commands in the order given; the first is the one sent (or to be sent) next.
    pub pending: VecDeque<Pending>,
    /// Whether the first pending command is on its way (waiting for its reply).
    pub in_flight: bool,
    /// After a failed send while the stream stays up: when to try again.
    pub retry_at_ms: Option<u64>,
    pub entry: Entry,
    pub notice: Option<Notice>,
    pub mode: Mode,
    pub now_ms: u64,
    /// The console's clock when betting closes (from the table's deadline and server time).
    pub betting_deadline_ms: Option<u64>,
    id_prefix: String,
    next_id: u64,
}

impl Model {
    /// `id_prefix` makes this run's command ids unique (a fresh random id in `main`).
    pub fn new(table_id: &str, croupier: &str, betting_ms: u32, id_prefix: &str) -> Model {
        Model {
            table_id: table_id.to_owned(),
            croupier: croupier.to_owned(),
            betting_ms,
            connection: Connection::Connecting,
            scanner: None,
            table: None,
            roads: Scoreboard::new(),
            pending: VecDeque::new(),
            in_flight: false,
            retry_at_ms: None,
            entry: Entry::default(),
            notice: None,
            mode: Mode::Normal,
            now_ms: 0,
            betting_deadline_ms: None,
            id_prefix: id_prefix.to_owned(),
            next_id: 1,
        }
    }

    /// Queues a command with a new id.
    pub fn enqueue(&mut self, command: Command) {
        let id = format!("{}-{}", self.id_prefix, self.next_id);
        self.next_id += 1;
        self.pending.push_back(Pending { id, command });
    }

    pub fn phase(&self) -> pb::TablePhase {
        self.table
            .as_ref()
            .and_then(|t| pb::TablePhase::try_from(t.phase).ok())
            .unwrap_or(pb::TablePhase::Unspecified)
    }

    pub fn shoe_state(&self) -> pb::ShoeState {
        self.table
            .as_ref()
            .and_then(|t| pb::ShoeState::try_from(t.shoe_state).ok())
            .unwrap_or(pb::ShoeState::Unspecified)
    }

    /// A round is under way: betting, dealing or waiting for its result to be confirmed.
    pub fn round_open(&self) -> bool {
        use pb::TablePhase as P;
        matches!(
            self.phase(),
            P::BettingOpen | P::BettingClosed | P::Dealing | P::Result
        )
    }

    /// Seconds of betting left (rounded up), while betting is open on a timer.
    pub fn betting_left_s(&self) -> Option<u64> {
        if self.phase() != pb::TablePhase::BettingOpen {
            return None;
        }
        self.betting_deadline_ms
            .map(|deadline| deadline.saturating_sub(self.now_ms).div_ceil(1000))
    }

    /// Where the table stands now (see [`Stage`]).
    pub fn stage(&self) -> Stage {
        self.table
            .as_ref()
            .map(|t| Stage {
                shoe_id: t.shoe_id.clone(),
                round_id: t.round_id.clone(),
                phase: t.phase,
                cards: t.cards.len(),
            })
            .unwrap_or_default()
    }

    /// The currency of the table's amounts (empty before the first state: amounts then
    /// show without a sign).
    pub fn currency(&self) -> &str {
        self.table.as_ref().map_or("", |t| t.currency.as_str())
    }

    /// The last card of the hand on the table, if it reads.
    pub fn last_card(&self) -> Option<banco_rules::Card> {
        self.table
            .as_ref()
            .and_then(|t| t.cards.last())
            .and_then(|d| banco_rules::Card::parse(&d.card).ok())
    }

    pub fn refuse(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            refusal: true,
            stage: self.stage(),
        });
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.notice = Some(Notice {
            text: text.into(),
            refusal: false,
            stage: self.stage(),
        });
    }
}
