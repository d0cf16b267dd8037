//! Every way an edge's own part of a call fails, and the one place that decides its gRPC
//! code. What the table's broadcaster answers to a forwarded call is passed on as it is.

use banco_wire::ConversionError;
use tonic::Status;

#[derive(Debug, thiserror::Error)]
pub(crate) enum EdgeError {
    /// The request cannot be read; names the field.
    #[error(transparent)]
    BadRequest(#[from] ConversionError),
    /// No broadcaster has a record of this table.
    #[error("table `{0}` is not in the lobby: no broadcaster serves it")]
    UnknownTable(String),
    /// No broadcaster serves any table yet (a call that is not about one table).
    #[error("no broadcaster serves a table yet; try again shortly")]
    NoBroadcaster,
    /// MyBets over every table, with tables on more than one broadcaster.
    #[error("the tables are served by {0} broadcasters: ask MyBets one table at a time (table_id)")]
    ManyBroadcasters(usize),
    /// The table's stream on NATS cannot be read now.
    #[error("table `{table}`: its events cannot be read now ({why}); try again")]
    Stream { table: String, why: String },
    /// The table's broadcaster did not send a snapshot first.
    #[error("table `{0}`: its broadcaster answered a new subscription without a snapshot")]
    NoSnapshot(String),
    /// A handler ran without the caller's token: the guard in front of it is missing.
    #[error("the caller's token did not reach the forwarding (a server fault)")]
    NoToken,
}

impl From<EdgeError> for Status {
    fn from(error: EdgeError) -> Status {
        let message = error.to_string();
        match error {
            EdgeError::BadRequest(_) => Status::invalid_argument(message),
            EdgeError::UnknownTable(_) => Status::not_found(message),
            EdgeError::NoBroadcaster | EdgeError::Stream { .. } => Status::unavailable(message),
            EdgeError::ManyBroadcasters(_) => Status::failed_precondition(message),
            EdgeError::NoSnapshot(_) | EdgeError::NoToken => Status::internal(message),
        }
    }
}
