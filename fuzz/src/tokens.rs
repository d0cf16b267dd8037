//! Tokens: `Verifier::verify` never panics on any text, refuses it with a message that
//! does not quote it, and accepts only what the issuer signed; a token that verifies
//! re-encodes to itself; any single-byte change, and any truncation, of a valid token is
//! refused.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Claims, Issuer, Role, TokenError, Verifier};

/// The verifier's clock: fixed, so that a run replays.
const NOW: u64 = 1_750_000_000;

/// Characters of a subject, audience, key id or token id.
const NAME_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@-";

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

fn keys() -> &'static (Issuer, Verifier) {
    static KEYS: OnceLock<(Issuer, Verifier)> = OnceLock::new();
    KEYS.get_or_init(|| {
        let issuer = Issuer::new(signing_key_from_seed(&[7; 32]), "banco")
            .unwrap_or_else(|e| panic!("issuer: {e}"));
        let verifier = issuer.verifier();
        (issuer, verifier)
    })
}

/// The `tokens` target.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        check_text(text);
    }
    check_signed(data);
}

/// Arbitrary text presented as a token.
pub fn check_text(text: &str) {
    let (issuer, verifier) = keys();
    match verifier.verify(text, now()) {
        Ok(claims) => {
            let again = issuer.sign(&claims);
            assert_eq!(
                again.as_deref(),
                Ok(text),
                "a token that verifies must be what the issuer signs for its claims"
            );
        }
        Err(error) => check_refusal(text, &error),
    }
    // The client side never panics either; what it accepts is one run of visible ASCII.
    if BearerToken::new(text).is_ok() {
        assert!(!text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic()));
    }
}

fn check_refusal(text: &str, error: &TokenError) {
    let message = error.to_string();
    assert!(!message.is_empty());
    // A bearer token is a secret: refusals explain, they never echo it. The fuzzer also
    // finds texts that are a piece of a refusal's own wording (` token: does not start
    // with …`): those are said as well for other text of the same shape, so they are no
    // echo.
    if text.len() >= 24 && message.contains(text) {
        let other = same_shape(text);
        let wording = match keys().1.verify(&other, now()) {
            Err(other_error) => other_error.to_string().contains(text),
            Ok(_) => false,
        };
        assert!(wording, "refusal quotes the token: {message}");
    }
}

/// `text` with every character but the `banco1.` prefix and the dots made `x`: the same
/// segments, none of the content.
fn same_shape(text: &str) -> String {
    let (prefix, rest) = text
        .strip_prefix("banco1.")
        .map_or(("", text), |rest| ("banco1.", rest));
    let rest: String = rest
        .chars()
        .map(|c| if c == '.' { '.' } else { 'x' })
        .collect();
    format!("{prefix}{rest}")
}

/// A name of 1 to `max` characters drawn from `bytes`.
fn name(bytes: &[u8], max: usize) -> String {
    let mut out: String = bytes
        .iter()
        .take(max)
        .map(|&b| char::from(NAME_CHARS[usize::from(b) % NAME_CHARS.len()]))
        .collect();
    if out.is_empty() {
        out.push('p');
    }
    out
}

/// Claims drawn from `data`: byte 0 the role, 1–2 the lifetime, 3 the subject's length,
/// then the subject and the token id.
fn claims_of(data: &[u8]) -> Claims {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let ttl = 1 + u64::from(u16::from_le_bytes([byte(1), byte(2)]));
    let sub_len = 1 + usize::from(byte(3)) % 64;
    let rest = data.get(4..).unwrap_or(&[]);
    let (sub, jti) = rest.split_at(rest.len().min(sub_len));
    Claims {
        sub: name(sub, 64),
        role: Role::ALL[usize::from(byte(0)) % Role::ALL.len()],
        aud: "banco".to_owned(),
        iat: NOW - u64::from(byte(1)),
        exp: NOW + ttl,
        kid: keys().0.kid().to_owned(),
        jti: name(jti, 22),
    }
}

/// A valid token made from `data`, and every alteration of it that `data` picks.
pub fn check_signed(data: &[u8]) {
    let (issuer, verifier) = keys();
    let claims = claims_of(data);
    let token = issuer
        .sign(&claims)
        .unwrap_or_else(|e| panic!("signing {claims:?}: {e}"));
    assert_eq!(verifier.verify(&token, now()), Ok(claims.clone()));
    assert_eq!(issuer.sign(&claims).as_deref(), Ok(token.as_str()));

    // One byte changed, at a place and by a value taken from the input's tail.
    let tail = data.iter().rev().take(8).copied().collect::<Vec<u8>>();
    for pair in tail.chunks(2) {
        let at = usize::from(pair[0]) * 7 % token.len();
        // ASCII stays ASCII (so the text is still a &str), and the byte does change.
        let delta = (pair.get(1).copied().unwrap_or(1) & 0x7f).max(1);
        let mut bytes = token.clone().into_bytes();
        bytes[at] ^= delta;
        let Ok(altered) = String::from_utf8(bytes) else {
            continue;
        };
        let verdict = verifier.verify(&altered, now());
        assert!(
            verdict.is_err(),
            "byte {at} of a valid token changed (^{delta:#x}) and it still verifies"
        );
        if let Err(error) = verdict {
            check_refusal(&altered, &error);
        }
    }
    // Cut short anywhere.
    let cut = usize::from(data.first().copied().unwrap_or(0)) % token.len();
    assert!(
        verifier.verify(&token[..cut], now()).is_err(),
        "cut at {cut}"
    );

    // The same claims, out of their time window.
    let mut expired = claims.clone();
    expired.iat = NOW - 100_000;
    expired.exp = NOW - 1_000;
    let old = issuer.sign(&expired).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        verifier.verify(&old, now()),
        Err(TokenError::Expired { .. })
    ));
    let mut early = claims;
    early.iat = NOW + 1_000;
    early.exp = NOW + 2_000;
    let early = issuer.sign(&early).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        verifier.verify(&early, now()),
        Err(TokenError::NotYetValid { .. })
    ));
}
