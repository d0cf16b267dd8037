//! RulesService: the stateless rules authority.
//!
//! Every answer is `banco-rules` applied to the request and nothing else: the service keeps
//! no state between calls, so any replica answers the same and an auditor can replay the
//! archive through it. The table actor asks it about every card before accepting one.
//!
//! - [`rules`]: the pure answers, one function per RPC, testable without a socket.
//! - [`service`]: the tonic service over them, and [`serve`] with health and reflection.

mod metrics;
pub mod rules;
mod service;

pub use banco_auth::{ServerTls, TlsError};
pub use banco_serving::ServeError;
pub use metrics::ValidatorMetrics;
pub use service::{ALLOWED_ROLES, RulesServer, ServeOptions, serve, serve_with_tls};
