//! Any change to a valid token makes it invalid.
#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{Issuer, Role, Verifier};
use proptest::prelude::*;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

static SETUP: LazyLock<(String, Verifier)> = LazyLock::new(|| {
    let issuer = Issuer::new(signing_key_from_seed(&[5; 32]), "banco").unwrap();
    let token = issuer
        .issue("alice", Role::Player, Duration::from_secs(3600), now())
        .unwrap();
    (token, issuer.verifier())
});

/// One edit of a token, by byte position (tokens are ASCII).
#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, char),
    Insert(usize, char),
    Delete(usize),
    Truncate(usize),
    Swap(usize, usize),
}

fn apply(token: &str, mutation: &Mutation) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let n = chars.len();
    if n == 0 {
        // Everything was truncated away; only an insertion still applies.
        return match *mutation {
            Mutation::Insert(_, c) => c.to_string(),
            _ => String::new(),
        };
    }
    match *mutation {
        Mutation::Replace(i, c) => chars[i % n] = c,
        Mutation::Insert(i, c) => chars.insert(i % (n + 1), c),
        Mutation::Delete(i) => {
            chars.remove(i % n);
        }
        Mutation::Truncate(i) => chars.truncate(i % n),
        Mutation::Swap(i, j) => chars.swap(i % n, j % n),
    }
    chars.into_iter().collect()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    // Mostly characters a base64url decoder or the prefix would accept, some anything.
    let c = prop_oneof![
        4 => proptest::char::ranges(vec!['A'..='Z', 'a'..='z', '0'..='9'].into()),
        1 => prop_oneof![Just('-'), Just('_'), Just('.'), Just('='), Just(' ')],
        1 => any::<char>(),
    ];
    let i = any::<usize>();
    prop_oneof![
        4 => (i, c.clone()).prop_map(|(i, c)| Mutation::Replace(i, c)),
        1 => (i, c).prop_map(|(i, c)| Mutation::Insert(i, c)),
        1 => i.prop_map(Mutation::Delete),
        1 => i.prop_map(Mutation::Truncate),
        1 => (i, i).prop_map(|(a, b)| Mutation::Swap(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_mutation_is_refused(edits in proptest::collection::vec(mutation(), 1..4)) {
        let (token, verifier) = &*SETUP;
        let mut mutated = token.clone();
        for edit in &edits {
            mutated = apply(&mutated, edit);
        }
        prop_assume!(&mutated != token);
        prop_assert!(verifier.verify(&mutated, now()).is_err(), "accepted after {:?}", edits);
    }
}

#[test]
fn the_unmutated_token_is_accepted() {
    let (token, verifier) = &*SETUP;
    assert!(verifier.verify(token, now()).is_ok());
}
