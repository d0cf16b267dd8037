//! Bets: the arguments a player types (`player=25 tie=2.50`), amounts alone, and a
//! PlaceBets request off the wire. Never a panic; an accepted bet list has distinct
//! positions and positive stakes and reads back the same from its canonical text; an
//! amount agrees with an oracle written from the notation; every refusal names the
//! argument or field at fault.

use banco_rules::{BetArgsError, BetKind, money, parse_amount, parse_bet_args};
use banco_wire::convert::requested_bets;
use banco_wire::pb;
use prost::Message as _;

/// The `bets` target.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        check_args(text);
        check_amount(text);
    }
    check_wire(data);
}

/// `text` split as a shell would split unquoted arguments.
pub fn check_args(text: &str) {
    let args: Vec<&str> = text.split_whitespace().collect();
    match parse_bet_args(&args) {
        Ok(bets) => {
            assert_eq!(bets.len(), args.len());
            check_bet_list(&bets);
            let canonical: Vec<String> = bets
                .iter()
                .map(|(kind, stake)| format!("{kind}={}", money(*stake)))
                .collect();
            assert_eq!(parse_bet_args(&canonical), Ok(bets), "{canonical:?}");
        }
        Err(BetArgsError::Empty) => assert!(args.is_empty()),
        Err(error) => {
            let message = error.to_string();
            assert!(
                args.iter().any(|a| message.contains(&format!("`{a}`"))),
                "{args:?}: the refusal names no argument: {message}"
            );
        }
    }
}

fn check_bet_list(bets: &[(BetKind, i64)]) {
    for (i, (kind, stake)) in bets.iter().enumerate() {
        assert!(*stake > 0, "{kind}={stake}");
        assert!(
            bets[..i].iter().all(|(k, _)| k != kind),
            "{kind} twice in {bets:?}"
        );
    }
}

/// What the notation says `text` is worth in minor units: digits, optionally a point
/// and one or two digits, at most `i64::MAX` minor units.
pub fn amount_oracle(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 2 {
        return None;
    }
    if text.contains('.') && fraction.is_empty() {
        return None;
    }
    let significant = whole.trim_start_matches('0');
    if significant.len() > 20 {
        return None;
    }
    let whole: u128 = significant.parse().unwrap_or(0);
    let cents: u128 = format!("{fraction:0<2}").parse().unwrap_or(0);
    i64::try_from(whole * 100 + cents).ok()
}

pub fn check_amount(text: &str) {
    match parse_amount("amount", text) {
        Ok(minor) => {
            assert_eq!(Some(minor), amount_oracle(text), "{text:?}");
            assert!(minor >= 0);
            assert_eq!(parse_amount("again", &money(minor)), Ok(minor));
        }
        Err(error) => {
            assert_eq!(amount_oracle(text), None, "{text:?} refused: {error}");
            assert!(error.to_string().starts_with("amount: "), "{error}");
        }
    }
}

/// Bytes as the body of a PlaceBets call.
pub fn check_wire(data: &[u8]) {
    let Ok(request) = pb::PlaceBetsRequest::decode(data) else {
        return;
    };
    // What prost accepts, it writes back to a message equal to itself.
    let encoded = request.encode_to_vec();
    assert_eq!(
        pb::PlaceBetsRequest::decode(encoded.as_slice()).ok(),
        Some(request.clone())
    );
    match requested_bets(request.bets.clone()) {
        Ok(bets) => {
            assert_eq!(bets.len(), request.bets.len());
            check_bet_list(&bets);
            let again: Vec<pb::Bet> = bets
                .iter()
                .map(|&(kind, stake)| pb::Bet {
                    kind: pb::BetKind::from(kind).into(),
                    stake_minor: stake,
                })
                .collect();
            assert_eq!(again, request.bets);
            assert_eq!(requested_bets(again), Ok(bets));
        }
        Err(error) => {
            let message = error.to_string();
            assert!(message.contains("bets"), "names no field: {message}");
        }
    }
}
