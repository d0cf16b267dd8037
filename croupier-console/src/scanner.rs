//! Card scanners: anything that gives one card per line. A shoe reader on a serial port or
//! a FIFO is a path read line by line; a networked reader is a TCP or Unix socket; `-` is
//! standard input. Lines go to `update` as they are: checking them is its job.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, BufReader};
use tokio::sync::mpsc::UnboundedSender;

use crate::action::Action;

/// Longest line kept; a reader gone mad is not allowed to fill memory.
pub const MAX_LINE: usize = 256;
const REOPEN_AFTER: Duration = Duration::from_secs(1);

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

/// Reads `source` until the console goes away, reopening it when it closes (a reader
/// restarted) — but not a plain file or stdin, which would only give the same lines again
/// or nothing.
pub async fn run(source: ScannerSource, actions: UnboundedSender<Action>) {
    let status = |ok: bool, text: String| actions.send(Action::ScannerStatus { ok, text }).is_ok();
    loop {
        let (reader, once): (Box<dyn AsyncRead + Unpin + Send>, bool) = match open(&source).await {
            Ok(opened) => opened,
            Err(error) => {
                if !status(false, format!("{source}: {error}")) {
                    return;
                }
                tokio::time::sleep(REOPEN_AFTER).await;
                continue;
            }
        };
        if !status(true, "ok".to_owned()) {
            return;
        }
        let why = match read_lines(reader, &actions).await {
            Ok(true) => "closed".to_owned(),
            Ok(false) => return,
            Err(error) => error.to_string(),
        };
        if once {
            let _ = status(false, format!("{source}: {why}"));
            return;
        }
        if !status(false, format!("{source}: {why}, reopening")) {
            return;
        }
        tokio::time::sleep(REOPEN_AFTER).await;
    }
}

async fn open(
    source: &ScannerSource,
) -> std::io::Result<(Box<dyn AsyncRead + Unpin + Send>, bool)> {
    Ok(match source {
        ScannerSource::Stdin => (Box::new(tokio::io::stdin()), true),
        ScannerSource::Path(path) => {
            let kind = std::fs::metadata(path)?.file_type();
            if std::os::unix::fs::FileTypeExt::is_fifo(&kind) {
                // Opened for reading and writing, a FIFO neither waits for a writer to
                // open nor ends when one goes: readers come and go as a serial line would,
                // and nothing is left blocked on a thread when the console quits.
                let fifo = tokio::net::unix::pipe::OpenOptions::new()
                    .read_write(true)
                    .open_receiver(path)?;
                (Box::new(fifo), false)
            } else {
                let file = tokio::fs::File::open(path).await?;
                (Box::new(file), kind.is_file())
            }
        }
        ScannerSource::Tcp(addr) => (Box::new(tokio::net::TcpStream::connect(addr).await?), false),
        ScannerSource::Unix(path) => (
            Box::new(tokio::net::UnixStream::connect(path).await?),
            false,
        ),
    })
}

/// Sends each line; `Ok(true)` at the end of the input, `Ok(false)` once nobody listens.
async fn read_lines(
    reader: Box<dyn AsyncRead + Unpin + Send>,
    actions: &UnboundedSender<Action>,
) -> std::io::Result<bool> {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Ok(true);
        }
        if line.last() != Some(&b'\n') && line.len() >= MAX_LINE {
            // The rest of an over-long line is dropped, up to its end.
            let mut rest = Vec::new();
            reader.read_until(b'\n', &mut rest).await?;
        }
        // Bytes that are not UTF-8 still make a line, refused by `update` with the reason.
        let text = String::from_utf8_lossy(&line).into_owned();
        if actions.send(Action::ScannerLine(text)).is_err() {
            return Ok(false);
        }
    }
}
