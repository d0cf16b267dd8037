//! Card scanners: anything that gives one card per line. A shoe reader on a serial port or
//! a FIFO is a path read line by line; a networked reader is a TCP or Unix socket; `-` is
//! standard input. Lines go to `update` as they are: checking them is its job.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, BufReader};
use tokio::sync::mpsc::UnboundedSender;

pub use banco_scanner::ScannerSource;

use crate::action::Action;

/// Longest line kept; a reader gone mad is not allowed to fill memory.
pub const MAX_LINE: usize = 256;
const REOPEN_AFTER: Duration = Duration::from_secs(1);

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
