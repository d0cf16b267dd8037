//! Signed, expiring bearer tokens with a role and a subject, and the gRPC interceptor that checks them.
//!
//! A token is `banco1.<base64url(JSON claims)>.<base64url(ed25519 signature)>`, the signature
//! covering the ASCII bytes `banco1.<claims part>`. Ed25519 lets every service verify with the
//! public key alone, so only the machine that runs `banco token issue` holds a secret.
//!
//! - [`Issuer`] signs tokens, [`Verifier`] checks them (signature, key id, audience, time).
//! - [`keys`] generates, saves and loads the key files.
//! - [`AuthInterceptor`] guards a tonic service by role; [`caller`] hands the verified
//!   [`Claims`] to handlers; [`BearerToken`] attaches a token to outgoing requests.
//! - [`client`] sets up a client: the endpoint (TLS or not), the token file, fresh ids.
//! - [`require_tls_unless_loopback`] enforces "plaintext only on loopback"; [`ServerTls`]
//!   is the checked certificate and key a server needs to go beyond it, [`ClientTls`] the
//!   checked CA a client trusts to reach such a server.

mod claims;
pub mod client;
mod error;
mod interceptor;
pub mod keys;
mod role;
mod tls;
mod token;
mod transport;

pub use claims::{Claims, MAX_NAME_LEN, check_subject};
pub use ed25519_dalek::{SigningKey, VerifyingKey};
pub use error::TokenError;
pub use interceptor::{AuthInterceptor, BearerToken, Caller, caller};
pub use keys::{KeyError, key_id};
pub use role::{Role, UnknownRole};
pub use tls::{ClientTls, ServerTls, TlsError, error_chain};
pub use token::{DEFAULT_MAX_TTL, DEFAULT_SKEW, Issuer, MAX_TOKEN_LEN, TOKEN_PREFIX, Verifier};
pub use transport::{TransportPolicyError, require_tls_unless_loopback};
