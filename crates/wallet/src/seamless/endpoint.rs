//! Where the operator's wallet is (`seamless+https://casino.example/banco/`) and how it is
//! reached: TLS (rustls on ring) beyond loopback, plain HTTP only to this machine.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};

use super::protocol::Operation;

/// What `--wallet` and `banco wallet conformance` may start with; plain `https://` and
/// `http://` are taken too.
pub const URL_PREFIX: &str = "seamless+";

/// Why a wallet URL or its CA cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("wallet URL `{url}`: {why}")]
    BadUrl { url: String, why: String },
    #[error(
        "wallet URL `{url}`: plain http goes only to this machine (127.0.0.1, [::1], \
         localhost), and {host} is not; use seamless+https://"
    )]
    PlaintextBeyondLoopback { url: String, host: String },
    #[error("wallet URL `{url}`: a CA file is only for https")]
    CaWithoutTls { url: String },
    #[error("the wallet's CA file {path}: {why}")]
    Ca { path: String, why: String },
    #[error("TLS could not be set up: {0}")]
    Tls(String),
}

/// A checked operator URL: its prefix (ending in `/`), and the TLS it is reached with.
#[derive(Clone)]
pub struct Endpoint {
    base: String,
    host: String,
    port: u16,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

impl Endpoint {
    /// `url` is `seamless+https://host[:port]/prefix/` (or `seamless+http://` to a loopback
    /// host). An https server's certificate must chain to the web's public roots, or to the
    /// CA(s) in `ca` (PEM) instead when given (a casino's own CA).
    pub fn parse(url: &str, ca: Option<&Path>) -> Result<Endpoint, EndpointError> {
        let bad = |why: &str| EndpointError::BadUrl {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let plain = url.strip_prefix(URL_PREFIX).unwrap_or(url);
        let tls = if plain.starts_with("https://") {
            true
        } else if plain.starts_with("http://") {
            false
        } else {
            return Err(bad(
                "the scheme must be seamless+https:// or seamless+http://",
            ));
        };
        let uri: http::Uri = plain
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad(
                "credentials in the URL are not used: the requests are signed",
            ));
        }
        if uri.query().is_some() {
            return Err(bad(
                "a query is not allowed: the operation's name is appended",
            ));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let mut path = uri.path().to_owned();
        if !path.ends_with('/') {
            path.push('/');
        }
        let base = format!(
            "{}://{}{path}",
            if tls { "https" } else { "http" },
            authority.as_str()
        );
        let tls = if tls {
            let name = ServerName::try_from(host.to_owned())
                .map_err(|_| bad("the host is not a DNS name or an IP address"))?;
            let config = client_config(ca)?;
            Some((tokio_rustls::TlsConnector::from(config), name))
        } else {
            if ca.is_some() {
                return Err(EndpointError::CaWithoutTls {
                    url: url.to_owned(),
                });
            }
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<IpAddr>()
                    .is_ok_and(|ip| ip.to_canonical().is_loopback());
            if !loopback {
                return Err(EndpointError::PlaintextBeyondLoopback {
                    url: url.to_owned(),
                    host: host.to_owned(),
                });
            }
            None
        };
        Ok(Endpoint {
            base,
            host: host.to_owned(),
            port,
            tls,
        })
    }

    /// The URL an operation is posted to.
    pub fn url(&self, operation: Operation) -> String {
        format!("{}{}", self.base, operation.name())
    }

    /// The operator's prefix, as the requests go to it.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub(super) fn host(&self) -> &str {
        &self.host
    }

    pub(super) fn port(&self) -> u16 {
        self.port
    }

    pub(super) fn tls(&self) -> Option<&(tokio_rustls::TlsConnector, ServerName<'static>)> {
        self.tls.as_ref()
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base", &self.base)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// rustls on ring, TLS 1.2 and 1.3, HTTP/1.1 by ALPN, trusting `ca` or the public roots.
fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, EndpointError> {
    let mut roots = RootCertStore::empty();
    match ca {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(path) => {
            let ca_error = |why: String| EndpointError::Ca {
                path: path.display().to_string(),
                why,
            };
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| ca_error(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ca_error(e.to_string()))?;
            if certs.is_empty() {
                return Err(ca_error("no PEM `CERTIFICATE` block".to_owned()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| ca_error(e.to_string()))?;
            }
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| EndpointError::Tls(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn operations_go_under_the_operators_prefix() {
        let endpoint = Endpoint::parse("seamless+https://casino.example/banco", None).unwrap();
        assert_eq!(
            endpoint.url(Operation::Debit),
            "https://casino.example/banco/debit"
        );
        assert_eq!(endpoint.port(), 443);
        let endpoint = Endpoint::parse("http://127.0.0.1:8080/", None).unwrap();
        assert_eq!(
            endpoint.url(Operation::Balance),
            "http://127.0.0.1:8080/balance"
        );
        let endpoint = Endpoint::parse("seamless+http://[::1]:9/w/", None).unwrap();
        assert_eq!(endpoint.host(), "::1");
        assert_eq!(endpoint.url(Operation::Cancel), "http://[::1]:9/w/cancel");
        assert!(Endpoint::parse("seamless+http://localhost:9", None).is_ok());
    }

    #[test]
    fn plaintext_beyond_loopback_and_odd_urls_are_refused() {
        let err = Endpoint::parse("seamless+http://casino.example/banco/", None).unwrap_err();
        assert!(
            matches!(&err, EndpointError::PlaintextBeyondLoopback { host, .. } if host == "casino.example"),
            "{err}"
        );
        let err = Endpoint::parse("seamless+http://10.0.0.8/", None).unwrap_err();
        assert!(err.to_string().contains("10.0.0.8 is not"), "{err}");
        for (url, needle) in [
            ("seamless+ftp://casino.example/", "scheme"),
            ("casino.example/banco", "scheme"),
            ("https://user:pw@casino.example/", "credentials"),
            ("https://casino.example/banco?x=1", "query"),
        ] {
            let err = Endpoint::parse(url, None).unwrap_err();
            assert!(err.to_string().contains(needle), "{url}: {err}");
            assert!(err.to_string().contains(url), "{url}: {err}");
        }
        let err = Endpoint::parse("http://127.0.0.1/", Some(Path::new("ca.pem"))).unwrap_err();
        assert!(matches!(err, EndpointError::CaWithoutTls { .. }), "{err}");
        let err = Endpoint::parse(
            "https://casino.example/",
            Some(Path::new("/nonexistent.pem")),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent.pem"), "{err}");
    }
}
