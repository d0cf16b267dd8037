//! Chat text: what a line may hold, and the masking of blocked words.
//!
//! Pure functions, so that the table decides a line the same way on every replay. The
//! rate limit and mutes are per-player state and live with the table.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a chat line's text was refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum ChatTextProblem {
    #[error("the line is empty")]
    Empty,
    #[error("the line has {chars} characters, at most {max} are allowed")]
    TooLong { chars: usize, max: usize },
    /// `position` is 1-based, in characters of the text as sent.
    #[error("character {position} is a control character ({})", CodePoint(*code))]
    ControlCharacter { position: usize, code: u32 },
}

/// `U+001B`.
struct CodePoint(u32);

impl fmt::Display for CodePoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "U+{:04X}", self.0)
    }
}

/// Characters a line may not hold: C0/C1 controls, and the bidirectional overrides and
/// isolates that can make a line read differently from what it says.
fn forbidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Bytes of padding allowed around a line beyond what its characters can take.
const PADDING_BYTES: usize = 64;

/// The line as it will be shown: trimmed, 1..=`max_chars` characters, without control
/// characters. The text as sent is journaled, so it too is bounded: at most
/// 4 × `max_chars` + 64 bytes, however much of it is spaces.
pub(crate) fn check_text(text: &str, max_chars: usize) -> Result<&str, ChatTextProblem> {
    if text.len() > max_chars.saturating_mul(4).saturating_add(PADDING_BYTES) {
        // More bytes than `max_chars` characters and the padding can take, so also more
        // characters than allowed.
        return Err(ChatTextProblem::TooLong {
            chars: text.chars().count(),
            max: max_chars,
        });
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ChatTextProblem::Empty);
    }
    // Characters cut off the front, to report positions in the text as sent.
    let lead = text[..text.len() - text.trim_start().len()].chars().count();
    if let Some((i, c)) = trimmed.chars().enumerate().find(|&(_, c)| forbidden(c)) {
        return Err(ChatTextProblem::ControlCharacter {
            position: lead + i + 1,
            code: u32::from(c),
        });
    }
    let chars = trimmed.chars().count();
    if chars > max_chars {
        return Err(ChatTextProblem::TooLong {
            chars,
            max: max_chars,
        });
    }
    Ok(trimmed)
}

/// The blocked words of a policy, lowercased, for [`mask`].
pub(crate) fn blocked_set(words: &[String]) -> BTreeSet<String> {
    words.iter().map(|w| w.to_lowercase()).collect()
}

/// `text` with every blocked word replaced by as many `*` as it has characters. A word is
/// a maximal run of letters and digits, compared case-insensitively.
pub(crate) fn mask(text: &str, blocked: &BTreeSet<String>) -> String {
    if blocked.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if blocked.contains(&word.to_lowercase()) {
            out.extend(std::iter::repeat_n('*', word.chars().count()));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// When a player who sent the lines at `recent` (oldest first, at most `burst` kept) may
/// write again; `None`: now.
pub(crate) fn rate_limited_until(
    recent: &VecDeque<u64>,
    burst: u32,
    window_ms: u64,
    now: u64,
) -> Option<u64> {
    let burst = usize::try_from(burst).unwrap_or(usize::MAX);
    if recent.len() < burst {
        return None;
    }
    // The burst-th most recent line leaves the window at `retry_at`.
    let oldest = recent.get(recent.len() - burst)?;
    let retry_at = oldest.saturating_add(window_ms);
    (now < retry_at).then_some(retry_at)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn text_rules() {
        let cases: &[(&str, usize, Result<&str, ChatTextProblem>)] = &[
            ("  hello  ", 5, Ok("hello")),
            (
                "hello!",
                5,
                Err(ChatTextProblem::TooLong { chars: 6, max: 5 }),
            ),
            // Characters, not bytes: five two-byte letters fit in five.
            ("éééé é", 6, Ok("éééé é")),
            (" \t\n ", 5, Err(ChatTextProblem::Empty)),
            ("", 5, Err(ChatTextProblem::Empty)),
            // Interior newline; leading spaces count in the position.
            (
                "  ab\ncd",
                10,
                Err(ChatTextProblem::ControlCharacter {
                    position: 5,
                    code: 10,
                }),
            ),
            (
                "a\u{1b}[31m",
                10,
                Err(ChatTextProblem::ControlCharacter {
                    position: 2,
                    code: 0x1b,
                }),
            ),
            (
                "ab\u{202E}cd",
                10,
                Err(ChatTextProblem::ControlCharacter {
                    position: 3,
                    code: 0x202E,
                }),
            ),
        ];
        for (text, max, want) in cases {
            assert_eq!(check_text(text, *max), *want, "{text:?}");
        }
        // Padding is trimmed, within reason: the text as sent is journaled.
        let padded = format!("{}hi{}", " ".repeat(30), " ".repeat(30));
        assert_eq!(check_text(&padded, 5), Ok("hi"));
        let flood = format!("hi{}", " ".repeat(100));
        assert_eq!(
            check_text(&flood, 5),
            Err(ChatTextProblem::TooLong { chars: 102, max: 5 })
        );
        assert_eq!(
            check_text("a\u{7f}", 5).unwrap_err().to_string(),
            "character 2 is a control character (U+007F)"
        );
    }

    #[test]
    fn masks_whole_words_case_insensitively() {
        let blocked = blocked_set(&["darn".into(), "heck".into()]);
        let cases = [
            ("darn it", "**** it"),
            ("DARN, Heck!", "****, ****!"),
            ("darned heckle", "darned heckle"),
            ("x-darn-y", "x-****-y"),
            ("nothing here", "nothing here"),
        ];
        for (text, want) in cases {
            assert_eq!(mask(text, &blocked), want, "{text}");
        }
        assert_eq!(mask("darn", &BTreeSet::new()), "darn");
    }

    #[test]
    fn rate_limit_window() {
        let recent: VecDeque<u64> = [1_000, 2_000, 3_000].into();
        assert_eq!(rate_limited_until(&recent, 4, 10_000, 3_500), None);
        assert_eq!(rate_limited_until(&recent, 3, 10_000, 3_500), Some(11_000));
        assert_eq!(rate_limited_until(&recent, 3, 10_000, 11_000), None);
        assert_eq!(rate_limited_until(&recent, 2, 10_000, 11_000), Some(12_000));
    }
}
