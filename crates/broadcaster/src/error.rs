//! Every way a broadcaster call fails, and the one place that decides its gRPC code.
//!
//! A table refusal is not here: it is an OK reply carrying a `Refusal` (the request was
//! well formed; the game did not allow it). What is here is what the caller cannot fix by
//! playing differently: a malformed request, a table this broadcaster does not host, a
//! dependency that is down, a call that does not exist yet.

use banco_table::Refusal;
use banco_table::actor::ActorError;
use banco_wire::ConversionError;
use tonic::Status;

#[derive(Debug, thiserror::Error)]
pub enum BroadcasterError {
    /// The request cannot be read; names the field.
    #[error(transparent)]
    BadRequest(#[from] ConversionError),
    /// `table_id` names no table hosted here.
    #[error("table `{0}` is not hosted by this broadcaster")]
    UnknownTable(String),
    /// The validator did not answer: no card can be accepted until it does. The text
    /// starts with "validator unreachable".
    #[error("{0}; retry with the same command_id")]
    ValidatorUnreachable(String),
    /// The validator and the table's own rules disagree about a card: a server fault.
    #[error("rules disagree: {0}")]
    RulesDisagree(String),
    /// The command could not be journaled, so it was not applied.
    #[error(
        "journal {0}; the command was not applied and nothing changed: make room on (or \
         repair) the journal's disk, then send it again with the same command_id"
    )]
    JournalFailed(String),
    /// The table's actor has stopped (shutdown or a fatal fault).
    #[error("table `{0}` is stopped")]
    Stopped(String),
    /// A refusal where the reply has no room for one. Handlers that answer with a
    /// `Refusal` take it out before it gets here.
    #[error("{0}")]
    Refused(Refusal),
    /// A call of the contract this broadcaster does not serve yet.
    #[error("{0}")]
    Unimplemented(String),
}

impl BroadcasterError {
    /// An actor failure at table `table`.
    pub(crate) fn actor(table: &str, error: ActorError) -> BroadcasterError {
        match error {
            ActorError::Refused(refusal) => BroadcasterError::Refused(refusal),
            ActorError::ValidatorUnreachable(why) => BroadcasterError::ValidatorUnreachable(why),
            ActorError::RulesDisagree(why) => BroadcasterError::RulesDisagree(why),
            ActorError::JournalFailed(why) => BroadcasterError::JournalFailed(why),
            ActorError::Stopped | ActorError::Startup(_) => {
                BroadcasterError::Stopped(table.to_owned())
            }
        }
    }
}

impl From<BroadcasterError> for Status {
    fn from(error: BroadcasterError) -> Status {
        let message = error.to_string();
        match error {
            BroadcasterError::BadRequest(_) => Status::invalid_argument(message),
            BroadcasterError::UnknownTable(_) => Status::not_found(message),
            BroadcasterError::ValidatorUnreachable(_)
            | BroadcasterError::JournalFailed(_)
            | BroadcasterError::Stopped(_) => Status::unavailable(message),
            BroadcasterError::RulesDisagree(_) => Status::internal(message),
            BroadcasterError::Refused(_) => Status::failed_precondition(message),
            BroadcasterError::Unimplemented(_) => Status::unimplemented(message),
        }
    }
}
