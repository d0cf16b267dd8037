//! Where a card scanner's lines come from (`--scanner` of the console, `--to` of the shoe
//! simulator): a path (a serial device, a FIFO or a file), `tcp://HOST:PORT`,
//! `unix://PATH`, or `-` for standard input.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where scanned lines come from (`--scanner`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScannerSource {
    Stdin,
    /// A serial device, a FIFO, or a file.
    Path(PathBuf),
    /// `tcp://HOST:PORT`: connects (and reconnects) to a reader serving lines.
    Tcp(String),
    /// `unix://PATH`: connects (and reconnects) to a Unix socket.
    Unix(PathBuf),
}

impl FromStr for ScannerSource {
    type Err = String;

    fn from_str(text: &str) -> Result<ScannerSource, String> {
        if text == "-" {
            return Ok(ScannerSource::Stdin);
        }
        if let Some(addr) = text.strip_prefix("tcp://") {
            if addr
                .rsplit_once(':')
                .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
            {
                return Err(format!("{text}: expected tcp://HOST:PORT"));
            }
            return Ok(ScannerSource::Tcp(addr.to_owned()));
        }
        if let Some(path) = text.strip_prefix("unix://") {
            if path.is_empty() {
                return Err(format!("{text}: expected unix://PATH"));
            }
            return Ok(ScannerSource::Unix(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(format!(
                "{text}: `{scheme}://` is not a scanner source (a path, tcp://, unix:// or -)"
            ));
        }
        if text.is_empty() {
            return Err(
                "an empty scanner source (a path, tcp://HOST:PORT, unix://PATH or -)".into(),
            );
        }
        Ok(ScannerSource::Path(PathBuf::from(text)))
    }
}

impl fmt::Display for ScannerSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScannerSource::Stdin => f.write_str("stdin"),
            ScannerSource::Path(path) => write!(f, "{}", path.display()),
            ScannerSource::Tcp(addr) => write!(f, "tcp://{addr}"),
            ScannerSource::Unix(path) => write!(f, "unix://{}", path.display()),
        }
    }
}
