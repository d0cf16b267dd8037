//! What every client of a banco service does first: reach the server (plaintext on
//! `http://`, TLS trusting one CA on `https://`), present its token, and number its
//! requests. Shared by `banco croupier`, `banco player`, `banco audit`, `banco-sim
//! shoe-sim` and the croupier console.

use std::path::{Path, PathBuf};

use tonic::transport::Endpoint;

use crate::claims::Claims;
use crate::error::TokenError;
use crate::interceptor::BearerToken;
use crate::tls::{ClientTls, TlsError};

/// Why a client could not be set up. Each message names the input at fault (the server's
/// address, the CA certificate or the token file) and its value; the command that took it
/// adds its flag.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("server address `{0}`: not a URL")]
    BadUrl(String),
    #[error(
        "server address `{0}`: https needs a CA certificate to trust (the CA that signed the \
         server's certificate)"
    )]
    HttpsNeedsCa(String),
    #[error("server address `{0}`: a CA certificate is given, so use https:// (this URL is not)")]
    CaNeedsHttps(String),
    #[error("CA certificate {path}: {error}")]
    Ca { path: PathBuf, error: TlsError },
    #[error("CA certificate {ca}: {error}")]
    TlsConfig {
        ca: String,
        error: tonic::transport::Error,
    },
    #[error(transparent)]
    BadToken(TokenError),
    #[error("token file {path}: could not read it: {error}")]
    TokenUnreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("token file {path}: not a token: {error}")]
    NotAToken { path: PathBuf, error: TokenError },
}

/// The server's endpoint: plaintext for `http://`, TLS trusting `ca_cert` for `https://`.
/// Each needs the other (tonic would send plaintext to `http://` even with a CA).
pub fn endpoint(server: &str, ca_cert: Option<&Path>) -> Result<Endpoint, ClientError> {
    let endpoint = scheme_checked(server, ca_cert.is_some())?;
    let Some(ca) = ca_cert else {
        return Ok(endpoint);
    };
    let tls = ClientTls::from_ca_pem_file(ca).map_err(|error| ClientError::Ca {
        path: ca.to_owned(),
        error,
    })?;
    with_tls(endpoint, &tls)
}

/// As [`endpoint`], trusting a CA already read (a service's client of another service).
pub fn endpoint_trusting(server: &str, tls: Option<&ClientTls>) -> Result<Endpoint, ClientError> {
    let endpoint = scheme_checked(server, tls.is_some())?;
    match tls {
        Some(tls) => with_tls(endpoint, tls),
        None => Ok(endpoint),
    }
}

/// For a client of several servers, some `https://` and some plaintext on loopback (an
/// edge's broadcasters): TLS trusting `tls` for an `https://` server, plaintext otherwise.
pub fn endpoint_by_scheme(server: &str, tls: Option<&ClientTls>) -> Result<Endpoint, ClientError> {
    let (endpoint, https) = parsed(server)?;
    match (https, tls) {
        (false, _) => Ok(endpoint),
        (true, Some(tls)) => with_tls(endpoint, tls),
        (true, None) => Err(ClientError::HttpsNeedsCa(server.to_owned())),
    }
}

/// `server` as an endpoint, and whether it is `https://`.
fn parsed(server: &str) -> Result<(Endpoint, bool), ClientError> {
    let endpoint = Endpoint::from_shared(server.to_owned())
        .map_err(|_| ClientError::BadUrl(server.to_owned()))?;
    let https = endpoint.uri().scheme_str() == Some("https");
    Ok((endpoint, https))
}

/// `server` as an endpoint, refused when it is `https://` and no CA is given or a CA is
/// given and it is not `https://`.
fn scheme_checked(server: &str, has_ca: bool) -> Result<Endpoint, ClientError> {
    let (endpoint, https) = parsed(server)?;
    match (has_ca, https) {
        (true, true) | (false, false) => Ok(endpoint),
        (false, true) => Err(ClientError::HttpsNeedsCa(server.to_owned())),
        (true, false) => Err(ClientError::CaNeedsHttps(server.to_owned())),
    }
}

fn with_tls(endpoint: Endpoint, tls: &ClientTls) -> Result<Endpoint, ClientError> {
    endpoint
        .tls_config(tls.config())
        .map_err(|error| ClientError::TlsConfig {
            ca: tls.name().to_owned(),
            error,
        })
}

/// `token` (as a token file holds it, trimmed) for every request; the error never quotes it.
pub fn bearer(token: &str) -> Result<BearerToken, ClientError> {
    BearerToken::new(token).map_err(ClientError::BadToken)
}

/// A token file as `banco token issue` writes it.
#[derive(Debug)]
pub struct TokenFile {
    /// To attach to every request.
    pub bearer: BearerToken,
    /// The token's subject as written in it, NOT verified (the client has no public key):
    /// for display only, e.g. the croupier's name on the console. The server decides.
    pub subject: Option<String>,
}

/// Reads a token file; errors name the file and never quote the token.
pub fn read_token_file(path: &Path) -> Result<TokenFile, ClientError> {
    let text = std::fs::read_to_string(path).map_err(|error| ClientError::TokenUnreadable {
        path: path.to_owned(),
        error,
    })?;
    let token = text.trim();
    let bearer = BearerToken::new(token).map_err(|error| ClientError::NotAToken {
        path: path.to_owned(),
        error,
    })?;
    Ok(TokenFile {
        bearer,
        subject: crate::token::unverified_claims(token)
            .ok()
            .map(|c: Claims| c.sub),
    })
}

/// 128 random bits as a UUID-shaped string (version 4): a fresh command id or idempotency
/// key, so that ids from different processes and runs never meet.
pub fn fresh_id() -> Result<String, getrandom::Error> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    // banco-records, whose hex helper the others use, depends on this crate: 16 bytes are
    // one u128, which formats as hex itself.
    let hex = format!("{:032x}", u128::from_be_bytes(b));
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_uuid_shaped() {
        let a = fresh_id().unwrap_or_default();
        let b = fresh_id().unwrap_or_default();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
    }

    #[test]
    fn server_and_ca_must_agree() {
        assert!(endpoint("http://127.0.0.1:7102", None).is_ok());
        let err = endpoint("https://h:1", None).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("needs a CA certificate")));
        let err = endpoint("http://h:1", Some(Path::new("ca.pem")))
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("https://")));
        let err = endpoint("not a url", None).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("server address `not a url`: not a URL")));
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn by_scheme_the_ca_serves_https_and_plaintext_stays_plaintext() {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let ca = ClientTls::from_ca_pem(made.cert.pem().as_bytes()).unwrap();
        assert!(endpoint_by_scheme("http://127.0.0.1:7102", Some(&ca)).is_ok());
        assert!(endpoint_by_scheme("https://localhost:7102", Some(&ca)).is_ok());
        assert!(endpoint_by_scheme("http://127.0.0.1:7102", None).is_ok());
        assert!(matches!(
            endpoint_by_scheme("https://localhost:7102", None),
            Err(ClientError::HttpsNeedsCa(_))
        ));
        // A single server's client refuses the CA with plaintext instead.
        assert!(matches!(
            endpoint_trusting("http://127.0.0.1:7102", Some(&ca)),
            Err(ClientError::CaNeedsHttps(_))
        ));
    }

    #[test]
    fn messages_name_no_flag() {
        let errors = [
            endpoint("not a url", None).err(),
            endpoint("https://h:1", None).err(),
            endpoint("http://h:1", Some(Path::new("ca.pem"))).err(),
            endpoint("https://h:1", Some(Path::new("/nonexistent/ca.pem"))).err(),
            read_token_file(Path::new("/nonexistent/t.token")).err(),
        ];
        for err in errors {
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(!message.is_empty() && !message.contains("--"), "{message}");
        }
    }

    #[test]
    fn token_file_errors_name_the_file() {
        let err = read_token_file(Path::new("/nonexistent/croupier.token"))
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("/nonexistent/croupier.token")));
    }
}
