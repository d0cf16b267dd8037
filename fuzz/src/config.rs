//! The broadcaster's configuration text: table specs (`T01=5-300`) and blocked-words files.
//! Never a panic; accepted limits are positive with the minimum not above the maximum and
//! read back the same from their canonical text; refusals quote the spec; the words of a
//! file are trimmed, non-empty, free of comments, and read back the same.

use banco_rules::money;
use banco_table::{parse_blocked_words, parse_table_spec};

/// The `config` target.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    check_table_spec(&text);
    check_blocked_words(&text);
}

pub fn check_table_spec(spec: &str) {
    match parse_table_spec(spec) {
        Ok(parsed) => match parsed.limits {
            None => {
                assert!(!spec.contains('='));
                assert_eq!(parsed.id, spec);
            }
            Some(limits) => {
                assert!(
                    limits.min > 0 && limits.min <= limits.max,
                    "{spec}: {limits:?}"
                );
                let canonical =
                    format!("{}={}-{}", parsed.id, money(limits.min), money(limits.max));
                assert_eq!(
                    parse_table_spec(&canonical).as_ref(),
                    Ok(&parsed),
                    "{canonical}"
                );
            }
        },
        Err(error) => {
            let message = error.to_string();
            assert!(message.contains(spec), "{spec:?} not quoted: {message}");
        }
    }
}

pub fn check_blocked_words(text: &str) {
    let words = parse_blocked_words(text);
    for word in &words {
        assert!(!word.is_empty());
        assert_eq!(word.trim(), word);
        assert!(!word.contains('#') && !word.contains('\n'), "{word:?}");
        assert!(text.contains(word.as_str()));
    }
    assert_eq!(parse_blocked_words(&words.join("\n")), words);
}
