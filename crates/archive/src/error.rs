//! Every way an archive call fails, and the one place that decides its gRPC code.
//!
//! A chain gap and a conflicting record are not here: they are refusals carried in an OK
//! `AppendAck` (see [`crate::ingest::Appended`]), because the request was well formed and
//! the chain said no. What is here: a record that cannot be read or does not prove itself
//! (hash, signature), a bad query, something missing, and the database failing.

use tonic::Status;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// A field of the record cannot be read or disagrees with the table's record.
    #[error("`{field}` is invalid: {why}")]
    BadRecord { field: String, why: String },
    /// The record's hash is not the hash of its `prev_hash` and `table_record`.
    #[error(
        "round {round_id}: `record.hash` {given} is not the hash of its prev_hash and table_record ({computed})"
    )]
    HashMismatch {
        round_id: String,
        given: String,
        computed: String,
    },
    /// Signed by a key this archive was not given.
    #[error("round {round_id}: `record.key_id` `{key_id}` is not a table key this archive trusts")]
    UnknownKey { round_id: String, key_id: String },
    /// The signature does not match the hash under the named key.
    #[error("round {round_id}: `record.signature` is not the table's signature of its hash: {why}")]
    BadSignature { round_id: String, why: String },
    /// A query argument is wrong; names it.
    #[error("`{field}` is invalid: {why}")]
    BadRequest { field: String, why: String },
    /// The caller may not see this.
    #[error("{0}")]
    PermissionDenied(String),
    #[error("{0}")]
    NotFound(String),
    /// The `--db` URL names no backend this archive has.
    #[error(
        "`{0}` is not a database URL this archive can open: expected sqlite://PATH or postgres://…"
    )]
    UnknownBackend(String),
    /// A stored row cannot be read back (the database was edited or is damaged).
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    /// An uploaded clip, or a record's ClipRef, does not match the clip's bytes.
    #[error("{0}")]
    ClipMismatch(String),
    /// The round already has a different clip; it is kept.
    #[error("{0}")]
    ClipExists(String),
    /// A stored clip no longer matches its record (edited, truncated or lost on disk).
    #[error("{0}")]
    ClipDamaged(String),
    /// This archive was started without a clip folder.
    #[error("this archive keeps no clips: it was started without a clip folder")]
    NoClipFolder,
    #[error("clip folder: {0}")]
    ClipIo(String),
    /// A table checkpoint whose signature does not verify under the tables' keys.
    #[error("{0}")]
    BadCheckpoint(String),
    /// A table checkpoint naming a round the archive does not hold, or holds with another
    /// hash.
    #[error("{0}")]
    NotInChain(String),
    /// A request field cannot be read (names the field path).
    #[error(transparent)]
    Conversion(#[from] banco_wire::ConversionError),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A record of a batch failed its checks: the whole batch is refused.
    #[error("records[{index}] (round `{round_id}`): {source}; nothing of the batch was stored")]
    InBatch {
        index: usize,
        round_id: String,
        source: Box<ArchiveError>,
    },
}

impl ArchiveError {
    pub(crate) fn bad_request(field: &str, why: impl Into<String>) -> ArchiveError {
        ArchiveError::BadRequest {
            field: field.to_owned(),
            why: why.into(),
        }
    }
}

impl From<ArchiveError> for Status {
    fn from(error: ArchiveError) -> Status {
        let message = error.to_string();
        let error = match error {
            ArchiveError::InBatch { source, .. } => *source,
            other => other,
        };
        match error {
            ArchiveError::BadRecord { .. }
            | ArchiveError::HashMismatch { .. }
            | ArchiveError::BadRequest { .. }
            | ArchiveError::ClipMismatch(_)
            | ArchiveError::Conversion(_) => Status::invalid_argument(message),
            ArchiveError::BadCheckpoint(_) => Status::invalid_argument(message),
            ArchiveError::NotInChain(_) => Status::failed_precondition(message),
            ArchiveError::ClipExists(_) => Status::already_exists(message),
            ArchiveError::ClipDamaged(_) => Status::data_loss(message),
            ArchiveError::NoClipFolder => Status::failed_precondition(message),
            ArchiveError::ClipIo(_) => Status::internal(message),
            ArchiveError::UnknownKey { .. }
            | ArchiveError::BadSignature { .. }
            | ArchiveError::PermissionDenied(_) => Status::permission_denied(message),
            ArchiveError::NotFound(_) => Status::not_found(message),
            ArchiveError::UnknownBackend(_) => Status::failed_precondition(message),
            ArchiveError::Corrupt(_) => Status::data_loss(message),
            ArchiveError::Database(_) => Status::unavailable(message),
            ArchiveError::InBatch { .. } => Status::invalid_argument(message),
        }
    }
}
