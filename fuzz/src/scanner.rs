//! Scanner lines as the croupier console decides them, and `--scanner` sources. Never a
//! panic; a blank line is ignored, a card line reads back as its card, anything else is
//! refused with a one-line, printable message that quotes it; a source reads back from
//! its own text.

use banco_rules::Card;
use banco_scanner::{ScanLine, ScannerSource, scan_line};

/// The `scanner` target: the bytes as a reader's output (lines, not necessarily UTF-8,
/// as the scanner task passes them on), and as a `--scanner` argument.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        check_line(line);
    }
    check_source(&text);
}

pub fn check_line(line: &str) {
    let trimmed = line.trim();
    match scan_line(line) {
        ScanLine::Blank => assert!(trimmed.is_empty(), "{line:?} taken as blank"),
        ScanLine::Card(card) => {
            assert_eq!(Card::parse(trimmed), Ok(card));
            assert_eq!(scan_line(&format!("{card}\r")), ScanLine::Card(card));
            assert_eq!(
                scan_line(&format!("{:04}", card.index())),
                ScanLine::Card(card)
            );
        }
        ScanLine::Refused(message) => {
            assert!(!trimmed.is_empty());
            assert!(message.starts_with("SCANNER: "), "{message}");
            assert!(message.ends_with(" (nothing sent)"), "{message}");
            assert!(!message.chars().any(char::is_control), "{message:?}");
            // Short lines that print as they are appear in the refusal.
            if trimmed.chars().count() <= 40 && !trimmed.chars().any(char::is_control) {
                assert!(
                    message.contains(trimmed),
                    "{trimmed:?} not quoted: {message}"
                );
            }
        }
    }
}

pub fn check_source(text: &str) {
    match text.parse::<ScannerSource>() {
        Ok(ScannerSource::Stdin) => assert_eq!(text, "-"),
        Ok(source) => {
            let shown = source.to_string();
            assert_eq!(
                shown.parse::<ScannerSource>().as_ref(),
                Ok(&source),
                "{shown}"
            );
        }
        Err(message) => assert!(!message.is_empty()),
    }
}
