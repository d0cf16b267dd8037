//! Why the actor did not carry out a request. Every message is written for the croupier
//! (or the player) who sent it: what was refused and what to do.

use crate::refusal::Refusal;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActorError {
    /// The table (or the rules authority, for a card) refused the command; nothing changed.
    #[error(transparent)]
    Refused(Refusal),
    /// The rules authority could not be asked, so the card (or the confirm) was refused
    /// rather than accepted unchecked. Retry with the same command id once it is back.
    #[error("{0}")]
    ValidatorUnreachable(String),
    /// The rules authority and the table disagree (settlement, or an answer that makes no
    /// sense): the command was refused and an alert raised; nothing was paid.
    #[error("the rules authority disagrees with the table: {0}; nothing was changed")]
    RulesDisagree(String),
    /// The journal could not make the command's record durable (e.g. `write failed: No
    /// space left on device (os error 28)`): it was not applied and nothing changed. The
    /// table reopens its journal before the next request; send it again (same command id)
    /// once the journal can be written.
    #[error("journal {0}; the command was not applied and nothing changed")]
    JournalFailed(String),
    /// The actor has stopped (shut down, or the task ended).
    #[error("the table actor has stopped")]
    Stopped,
    /// `spawn` could not start the table (bad config, unreadable watermark, a journal
    /// record the table refuses on replay). Besides `spawn`, only an `OpenShoe` on a table
    /// the actor deals itself returns it, when the OS gives no seed to shuffle with.
    #[error("cannot start the table: {0}")]
    Startup(String),
}

impl From<Refusal> for ActorError {
    fn from(refusal: Refusal) -> ActorError {
        ActorError::Refused(refusal)
    }
}
