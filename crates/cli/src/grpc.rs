//! A client that could not be set up, with the flags that gave its address and CA; and a
//! gRPC error as a sentence (`Unavailable: validator unreachable: …`) that keeps its
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

/// The flags that give a client its server's address, the CA it trusts and its token.
pub(crate) struct ClientFlags {
    pub(crate) server: &'static str,
    pub(crate) ca: &'static str,
    pub(crate) token: &'static str,
}

/// `err`, from setting up a client, with the flag (or flags) at fault in front.
pub(crate) fn client_error(
    err: banco_auth::client::ClientError,
    flags: &ClientFlags,
) -> anyhow::Error {
    use banco_auth::client::ClientError;
    let at_fault = match err {
        ClientError::BadUrl(_) => flags.server.to_owned(),
        ClientError::Ca { .. } | ClientError::TlsConfig { .. } => flags.ca.to_owned(),
        ClientError::HttpsNeedsCa(_) | ClientError::CaNeedsHttps(_) => {
            format!("{}, {}", flags.server, flags.ca)
        }
        ClientError::BadToken(_)
        | ClientError::TokenUnreadable { .. }
        | ClientError::NotAToken { .. } => flags.token.to_owned(),
    };
    anyhow::Error::new(err).context(at_fault)
}
