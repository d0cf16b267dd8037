//! What the croupier console and the shoe simulator share of a card scanner: where its
//! lines come from ([`ScannerSource`]) and what each line means ([`scan_line`]). Pure: the
//! reading itself is the console's.

pub mod line;
pub mod source;

pub use line::{ScanLine, printable, scan_line};
pub use source::ScannerSource;
