//! Why a token could not be issued or was refused. Messages never contain the token.

use std::fmt;

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
    #[error("token expired at {}; it is now {}", Instant(*exp), Instant(*now))]
    Expired {
        /// Expiry in the token.
        exp: u64,
        /// The verifier's clock.
        now: u64,
    },
    /// Issued in the future, beyond the allowed clock skew.
    #[error("token not yet valid: issued at {} but it is now {}", Instant(*iat), Instant(*now))]
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

/// A token's instant (unix seconds, its claims' unit) in RFC 3339, UTC: exact, and the
/// same wherever the reader is. A claim past the calendar (year 9999) is shown as the
/// number it is.
struct Instant(u64);

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match i64::try_from(self.0)
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
        {
            Some(at) => write!(f, "{at}"),
            None => write!(f, "{} (unix seconds, past the calendar)", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TokenError;

    #[test]
    fn token_times_read_as_rfc_3339_utc() {
        let expired = TokenError::Expired {
            exp: 1_796_153_182,
            now: 1_796_160_382,
        };
        assert_eq!(
            expired.to_string(),
            "token expired at 2026-12-01T19:26:22Z; it is now 2026-12-01T21:26:22Z"
        );
        let early = TokenError::NotYetValid {
            iat: 1_796_160_382,
            now: 1_796_153_182,
        };
        assert_eq!(
            early.to_string(),
            "token not yet valid: issued at 2026-12-01T21:26:22Z but it is now 2026-12-01T19:26:22Z"
        );
        let far = TokenError::Expired {
            exp: u64::MAX,
            now: 0,
        };
        assert_eq!(
            far.to_string(),
            "token expired at 18446744073709551615 (unix seconds, past the calendar); it is now 1970-01-01T00:00:00Z"
        );
    }
}
