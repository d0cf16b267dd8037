//! What a token asserts, and the syntax of the names inside it.

use serde::{Deserialize, Serialize};

use crate::error::TokenError;
use crate::role::Role;

/// Longest subject, audience, key id or token id, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The signed content of a token. Once returned by [`crate::Verifier::verify`] every field
/// has been checked: signature, key, audience, time window and name syntax.
///
/// Parsing refuses unknown and duplicate fields so that a token means exactly what the
/// issuer wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// Who: a player's account, a croupier's name, a service's name.
    pub sub: String,
    /// What the bearer may do.
    pub role: Role,
    /// Which deployment the token is for; another deployment refuses it.
    pub aud: String,
    /// Issued at, unix seconds.
    pub iat: u64,
    /// Expires at, unix seconds (exclusive, before clock skew allowance).
    pub exp: u64,
    /// Which signing key made the signature.
    pub kid: String,
    /// Random token id, for logs and revocation lists.
    pub jti: String,
}

impl Claims {
    /// Checks the syntax of every name field (not the signature nor the time).
    pub(crate) fn check_names(&self) -> Result<(), TokenError> {
        check_subject(&self.sub)?;
        check_name("aud", &self.aud)?;
        check_name("kid", &self.kid)?;
        check_name("jti", &self.jti)?;
        if self.exp <= self.iat {
            return Err(TokenError::Malformed(format!(
                "exp {} is not after iat {}",
                self.exp, self.iat
            )));
        }
        Ok(())
    }
}

/// Checks a subject: 1 to 64 characters of `[A-Za-z0-9._@-]`.
pub fn check_subject(sub: &str) -> Result<(), TokenError> {
    name_problem(sub).map_or(Ok(()), |why| Err(TokenError::BadSubject(why)))
}

/// Checks the syntax of `aud`, `kid` or `jti`: same alphabet and length as a subject.
pub(crate) fn check_name(field: &'static str, value: &str) -> Result<(), TokenError> {
    name_problem(value).map_or(Ok(()), |reason| Err(TokenError::BadField { field, reason }))
}

/// Why `value` is not a valid name, or `None` if it is. The message quotes at most the
/// first 64 characters of the value.
fn name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("is empty".to_owned());
    }
    if value.len() > MAX_NAME_LEN {
        return Some(format!(
            "is {} bytes long, more than {MAX_NAME_LEN}",
            value.len()
        ));
    }
    value
        .char_indices()
        .find(|&(_, c)| !is_name_char(c))
        .map(|(at, c)| format!("{value:?} has {c:?} at byte {at}; allowed are A-Z a-z 0-9 . _ @ -"))
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-')
}
