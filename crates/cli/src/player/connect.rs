//! Reaching the broadcaster as a player: the address, TLS, the bearer token, and gRPC
//! errors turned into sentences.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use banco_auth::BearerToken;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use tonic::codegen::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// PlayerService with the caller's token on every call.
pub type Client = PlayerServiceClient<InterceptedService<Channel, BearerToken>>;

/// Where the broadcaster is and how to trust it (shared by `banco player` and `banco-sim bots`).
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// The broadcaster's address.
    #[arg(long, default_value = "http://127.0.0.1:7102")]
    pub server: String,
    /// PEM CA certificate(s) the broadcaster's TLS certificate must be signed by; required
    /// (and only allowed) with an `https://` `--server`.
    #[arg(long, value_name = "PEM")]
    pub ca_cert: Option<PathBuf>,
}

impl ServerArgs {
    /// The endpoint: plaintext for `http://`, TLS trusting `--ca-cert` for `https://`. Each
    /// needs the other (tonic would send plaintext to `http://` even with a CA).
    pub fn endpoint(&self) -> anyhow::Result<Endpoint> {
        crate::croupier::endpoint(&self.server, self.ca_cert.as_deref())
    }

    /// A channel that connects on first use and reconnects by itself, so that a client
    /// started before the broadcaster, or across its restart, keeps working.
    pub fn lazy_channel(&self) -> anyhow::Result<Channel> {
        Ok(self.endpoint()?.connect_lazy())
    }
}

/// The token in `path`, given with `--token-file` (as `banco token issue` prints it), as a
/// client interceptor.
pub(crate) fn read_token(path: &Path) -> anyhow::Result<BearerToken> {
    Ok(banco_auth::client::read_token_file(path)
        .context("--token-file")?
        .bearer)
}

pub fn client(channel: Channel, token: BearerToken) -> Client {
    PlayerServiceClient::with_interceptor(channel, token)
}

/// `Unavailable: connection refused`: the code, then the server's sentence.
pub fn status_error(status: &tonic::Status) -> anyhow::Error {
    crate::grpc::status_error(status)
}

/// Errors that another attempt cannot cure: a resuming client stops on these instead of
/// retrying forever.
pub(crate) fn is_permanent(code: tonic::Code) -> bool {
    use tonic::Code;
    matches!(
        code,
        Code::Unimplemented
            | Code::Unauthenticated
            | Code::PermissionDenied
            | Code::NotFound
            | Code::InvalidArgument
    )
}

/// 128 random bits as a UUID-shaped string: a fresh idempotency key.
pub fn fresh_key() -> anyhow::Result<String> {
    crate::croupier::fresh_command_id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_and_ca_must_agree() {
        let args = |server: &str, ca: Option<&str>| ServerArgs {
            server: server.to_owned(),
            ca_cert: ca.map(PathBuf::from),
        };
        assert!(args("http://127.0.0.1:7102", None).endpoint().is_ok());
        let err = args("https://h:1", None).endpoint().expect_err("no CA");
        assert!(format!("{err:#}").contains("--ca-cert"), "{err:#}");
        let err = args("http://h:1", Some("ca.pem"))
            .endpoint()
            .expect_err("CA on http");
        assert!(format!("{err:#}").contains("https://"), "{err:#}");
        let err = args("not a url", None).endpoint().expect_err("garbage");
        let err = format!("{err:#}");
        assert!(
            err.starts_with("--server: ") && err.contains("not a URL"),
            "{err}"
        );
    }

    #[test]
    fn permanent_codes() {
        assert!(is_permanent(tonic::Code::Unimplemented));
        assert!(is_permanent(tonic::Code::Unauthenticated));
        assert!(!is_permanent(tonic::Code::Unavailable));
        assert!(!is_permanent(tonic::Code::Internal));
    }
}
