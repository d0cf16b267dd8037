//! The server side of "TLS beyond loopback": a certificate chain and its private key, read
//! from PEM files and checked when loaded, so a bad file is reported by name at start-up
//! rather than as an anonymous handshake failure later.

use std::fmt;
use std::path::Path;

use tonic::transport::{Identity, Server, ServerTlsConfig};

/// Why the TLS certificate or key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file could not be read.
    #[error("could not read the TLS {what} file {name}: {error}")]
    Read {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file's path.
        name: String,
        /// Why (in the message, not as a source, so it is printed once).
        error: std::io::Error,
    },
    /// The file is not PEM, or holds no block of the expected kind.
    #[error("the TLS {what} file {name} holds no PEM `{expected}` block")]
    NotPem {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file's path (or `<in memory>`).
        name: String,
        /// The PEM label looked for.
        expected: &'static str,
    },
    /// Both are PEM, but the TLS library refused them (bad encoding, unsupported key type).
    #[error("the TLS certificate {cert} and private key {key} were rejected: {reason}")]
    Rejected {
        /// The certificate's path (or `<in memory>`).
        cert: String,
        /// The key's path (or `<in memory>`).
        key: String,
        /// The TLS library's explanation.
        reason: String,
    },
}

/// A checked server identity (certificate chain and private key) for tonic's rustls server.
///
/// Debug output names where the identity came from, never the key.
#[derive(Clone)]
pub struct ServerTls {
    config: ServerTlsConfig,
    origin: String,
}

const IN_MEMORY: &str = "<in memory>";

impl ServerTls {
    /// Reads and checks a PEM certificate chain (leaf first) and its PEM private key
    /// (PKCS#8, PKCS#1 or SEC1). Errors name the offending file.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        let cert_name = cert.display().to_string();
        let key_name = key.display().to_string();
        let cert_pem = std::fs::read(cert).map_err(|error| TlsError::Read {
            what: "certificate",
            name: cert_name.clone(),
            error,
        })?;
        let key_pem = std::fs::read(key).map_err(|error| TlsError::Read {
            what: "private key",
            name: key_name.clone(),
            error,
        })?;
        ServerTls::checked(&cert_pem, &key_pem, cert_name, key_name)
    }

    /// As [`ServerTls::from_pem_files`], from PEM text already in memory.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<ServerTls, TlsError> {
        ServerTls::checked(
            cert_pem,
            key_pem,
            IN_MEMORY.to_owned(),
            IN_MEMORY.to_owned(),
        )
    }

    /// The tonic configuration, for `Server::builder().tls_config(..)`.
    pub fn config(&self) -> ServerTlsConfig {
        self.config.clone()
    }

    fn checked(
        cert_pem: &[u8],
        key_pem: &[u8],
        cert_name: String,
        key_name: String,
    ) -> Result<ServerTls, TlsError> {
        if !contains(cert_pem, b"-----BEGIN CERTIFICATE-----") {
            return Err(TlsError::NotPem {
                what: "certificate",
                name: cert_name,
                expected: "CERTIFICATE",
            });
        }
        if !(contains(key_pem, b"-----BEGIN ") && contains(key_pem, b"PRIVATE KEY-----")) {
            return Err(TlsError::NotPem {
                what: "private key",
                name: key_name,
                expected: "PRIVATE KEY",
            });
        }
        let config = ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem));
        // Building the acceptor parses both and pairs them: the same check the server
        // makes when it starts, done here so the error can name the files.
        if let Err(error) = Server::builder().tls_config(config.clone()) {
            return Err(TlsError::Rejected {
                cert: cert_name,
                key: key_name,
                reason: error_chain(&error),
            });
        }
        let origin = if cert_name == IN_MEMORY {
            cert_name
        } else {
            format!("{cert_name} + {key_name}")
        };
        Ok(ServerTls { config, origin })
    }
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// tonic's transport error says only "transport error"; the cause is in its sources.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
