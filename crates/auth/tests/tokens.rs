//! Issuing and verifying tokens: round trip, time window, forgery, keys, audience, syntax.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{Claims, Issuer, MAX_TOKEN_LEN, Role, TokenError, Verifier, key_id};

const T0: u64 = 1_800_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap()
}

fn hour() -> Duration {
    Duration::from_secs(3600)
}

/// Replaces the character at `i` of an ASCII token by another base64url character.
fn flip_char(token: &str, i: usize) -> String {
    let mut bytes = token.as_bytes().to_vec();
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).unwrap()
}

#[test]
fn round_trip_returns_the_claims() {
    let issuer = issuer();
    let token = issuer
        .issue("alice@casino.example", Role::Player, hour(), at(T0))
        .unwrap();
    assert!(token.starts_with("banco1."));
    assert_eq!(token.matches('.').count(), 2);
    let claims = issuer.verifier().verify(&token, at(T0 + 10)).unwrap();
    assert_eq!(claims.sub, "alice@casino.example");
    assert_eq!(claims.role, Role::Player);
    assert_eq!(claims.aud, "banco");
    assert_eq!(claims.iat, T0);
    assert_eq!(claims.exp, T0 + 3600);
    assert_eq!(claims.kid, issuer.kid());
    assert_eq!(claims.kid, key_id(&issuer.verifying_key()));
    assert_eq!(claims.jti.len(), 22);
}

#[test]
fn verifier_built_from_the_public_key_alone_accepts() {
    let issuer = issuer();
    let token = issuer
        .issue("table-7", Role::Croupier, hour(), at(T0))
        .unwrap();
    let verifier = Verifier::new("banco")
        .unwrap()
        .with_public_key(issuer.verifying_key());
    assert_eq!(
        verifier.verify(&token, at(T0)).unwrap().role,
        Role::Croupier
    );
}

#[test]
fn each_token_has_its_own_id() {
    let issuer = issuer();
    let a = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    let b = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    assert_ne!(a, b);
    let v = issuer.verifier();
    assert_ne!(
        v.verify(&a, at(T0)).unwrap().jti,
        v.verify(&b, at(T0)).unwrap().jti
    );
}

#[test]
fn expiry_allows_the_skew_and_not_one_second_more() {
    let issuer = issuer();
    let token = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    let verifier = issuer.verifier(); // default skew 30 s
    let exp = T0 + 3600;
    assert!(verifier.verify(&token, at(exp - 1)).is_ok());
    assert!(verifier.verify(&token, at(exp + 29)).is_ok());
    assert_eq!(
        verifier.verify(&token, at(exp + 30)),
        Err(TokenError::Expired { exp, now: exp + 30 })
    );
    assert_eq!(
        verifier.verify(&token, at(exp + 31)),
        Err(TokenError::Expired { exp, now: exp + 31 })
    );
    let strict = issuer.verifier().with_skew(Duration::ZERO);
    assert!(strict.verify(&token, at(exp - 1)).is_ok());
    assert!(matches!(
        strict.verify(&token, at(exp)),
        Err(TokenError::Expired { .. })
    ));
}

#[test]
fn a_token_from_the_future_is_not_yet_valid() {
    let issuer = issuer();
    let token = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    let verifier = issuer.verifier();
    assert!(verifier.verify(&token, at(T0 - 30)).is_ok());
    assert_eq!(
        verifier.verify(&token, at(T0 - 31)),
        Err(TokenError::NotYetValid {
            iat: T0,
            now: T0 - 31
        })
    );
}

#[test]
fn flipping_any_signature_or_claims_character_is_refused() {
    let issuer = issuer();
    let token = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    let verifier = issuer.verifier();
    let second_dot = token.rfind('.').unwrap();
    // A byte of the signature.
    let forged = flip_char(&token, second_dot + 5);
    assert_eq!(
        verifier.verify(&forged, at(T0)),
        Err(TokenError::BadSignature)
    );
    // Every character of the claims part: refused, whatever the reason.
    for i in "banco1.".len()..second_dot {
        let forged = flip_char(&token, i);
        assert!(verifier.verify(&forged, at(T0)).is_err(), "position {i}");
    }
}

#[test]
fn altered_claims_with_a_valid_encoding_are_a_bad_signature() {
    let issuer = issuer();
    let token = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    let verifier = issuer.verifier();
    let mut claims = verifier.verify(&token, at(T0)).unwrap();
    claims.role = Role::Croupier;
    let mut other = issuer.sign(&claims).unwrap();
    // Graft the new claims onto the old signature.
    let old_sig = &token[token.rfind('.').unwrap()..];
    other.truncate(other.rfind('.').unwrap());
    other.push_str(old_sig);
    assert_eq!(
        verifier.verify(&other, at(T0)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn another_key_is_refused() {
    let ours = issuer();
    let theirs = Issuer::new(signing_key_from_seed(&[9; 32]), "banco").unwrap();
    let token = theirs
        .issue("mallory", Role::Croupier, hour(), at(T0))
        .unwrap();
    assert_eq!(
        ours.verifier().verify(&token, at(T0)),
        Err(TokenError::UnknownKey(theirs.kid().to_owned()))
    );
    // Same kid, different key: the signature does not match.
    let impostor = theirs.with_kid(ours.kid()).unwrap();
    let token = impostor
        .issue("mallory", Role::Croupier, hour(), at(T0))
        .unwrap();
    assert_eq!(
        ours.verifier().verify(&token, at(T0)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn rotation_keeps_both_keys_valid() {
    let old = issuer();
    let new = Issuer::new(signing_key_from_seed(&[8; 32]), "banco").unwrap();
    let verifier = Verifier::new("banco")
        .unwrap()
        .with_public_key(old.verifying_key())
        .with_key(new.kid(), new.verifying_key())
        .unwrap();
    for issuer in [&old, &new] {
        let token = issuer.issue("svc", Role::Service, hour(), at(T0)).unwrap();
        assert!(verifier.verify(&token, at(T0)).is_ok());
    }
}

#[test]
fn another_deployment_is_refused() {
    let key = signing_key_from_seed(&[7; 32]);
    let elsewhere = Issuer::new(key, "casino-b").unwrap();
    let token = elsewhere
        .issue("bob", Role::Player, hour(), at(T0))
        .unwrap();
    let here = Verifier::new("banco")
        .unwrap()
        .with_public_key(elsewhere.verifying_key());
    assert_eq!(
        here.verify(&token, at(T0)),
        Err(TokenError::WrongAudience {
            expected: "banco".to_owned(),
            got: "casino-b".to_owned()
        })
    );
}

#[test]
fn bad_subjects_are_refused_at_issue() {
    let issuer = issuer();
    let long = "a".repeat(65);
    for sub in ["", "has space", "é", "a/b", "x\n", "a:b", long.as_str()] {
        let err = issuer.issue(sub, Role::Player, hour(), at(T0)).unwrap_err();
        assert!(matches!(err, TokenError::BadSubject(_)), "{sub:?}: {err}");
    }
    let max = "a".repeat(64);
    for sub in ["a", "A.b_c@d-e9", max.as_str()] {
        assert!(
            issuer.issue(sub, Role::Player, hour(), at(T0)).is_ok(),
            "{sub:?}"
        );
    }
}

#[test]
fn a_signed_bad_subject_is_still_refused() {
    let issuer = issuer();
    let claims = Claims {
        sub: "a b".to_owned(),
        role: Role::Player,
        aud: "banco".to_owned(),
        iat: T0,
        exp: T0 + 60,
        kid: issuer.kid().to_owned(),
        jti: "j".to_owned(),
    };
    let token = issuer.sign(&claims).unwrap();
    assert!(matches!(
        issuer.verifier().verify(&token, at(T0)),
        Err(TokenError::BadSubject(_))
    ));
}

#[test]
fn ttl_must_be_between_one_second_and_the_maximum() {
    let issuer = issuer().with_max_ttl(Duration::from_secs(600));
    for ttl in [0, 601] {
        assert_eq!(
            issuer.issue("bob", Role::Player, Duration::from_secs(ttl), at(T0)),
            Err(TokenError::TtlOutOfRange {
                ttl_secs: ttl,
                max_secs: 600
            })
        );
    }
    assert!(
        issuer
            .issue("bob", Role::Player, Duration::from_millis(999), at(T0))
            .is_err()
    );
    assert!(
        issuer
            .issue("bob", Role::Player, Duration::from_secs(600), at(T0))
            .is_ok()
    );
}

#[test]
fn malformed_tokens_are_refused_without_echoing_them() {
    let issuer = issuer();
    let token = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    let verifier = issuer.verifier();
    let (head, sig) = token.rsplit_once('.').unwrap();
    let cases = [
        ("empty", String::new()),
        ("wrong prefix", token.replacen("banco1.", "banco2.", 1)),
        ("no prefix", token["banco1.".len()..].to_owned()),
        ("extra segment", format!("{token}.AAAA")),
        ("extra dot", format!("{head}..{sig}")),
        ("missing signature", format!("{head}.")),
        ("two parts", head.to_owned()),
        ("padding", format!("{token}==")),
        (
            "standard alphabet",
            token.replace('-', "+").replace('_', "/"),
        ),
        ("whitespace", format!("{head}. {sig}")),
        ("trailing newline", format!("{token}\n")),
        ("short signature", format!("{head}.{}", &sig[..40])),
        ("not json", format!("banco1.{}.{sig}", "bm90IGpzb24")),
    ];
    for (what, bad) in cases {
        if bad == token {
            continue; // e.g. no '-' or '_' to replace
        }
        let err = verifier.verify(&bad, at(T0)).unwrap_err();
        assert!(
            matches!(err, TokenError::Malformed(_) | TokenError::BadSignature),
            "{what}: {err:?}"
        );
        let message = err.to_string();
        assert!(!message.contains(sig), "{what}: {message}");
        assert!(
            !message.contains(&head["banco1.".len()..]),
            "{what}: {message}"
        );
    }
}

#[test]
fn non_canonical_base64_trailing_bits_are_refused() {
    let issuer = issuer();
    let token = issuer.issue("bob", Role::Player, hour(), at(T0)).unwrap();
    // 64 signature bytes = 86 characters whose last one carries 4 zero bits; setting one
    // of them decodes to the same bytes under a lax decoder.
    let last = token.chars().last().unwrap();
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let index = alphabet.find(last).unwrap();
    assert_eq!(index % 16, 0, "canonical encoding has zero trailing bits");
    let lax = alphabet.as_bytes()[index + 1] as char;
    let mut bad = token.clone();
    bad.pop();
    bad.push(lax);
    assert!(matches!(
        issuer.verifier().verify(&bad, at(T0)),
        Err(TokenError::Malformed(_))
    ));
}

#[test]
fn unknown_and_duplicate_claim_fields_are_refused() {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let issuer = issuer();
    let verifier = issuer.verifier();
    let kid = issuer.kid();
    let base = format!(
        r#""sub":"bob","role":"player","aud":"banco","iat":{T0},"exp":{},"kid":"{kid}","jti":"j""#,
        T0 + 60
    );
    for json in [
        format!(r#"{{{base},"admin":true}}"#),
        format!(r#"{{{base},"role":"croupier"}}"#),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""role":"player""#, r#""role":"admin""#)
        ),
        format!(r#"{{{}}}"#, base.replace(r#","jti":"j""#, "")),
    ] {
        // Sign the raw JSON ourselves so only parsing can refuse it.
        let key = signing_key_from_seed(&[7; 32]);
        let mut token = format!("banco1.{}", URL_SAFE_NO_PAD.encode(&json));
        let sig = ed25519_dalek_sign(&key, token.as_bytes());
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(sig));
        let err = verifier.verify(&token, at(T0)).unwrap_err();
        assert!(matches!(err, TokenError::Malformed(_)), "{json}: {err:?}");
    }
}

/// Signs raw bytes with the dalek key, bypassing `Issuer::sign`'s JSON encoding.
fn ed25519_dalek_sign(key: &banco_auth::SigningKey, message: &[u8]) -> Vec<u8> {
    use ed25519_dalek::Signer as _;
    key.sign(message).to_bytes().to_vec()
}

#[test]
fn oversized_tokens_are_refused_before_decoding() {
    let verifier = issuer().verifier();
    let huge = format!("banco1.{}", "A".repeat(MAX_TOKEN_LEN));
    assert_eq!(
        verifier.verify(&huge, at(T0)),
        Err(TokenError::TooLong {
            len: MAX_TOKEN_LEN + 7,
            max: MAX_TOKEN_LEN
        })
    );
}

#[test]
fn names_in_constructors_are_checked() {
    let key = signing_key_from_seed(&[7; 32]);
    assert!(matches!(
        Issuer::new(key.clone(), "two words"),
        Err(TokenError::BadField { field: "aud", .. })
    ));
    assert!(Verifier::new("").is_err());
    assert!(Issuer::new(key, "banco").unwrap().with_kid("k/1").is_err());
}

#[test]
fn roles_parse_and_print_lowercase() {
    for role in Role::ALL {
        assert_eq!(role.to_string().parse::<Role>().unwrap(), role);
    }
    assert_eq!("croupier".parse::<Role>().unwrap(), Role::Croupier);
    assert!("Croupier".parse::<Role>().is_err());
    let err = "admin".parse::<Role>().unwrap_err().to_string();
    assert!(err.contains("admin") && err.contains("auditor"), "{err}");
}

#[test]
fn times_before_1970_are_an_error_not_a_panic() {
    let issuer = issuer();
    let before = UNIX_EPOCH - Duration::from_secs(1);
    assert!(matches!(
        issuer.issue("bob", Role::Player, hour(), before),
        Err(TokenError::Clock(_))
    ));
}

/// The verifier remembers tokens whose signature it checked; that must never let a token
/// past its expiry, nor let a look-alike token in.
#[test]
fn a_remembered_token_still_expires_and_look_alikes_are_checked_in_full() {
    let issuer = issuer();
    let verifier = issuer.verifier();
    let token = issuer
        .issue("alice@casino.example", Role::Player, hour(), at(T0))
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            verifier.verify(&token, at(T0 + 10)).unwrap().sub,
            "alice@casino.example"
        );
    }
    assert!(matches!(
        verifier.verify(&token, at(T0 + 7200)),
        Err(TokenError::Expired { .. })
    ));
    // A clone shares what was checked, and still applies the clock.
    assert!(matches!(
        verifier.clone().verify(&token, at(T0 + 7200)),
        Err(TokenError::Expired { .. })
    ));
    let last = token.len() - 2;
    assert!(
        verifier
            .verify(&flip_char(&token, last), at(T0 + 10))
            .is_err()
    );
    // A verifier for another audience never sees the first one's memory.
    let other = Verifier::new("other")
        .unwrap()
        .with_public_key(issuer.verifying_key());
    assert!(matches!(
        other.verify(&token, at(T0 + 10)),
        Err(TokenError::WrongAudience { .. })
    ));
}
