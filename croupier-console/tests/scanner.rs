//! Each scanner source, over the real thing: a TCP socket, a Unix socket, a FIFO (as a
//! serial device is read), a file; and what `--scanner` refuses.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use croupier_console::action::Action;
use croupier_console::scanner::{self, MAX_LINE, ScannerSource};
use tokio::io::AsyncWriteExt as _;
use tokio::sync::mpsc;

/// The lines the console receives until it has `n` of them.
async fn lines(rx: &mut mpsc::UnboundedReceiver<Action>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < n {
        let action = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("no line in time")
            .expect("scanner task ended");
        if let Action::ScannerLine(line) = action {
            out.push(line);
        }
    }
    out
}

const FEED: &[u8] = b"KH\r\n0013\nZZ\n\xff\xfe\n10D\n";
const EXPECTED: [&str; 5] = ["KH\r\n", "0013\n", "ZZ\n", "\u{fffd}\u{fffd}\n", "10D\n"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_source() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let source: ScannerSource = format!("tcp://{addr}").parse().unwrap();
    tokio::spawn(scanner::run(source, tx));
    let (mut socket, _) = listener.accept().await.unwrap();
    socket.write_all(FEED).await.unwrap();
    assert_eq!(lines(&mut rx, 5).await, EXPECTED);
    // The reader goes away and comes back: the console connects again.
    drop(socket);
    let (mut socket, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .unwrap()
        .unwrap();
    socket.write_all(b"AS\n").await.unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["AS\n"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_source() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shoe.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let source: ScannerSource = format!("unix://{}", path.display()).parse().unwrap();
    tokio::spawn(scanner::run(source, tx));
    let (mut socket, _) = listener.accept().await.unwrap();
    socket.write_all(FEED).await.unwrap();
    assert_eq!(lines(&mut rx, 5).await, EXPECTED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_source_like_a_serial_device() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shoe.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(scanner::run(ScannerSource::Path(path.clone()), tx));
    // Opening a FIFO for writing waits for its reader: a thread of its own, given a time.
    let write = |bytes: &'static [u8]| {
        let path = path.clone();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::Write as _;
            let written = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut fifo| fifo.write_all(bytes));
            let _ = done_tx.send(written);
        });
        tokio::task::spawn_blocking(move || {
            done.recv_timeout(Duration::from_secs(10))
                .expect("the FIFO was not opened for reading in time")
        })
    };
    write(FEED).await.unwrap().unwrap();
    assert_eq!(lines(&mut rx, 5).await, EXPECTED);
    // A new writer after the first went: its lines come on the same FIFO.
    write(b"9S\n").await.unwrap().unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["9S\n"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_source_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cards.txt");
    std::fs::write(&path, FEED).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    scanner::run(ScannerSource::Path(path), tx).await;
    assert_eq!(lines(&mut rx, 5).await, EXPECTED);
    let rest: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
        .filter(|a| matches!(a, Action::ScannerLine(_)))
        .collect();
    assert!(rest.is_empty(), "{rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_line_is_cut_not_buffered_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cards.txt");
    let mut feed = vec![b'X'; 10 * MAX_LINE];
    feed.extend_from_slice(b"\nKH\n");
    std::fs::write(&path, feed).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    scanner::run(ScannerSource::Path(path), tx).await;
    let got = lines(&mut rx, 2).await;
    assert_eq!(got[0].len(), MAX_LINE);
    assert_eq!(got[1], "KH\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_cannot_be_opened_is_reported_and_retried() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(scanner::run(
        ScannerSource::Path("/nonexistent/ttyUSB9".into()),
        tx,
    ));
    let action = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .unwrap();
    match action {
        Some(Action::ScannerStatus { ok: false, text }) => {
            assert!(text.contains("/nonexistent/ttyUSB9"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    task.abort();
}

#[test]
fn scanner_flag_forms() {
    let parse = |s: &str| s.parse::<ScannerSource>();
    assert_eq!(parse("-"), Ok(ScannerSource::Stdin));
    assert_eq!(
        parse("/dev/ttyUSB0"),
        Ok(ScannerSource::Path("/dev/ttyUSB0".into()))
    );
    assert_eq!(
        parse("tcp://10.1.2.3:4001"),
        Ok(ScannerSource::Tcp("10.1.2.3:4001".into()))
    );
    assert_eq!(
        parse("unix:///run/shoe.sock"),
        Ok(ScannerSource::Unix("/run/shoe.sock".into()))
    );
    for (bad, why) in [
        ("", "empty"),
        ("tcp://", "tcp://HOST:PORT"),
        ("tcp://host", "tcp://HOST:PORT"),
        ("tcp://host:port", "tcp://HOST:PORT"),
        ("unix://", "unix://PATH"),
        ("serial://ttyS0", "not a scanner source"),
    ] {
        let err = parse(bad).unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
    }
}
