//! A gRPC error as a sentence (`Unavailable: validator unreachable: …`) that keeps its
//! code, so that the exit status can tell a refusal from an outage.

/// A status from a service: its code and its message.
#[derive(Debug, thiserror::Error)]
#[error("{code:?}: {message}")]
pub(crate) struct StatusError {
    code: tonic::Code,
    message: String,
}

impl StatusError {
    pub(crate) fn code(&self) -> tonic::Code {
        self.code
    }
}

pub(crate) fn status_error(status: &tonic::Status) -> anyhow::Error {
    anyhow::Error::new(StatusError {
        code: status.code(),
        message: status.message().to_owned(),
    })
}
