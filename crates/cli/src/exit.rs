//! What the exit status of a client command (`croupier`, `player`, `audit`, `token`,
//! `rules judge`, …) says, the same for each:
//!
//! - 0: done.
//! - 1 ([`REFUSED`]): the service answered no: the table refused the command or a bet
//!   (a `REFUSED: …` line says why), the archive's chain is broken, a clip does not match
//!   its record, a judged line failed.
//! - 2 ([`BAD_INPUT`]): the command was not carried out and sending it again as it is
//!   will not help: a bad argument or file (refused before anything is sent), or a request
//!   the service refused as malformed, unauthenticated or not allowed.
//! - 3 ([`UNAVAILABLE`]): the service could not be reached, or could not carry the
//!   command out now (unavailable, timed out, failed inside); the same command, with the
//!   same `--command-id` or `--key`, may be sent again.

use std::process::ExitCode;

pub(crate) const REFUSED: u8 = 1;
pub(crate) const BAD_INPUT: u8 = 2;
pub(crate) const UNAVAILABLE: u8 = 3;

/// The table's "no", as an error: the command exits [`REFUSED`] after printing it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub(crate) String);

/// The exit status of a command that failed with `err`, from the first cause in its
/// chain that tells.
pub(crate) fn status_of(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.downcast_ref::<Refused>().is_some() {
            return REFUSED;
        }
        if let Some(status) = cause.downcast_ref::<tonic::Status>() {
            return status_code(status.code());
        }
        if let Some(status) = cause.downcast_ref::<crate::grpc::StatusError>() {
            return status_code(status.code());
        }
        if cause.downcast_ref::<tonic::transport::Error>().is_some() {
            return UNAVAILABLE;
        }
    }
    BAD_INPUT
}

pub(crate) fn exit_code(err: &anyhow::Error) -> ExitCode {
    ExitCode::from(status_of(err))
}

/// Codes another attempt may cure are [`UNAVAILABLE`]; the others say the request
/// itself was wrong.
fn status_code(code: tonic::Code) -> u8 {
    use tonic::Code;
    match code {
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::Unknown
        | Code::Internal
        | Code::Aborted
        | Code::Cancelled
        | Code::ResourceExhausted
        | Code::DataLoss => UNAVAILABLE,
        Code::Ok
        | Code::InvalidArgument
        | Code::NotFound
        | Code::AlreadyExists
        | Code::PermissionDenied
        | Code::Unauthenticated
        | Code::FailedPrecondition
        | Code::OutOfRange
        | Code::Unimplemented => BAD_INPUT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cause_that_tells_decides() {
        let refused = anyhow::Error::new(Refused("betting is not open".into())).context("bet");
        assert_eq!(status_of(&refused), REFUSED);
        let down = anyhow::Error::new(tonic::Status::unavailable("validator unreachable"))
            .context("DealCard");
        assert_eq!(status_of(&down), UNAVAILABLE);
        let wrapped = crate::grpc::status_error(&tonic::Status::deadline_exceeded("slow"));
        assert_eq!(status_of(&wrapped), UNAVAILABLE);
        let denied = crate::grpc::status_error(&tonic::Status::unauthenticated("expired"));
        assert_eq!(status_of(&denied), BAD_INPUT);
        assert_eq!(
            status_of(&anyhow::anyhow!("--ttl 0h: not positive")),
            BAD_INPUT
        );
    }
}
