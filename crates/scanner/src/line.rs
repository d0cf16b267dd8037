//! What one line from a card scanner means: nothing (a blank line, which readers send
//! between cards), a card, or a refusal to show the croupier. Pure, so that `update` and
//! the fuzz target decide every line the same way.

use banco_rules::Card;

/// Longest refusal text quoted from a line, in characters.
const QUOTED_CHARS: usize = 120;

/// A scanned line, decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanLine {
    /// Blank (or only the CR of a CR LF): ignored.
    Blank,
    Card(Card),
    /// Not a card: the message shown, which quotes the line (printable, shortened).
    Refused(String),
}

/// Decides `line` (as the scanner task sent it, its line ending included or not).
pub fn scan_line(line: &str) -> ScanLine {
    let text = line.trim();
    if text.is_empty() {
        return ScanLine::Blank;
    }
    match Card::parse(text) {
        Ok(card) => ScanLine::Card(card),
        Err(error) => ScanLine::Refused(format!(
            "SCANNER: {} (nothing sent)",
            printable(&error.to_string())
        )),
    }
}

/// Shown as received, minus what would garble the screen, and not too long.
pub fn printable(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(QUOTED_CHARS)
        .collect();
    if text.chars().count() > QUOTED_CHARS {
        out.push('…');
    }
    out
}
