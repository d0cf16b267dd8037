//! The transport rule: plaintext gRPC only on loopback, TLS everywhere else.

use std::net::SocketAddr;

/// Serving plaintext on an address other hosts can reach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportPolicyError {
    /// Plaintext requested on a non-loopback address (including 0.0.0.0 and ::).
    #[error(
        "refusing to serve plaintext gRPC on {0}: it is not a loopback address, so bearer \
         tokens would cross the network in clear; configure TLS (certificate and key) or \
         bind to 127.0.0.1 / [::1]"
    )]
    PlaintextBeyondLoopback(SocketAddr),
}

/// Allows plaintext only when `addr` is loopback (127.0.0.0/8, ::1, or ::ffff:127.x.y.z);
/// any address is fine with TLS. Wildcards (0.0.0.0, ::) count as reachable from outside.
pub fn require_tls_unless_loopback(
    addr: SocketAddr,
    tls_configured: bool,
) -> Result<(), TransportPolicyError> {
    if tls_configured || addr.ip().to_canonical().is_loopback() {
        Ok(())
    } else {
        Err(TransportPolicyError::PlaintextBeyondLoopback(addr))
    }
}
