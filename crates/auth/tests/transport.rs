//! Plaintext only on loopback.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use banco_auth::{TransportPolicyError, require_tls_unless_loopback};

#[test]
fn plaintext_is_allowed_on_loopback_only() {
    for addr in [
        "127.0.0.1:50051",
        "127.8.9.10:1",
        "[::1]:50051",
        "[::ffff:127.0.0.1]:5",
    ] {
        let addr: SocketAddr = addr.parse().unwrap();
        assert_eq!(require_tls_unless_loopback(addr, false), Ok(()), "{addr}");
    }
    for addr in [
        "0.0.0.0:50051",
        "[::]:50051",
        "10.0.0.5:50051",
        "[2001:db8::1]:1",
    ] {
        let addr: SocketAddr = addr.parse().unwrap();
        let err = require_tls_unless_loopback(addr, false).unwrap_err();
        assert_eq!(err, TransportPolicyError::PlaintextBeyondLoopback(addr));
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
        assert!(err.to_string().contains("TLS"), "{err}");
        assert_eq!(
            require_tls_unless_loopback(addr, true),
            Ok(()),
            "{addr} with TLS"
        );
    }
}
