//! # banco-serving
//!
//! What every banco gRPC server does the same way, written once: the validator and the
//! archive serve through [`GrpcServer`]; the broadcaster, which speaks
//! HTTP/2 itself, takes the pieces it shares ([`listening_address`],
//! [`add_health_and_reflection`], [`ServeError`]).
//!
//! - [`GrpcServer`]: tonic's server over TLS from [`banco_auth::ServerTls`] (plaintext only
//!   on loopback), gRPC health and reflection over [`banco_wire::FILE_DESCRIPTOR_SET`],
//!   each service behind the token interceptor with the roles it admits, replies sent
//!   without Nagle's delay.
//! - [`require_role`]: the role check of one call, for services whose calls admit
//!   different roles.
//! - [`RequestMetrics`]: every RPC counted by its result, and how long it took.
//! - [`ServeError`]: why a server could not start or stopped.

mod error;
mod grpc;
mod metrics;
mod roles;

pub use error::ServeError;
pub use grpc::{GrpcServer, add_health_and_reflection, listening_address};
pub use metrics::{RequestMetrics, code_label};
pub use roles::require_role;
