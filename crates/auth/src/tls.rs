//! "TLS beyond loopback": the server side (a certificate chain and its private key) and the
//! client side (the CA certificate(s) a server must be signed by), read from PEM files and
//! checked when loaded, so a bad file is reported by name at start-up rather than as an
//! anonymous handshake failure later.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig};

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
    /// The CA file is PEM, but the TLS library refused its certificate(s).
    #[error("the TLS CA certificate file {name} was rejected: {reason}")]
    CaRejected {
        /// The CA file's path (or `<in memory>`).
        name: String,
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
    /// The same identity for a server that runs its own HTTP/2 (the broadcaster).
    rustls: Arc<rustls::ServerConfig>,
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

    /// The rustls configuration (ring; TLS 1.2 and 1.3; ALPN `h2` only, as gRPC needs), for
    /// a server that accepts TLS itself.
    pub fn rustls_config(&self) -> Arc<rustls::ServerConfig> {
        Arc::clone(&self.rustls)
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
        let rustls =
            rustls_server_config(cert_pem, key_pem).map_err(|reason| TlsError::Rejected {
                cert: cert_name.clone(),
                key: key_name.clone(),
                reason,
            })?;
        let origin = if cert_name == IN_MEMORY {
            cert_name
        } else {
            format!("{cert_name} + {key_name}")
        };
        Ok(ServerTls {
            config,
            rustls,
            origin,
        })
    }
}

/// The rustls server configuration of a PEM chain and key; why not, as text.
fn rustls_server_config(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the certificate chain: {e}"))?;
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("the private key: {e}"))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// A checked client trust anchor (the CA certificate(s) the server's chain must end in) for
/// tonic's rustls client, and optionally the name the server's certificate must carry when it
/// differs from the URL's host (e.g. a certificate for `validator.casino.lan` reached by IP).
///
/// Only this CA is trusted, not the system's roots: a table talks to its own services.
#[derive(Clone)]
pub struct ClientTls {
    ca_pem: Vec<u8>,
    domain: Option<String>,
    origin: String,
}

impl ClientTls {
    /// Reads and checks a PEM file of one or more CA certificates. Errors name the file.
    pub fn from_ca_pem_file(path: &Path) -> Result<ClientTls, TlsError> {
        let name = path.display().to_string();
        let pem = std::fs::read(path).map_err(|error| TlsError::Read {
            what: "CA certificate",
            name: name.clone(),
            error,
        })?;
        ClientTls::checked(pem, name)
    }

    /// As [`ClientTls::from_ca_pem_file`], from PEM text already in memory.
    pub fn from_ca_pem(pem: &[u8]) -> Result<ClientTls, TlsError> {
        ClientTls::checked(pem.to_vec(), IN_MEMORY.to_owned())
    }

    /// Checks the server's certificate against `domain` instead of the URL's host.
    #[must_use]
    pub fn with_domain(mut self, domain: impl Into<String>) -> ClientTls {
        self.domain = Some(domain.into());
        self
    }

    /// Where the CA was read from (its file, or `<in memory>`), to name it in errors.
    pub fn name(&self) -> &str {
        &self.origin
    }

    /// The name the server's certificate is checked against, when overridden.
    pub fn domain(&self) -> Option<&str> {
        self.domain.as_deref()
    }

    /// The tonic configuration, for `Endpoint::tls_config(..)` (with an `https://` URL:
    /// tonic sends plaintext to an `http://` URL even with TLS configured).
    pub fn config(&self) -> ClientTlsConfig {
        let config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&self.ca_pem));
        match &self.domain {
            Some(domain) => config.domain_name(domain.clone()),
            None => config,
        }
    }

    fn checked(pem: Vec<u8>, name: String) -> Result<ClientTls, TlsError> {
        if !contains(&pem, b"-----BEGIN CERTIFICATE-----") {
            return Err(TlsError::NotPem {
                what: "CA certificate",
                name,
                expected: "CERTIFICATE",
            });
        }
        let tls = ClientTls {
            ca_pem: pem,
            domain: None,
            origin: name,
        };
        // Building the connector parses the certificates into trust anchors: the same check
        // the first connection makes, done here so the error can name the file.
        if let Err(error) = Endpoint::from_static("https://localhost").tls_config(tls.config()) {
            return Err(TlsError::CaRejected {
                name: tls.origin,
                reason: error_chain(&error),
            });
        }
        Ok(tls)
    }
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientTls")
            .field("ca", &self.origin)
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// An error with its sources, `: `-separated: tonic's transport error says only "transport
/// error", hyper's "client error (Connect)"; the cause is in their sources.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
