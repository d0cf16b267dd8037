//! The seamless protocol (`proto/seamless-wallet.openapi.yaml`): the tables spend through an
//! operator's own wallet over HTTP/JSON, as live-game providers do with casinos.
//!
//! - [`SeamlessWallet`] is the [`Wallet`](crate::Wallet) a table is given for
//!   `--wallet seamless+https://…`: balance, debit, credit and cancel, each with the
//!   movement's transaction id, a fresh request id per attempt and `retransmission` on
//!   retries, signed with the shared secret; answers are only taken when signed by it.
//! - [`serve`] answers the same protocol from any wallet (banco's own store behind
//!   `banco wallet --seamless-listen`), so the adapter is tested end to end against a real
//!   server.
//! - [`conformance`] runs the checks an operator's implementation must pass.

mod adapter;
mod client;
pub mod conformance;
mod endpoint;
#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod protocol;
mod server;
mod signature;

pub use adapter::{SeamlessConfig, SeamlessWallet};
pub use client::{Exchange, Fault, HttpClient};
pub use endpoint::{Endpoint, EndpointError, URL_PREFIX};
pub use server::{Responder, ServeError, serve, serve_tls};
pub use signature::{
    MIN_SECRET_LEN, SIGNATURE_HEADER, SeamlessSecret, SecretError, SignatureError,
};
