//! Why a token could not be issued or was refused. Messages never contain the token.

/// Why a token could not be issued, or why one was refused.
///
/// No variant carries the token itself (a bearer token is a secret); they carry only the
/// already-checked names and times that explain the refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Longer than [`crate::MAX_TOKEN_LEN`]; refused before any decoding.
    #[error("token is {len} bytes long, more than the maximum {max}")]
    TooLong {
        /// Length of the presented token.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Not of the form `banco1.<claims>.<signature>`, or the claims do not parse.
    #[error("malformed token: {0}")]
    Malformed(String),
    /// The signature does not match the claims under the named key.
    #[error("bad token signature: not signed by the key it names, or altered after signing")]
    BadSignature,
    /// The key id is not among the verifier's public keys.
    #[error("token signed with unknown key id {0:?}")]
    UnknownKey(String),
    /// `now` is at or past `exp` plus the allowed clock skew.
    #[error("token expired at {exp} (unix seconds); it is now {now}")]
    Expired {
        /// Expiry in the token.
        exp: u64,
        /// The verifier's clock.
        now: u64,
    },
    /// Issued in the future, beyond the allowed clock skew.
    #[error("token not yet valid: issued at {iat} (unix seconds) but it is now {now}")]
    NotYetValid {
        /// Issue time in the token.
        iat: u64,
        /// The verifier's clock.
        now: u64,
    },
    /// Issued for another deployment.
    #[error("token is for audience {got:?}, this service expects {expected:?}")]
    WrongAudience {
        /// This verifier's audience.
        expected: String,
        /// The token's audience.
        got: String,
    },
    /// The subject is not 1 to 64 characters of `[A-Za-z0-9._@-]`.
    #[error("bad subject: {0}")]
    BadSubject(String),
    /// Another name field (`aud`, `kid`, `jti`) has bad syntax.
    #[error("bad {field}: {reason}")]
    BadField {
        /// Which claim.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The requested lifetime is zero or longer than the issuer allows.
    #[error("token lifetime {ttl_secs} s is out of range: must be 1 to {max_secs} s")]
    TtlOutOfRange {
        /// Requested lifetime in whole seconds.
        ttl_secs: u64,
        /// The issuer's maximum.
        max_secs: u64,
    },
    /// The given time is before 1970 or so far ahead that `now + ttl` overflows.
    #[error("clock out of range: {0}")]
    Clock(String),
    /// The operating system's random number source failed.
    #[error("cannot draw a random token id from the operating system: {0}")]
    Random(String),
}
