//! The croupier's commands as the console queues them: each with the `command_id` it keeps
//! until the table has answered, so that a resend after a reconnect is applied at most once.

use banco_rules::Card;

/// Where a card came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Scanner,
    Keyboard,
}

/// One TableService command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// A card out of the shoe, not sent yet: it becomes the burn or a deal when it is first
    /// sent, by the table's state then (every command before it answered).
    Card {
        card: Card,
        source: Source,
    },
    OpenShoe,
    Burn {
        card: Card,
        source: Source,
    },
    OpenBetting {
        duration_ms: u32,
    },
    CloseBetting,
    Deal {
        card: Card,
        source: Source,
    },
    Undo {
        reason: String,
        card: Card,
    },
    Confirm {
        round_id: String,
    },
    Void {
        round_id: String,
        reason: String,
    },
    EndShoe {
        reason: String,
    },
    Mute {
        player: String,
        minutes: u32,
        reason: String,
    },
}

impl Command {
    /// A few words for the pending line and for refusals: `deal 7H`, `open betting`.
    pub fn label(&self) -> String {
        match self {
            Command::Card { card, .. } => card.to_string(),
            Command::OpenShoe => "new shoe".to_owned(),
            Command::Burn { card, .. } => format!("burn {card}"),
            Command::OpenBetting { .. } => "open betting".to_owned(),
            Command::CloseBetting => "close betting".to_owned(),
            Command::Deal { card, .. } => card.to_string(),
            Command::Undo { card, .. } => format!("undo {card}"),
            Command::Confirm { .. } => "confirm result".to_owned(),
            Command::Void { .. } => "void round".to_owned(),
            Command::EndShoe { .. } => "end shoe".to_owned(),
            Command::Mute { player, .. } => format!("mute {player}"),
        }
    }

    /// The card a Burn or Deal carries.
    pub fn card(&self) -> Option<Card> {
        match self {
            Command::Card { card, .. }
            | Command::Burn { card, .. }
            | Command::Deal { card, .. } => Some(*card),
            _ => None,
        }
    }
}

/// A command waiting for the table's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Kept across resends: the table applies each id at most once.
    pub id: String,
    pub command: Command,
}
