//! Issuing and verifying `banco1.` tokens.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

use crate::claims::{Claims, check_name, check_subject};
use crate::error::TokenError;
use crate::keys::key_id;
use crate::role::Role;

/// Every token starts with this; the version is part of what is signed.
pub const TOKEN_PREFIX: &str = "banco1.";

/// Longest token accepted, in bytes; longer input is refused before decoding.
pub const MAX_TOKEN_LEN: usize = 4096;

/// Default allowance for clocks that disagree between issuer and verifier.
pub const DEFAULT_SKEW: Duration = Duration::from_secs(30);

/// Default longest lifetime an [`Issuer`] will sign: 30 days.
pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Tokens whose signature a [`Verifier`] remembers having checked. A player sends the same
/// token with every bet, and an ed25519 check costs tens of microseconds: at thousands of
/// bets a second it was a fifth of the broadcaster's CPU.
const VERIFIED_CACHE: usize = 16_384;

/// Random bytes in a token id (22 base64url characters).
const JTI_BYTES: usize = 16;

/// Signs tokens for one audience with one key. Holds the secret key: keep it off services
/// that only verify.
#[derive(Clone)]
pub struct Issuer {
    key: SigningKey,
    kid: String,
    aud: String,
    max_ttl: Duration,
}

impl fmt::Debug for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issuer")
            .field("kid", &self.kid)
            .field("aud", &self.aud)
            .field("max_ttl", &self.max_ttl)
            .finish_non_exhaustive()
    }
}

impl Issuer {
    /// An issuer for `audience` whose key id is derived from the public key ([`key_id`]).
    pub fn new(key: SigningKey, audience: &str) -> Result<Self, TokenError> {
        check_name("aud", audience)?;
        let kid = key_id(&key.verifying_key());
        Ok(Self {
            key,
            kid,
            aud: audience.to_owned(),
            max_ttl: DEFAULT_MAX_TTL,
        })
    }

    /// Replaces the derived key id by an explicit one (same syntax as a subject).
    pub fn with_kid(mut self, kid: &str) -> Result<Self, TokenError> {
        check_name("kid", kid)?;
        self.kid = kid.to_owned();
        Ok(self)
    }

    /// Sets the longest lifetime [`Issuer::issue`] accepts.
    pub fn with_max_ttl(mut self, max_ttl: Duration) -> Self {
        self.max_ttl = max_ttl;
        self
    }

    /// The key id written into every token.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The audience written into every token.
    pub fn audience(&self) -> &str {
        &self.aud
    }

    /// The public half of the signing key, for [`Verifier::with_key`] and the public key file.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// A verifier that accepts exactly this issuer's tokens (same audience and key id).
    pub fn verifier(&self) -> Verifier {
        // `aud` and `kid` were checked when this issuer was built.
        Verifier {
            keys: BTreeMap::from([(self.kid.clone(), self.verifying_key())]),
            aud: self.aud.clone(),
            skew: DEFAULT_SKEW,
            verified: Arc::default(),
        }
    }

    /// Signs a token for `sub` with `role`, valid from `now` for `ttl` (whole seconds,
    /// 1 s up to the issuer's maximum).
    pub fn issue(
        &self,
        sub: &str,
        role: Role,
        ttl: Duration,
        now: SystemTime,
    ) -> Result<String, TokenError> {
        check_subject(sub)?;
        let ttl_secs = ttl.as_secs();
        if ttl_secs == 0 || ttl > self.max_ttl {
            return Err(TokenError::TtlOutOfRange {
                ttl_secs,
                max_secs: self.max_ttl.as_secs(),
            });
        }
        let iat = unix_secs(now)?;
        let exp = iat
            .checked_add(ttl_secs)
            .ok_or_else(|| TokenError::Clock(format!("{iat} + {ttl_secs} s overflows")))?;
        let mut jti = [0u8; JTI_BYTES];
        getrandom::fill(&mut jti).map_err(|e| TokenError::Random(e.to_string()))?;
        let claims = Claims {
            sub: sub.to_owned(),
            role,
            aud: self.aud.clone(),
            iat,
            exp,
            kid: self.kid.clone(),
            jti: URL_SAFE_NO_PAD.encode(jti),
        };
        self.sign(&claims)
    }

    /// Signs arbitrary claims as they are. For tests and tools that need a precise token;
    /// [`Issuer::issue`] is the normal path.
    pub fn sign(&self, claims: &Claims) -> Result<String, TokenError> {
        let json = serde_json::to_vec(claims)
            .map_err(|e| TokenError::Malformed(format!("cannot encode claims: {e}")))?;
        let mut token = String::with_capacity(MAX_TOKEN_LEN / 4);
        token.push_str(TOKEN_PREFIX);
        URL_SAFE_NO_PAD.encode_string(json, &mut token);
        let signature = self.key.sign(token.as_bytes());
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.to_bytes(), &mut token);
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong {
                len: token.len(),
                max: MAX_TOKEN_LEN,
            });
        }
        Ok(token)
    }
}

/// Checks tokens against a set of public keys (by key id), one audience and a clock skew.
/// Holds no secret; share it between connections with an `Arc`.
#[derive(Clone)]
pub struct Verifier {
    keys: BTreeMap<String, VerifyingKey>,
    aud: String,
    skew: Duration,
    /// Exact token text → its claims, for tokens whose signature and audience were checked
    /// (the key is the whole token, signature included, so nothing unsigned can hit it).
    /// Times are still checked on every call, so an expired token is refused.
    verified: Arc<Mutex<HashMap<Box<str>, Claims>>>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("kids", &self.keys.keys().collect::<Vec<_>>())
            .field("aud", &self.aud)
            .field("skew", &self.skew)
            .finish()
    }
}

impl Verifier {
    /// A verifier for `audience` with no keys yet (it refuses every token until given one).
    pub fn new(audience: &str) -> Result<Self, TokenError> {
        check_name("aud", audience)?;
        Ok(Self {
            keys: BTreeMap::new(),
            aud: audience.to_owned(),
            skew: DEFAULT_SKEW,
            verified: Arc::default(),
        })
    }

    /// Trusts `key` for tokens naming `kid`. Several keys allow rotation.
    pub fn with_key(mut self, kid: &str, key: VerifyingKey) -> Result<Self, TokenError> {
        check_name("kid", kid)?;
        self.keys.insert(kid.to_owned(), key);
        self.verified = Arc::default();
        Ok(self)
    }

    /// Trusts `key` under its derived key id ([`key_id`]), the id [`Issuer::new`] uses.
    pub fn with_public_key(mut self, key: VerifyingKey) -> Self {
        self.keys.insert(key_id(&key), key);
        self.verified = Arc::default();
        self
    }

    /// Sets the clock skew allowed on both `iat` and `exp` (default 30 s).
    pub fn with_skew(mut self, skew: Duration) -> Self {
        self.skew = skew;
        self
    }

    /// The audience this verifier accepts.
    pub fn audience(&self) -> &str {
        &self.aud
    }

    /// Checks `token` completely and returns its claims: length, syntax, key id, signature,
    /// audience, time window (with skew) and name syntax.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<Claims, TokenError> {
        let now = unix_secs(now)?;
        let cached = self
            .verified
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .cloned();
        let claims = match cached {
            Some(claims) => claims,
            None => {
                let claims = self.verify_signature(token)?;
                let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
                // Forgetting everything at once keeps the bound without bookkeeping; the
                // tokens in use are verified again on their next call.
                if verified.len() >= VERIFIED_CACHE {
                    verified.clear();
                }
                verified.insert(token.into(), claims.clone());
                claims
            }
        };
        self.check_times(claims, now)
    }

    /// Syntax, key id, signature and audience: everything that does not depend on the time.
    fn verify_signature(&self, token: &str) -> Result<Claims, TokenError> {
        let (signed, claims, signature) = split(token)?;
        let key = self
            .keys
            .get(&claims.kid)
            .ok_or_else(|| TokenError::UnknownKey(claims.kid.clone()))?;
        key.verify_strict(signed.as_bytes(), &signature)
            .map_err(|_| TokenError::BadSignature)?;
        if claims.aud != self.aud {
            return Err(TokenError::WrongAudience {
                expected: self.aud.clone(),
                got: claims.aud,
            });
        }
        Ok(claims)
    }

    fn check_times(&self, claims: Claims, now: u64) -> Result<Claims, TokenError> {
        let skew = self.skew.as_secs();
        if claims.iat > now.saturating_add(skew) {
            return Err(TokenError::NotYetValid {
                iat: claims.iat,
                now,
            });
        }
        if now >= claims.exp.saturating_add(skew) {
            return Err(TokenError::Expired {
                exp: claims.exp,
                now,
            });
        }
        Ok(claims)
    }
}

/// The claims a token states, decoded but NOT verified: for a client to show whose token
/// it holds. Never base a decision on them.
pub(crate) fn unverified_claims(token: &str) -> Result<Claims, TokenError> {
    split(token).map(|(_, claims, _)| claims)
}

/// Splits and decodes a token without trusting it: returns the signed text, the parsed
/// claims (kid, aud and jti syntax checked so they can be named in errors) and the signature.
fn split(token: &str) -> Result<(&str, Claims, Signature), TokenError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::TooLong {
            len: token.len(),
            max: MAX_TOKEN_LEN,
        });
    }
    let rest = token
        .strip_prefix(TOKEN_PREFIX)
        .ok_or_else(|| TokenError::Malformed(format!("does not start with {TOKEN_PREFIX:?}")))?;
    let mut parts = rest.split('.');
    let (Some(claims_part), Some(signature_part), None) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed(format!(
            "expected 3 dot-separated parts, found {}",
            token.split('.').count()
        )));
    };
    let json = decode_part("claims", claims_part)?;
    let signature_bytes = decode_part("signature", signature_part)?;
    let signature_bytes: [u8; Signature::BYTE_SIZE] =
        signature_bytes.as_slice().try_into().map_err(|_| {
            TokenError::Malformed(format!(
                "signature is {} bytes, expected {}",
                signature_bytes.len(),
                Signature::BYTE_SIZE
            ))
        })?;
    let claims: Claims = serde_json::from_slice(&json).map_err(|e| {
        let why: String = e.to_string().chars().take(160).collect();
        TokenError::Malformed(format!("claims: {why}"))
    })?;
    claims.check_names()?;
    let signed = &token[..TOKEN_PREFIX.len() + claims_part.len()];
    Ok((signed, claims, Signature::from_bytes(&signature_bytes)))
}

/// Strict base64url without padding: refuses padding, whitespace, other alphabets and
/// non-zero trailing bits, so each byte string has exactly one accepted encoding.
fn decode_part(what: &str, part: &str) -> Result<Vec<u8>, TokenError> {
    if part.is_empty() {
        return Err(TokenError::Malformed(format!("{what} part is empty")));
    }
    URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|e| TokenError::Malformed(format!("{what} part is not canonical base64url: {e}")))
}

/// Whole seconds since 1970 of `t`.
fn unix_secs(t: SystemTime) -> Result<u64, TokenError> {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .map_err(|_| TokenError::Clock("time is before 1970".to_owned()))
}
