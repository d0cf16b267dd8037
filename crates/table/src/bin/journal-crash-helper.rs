//! Test helper for the journal's crash tests (not part of the product).
//!
//! `journal-crash-helper <path> <run-id> <mode>` opens (replays) the journal at `path`,
//! then appends records forever, printing `ack <seq> <payload>` on stdout after each record
//! is durable. The test kills it with SIGKILL at random moments and checks that every acked
//! record is in the journal. Modes: `single` (append + fsync each), `batch:N`
//! (`append_batch` of N), `group:N` (N threads through a `GroupCommitter`).
//!
//! If an append fails (e.g. the file-size limit or a full disk), it prints the error and
//! the answer to one more append on stderr and exits with status 3.

use std::io::Write;
use std::process::ExitCode;

use banco_table::journal::{GroupCommitConfig, GroupCommitter, Journal, JournalError};

fn payload(run: &str, worker: usize, n: u64) -> String {
    let mut text = format!("run{run}-w{worker}-n{n}-");
    text.extend(std::iter::repeat_n('x', (n % 97) as usize));
    text
}

fn ack(seq: u64, payload: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (the test stopped reading) is no reason to stop appending.
    let _ = writeln!(out, "ack {seq} {payload}");
}

fn failed(first: &JournalError, then: Result<u64, JournalError>) -> ExitCode {
    eprintln!("append failed: {first}");
    match then {
        Ok(seq) => eprintln!("then: unexpectedly accepted seq {seq}"),
        Err(err) => eprintln!("then: {err}"),
    }
    ExitCode::from(3)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, run, mode] = args.as_slice() else {
        eprintln!("usage: journal-crash-helper <path> <run-id> single|batch:N|group:N");
        return ExitCode::from(2);
    };
    let (mut journal, records) = match Journal::open(path) {
        Ok(opened) => opened,
        Err(err) => {
            eprintln!("open failed: {err}");
            return ExitCode::from(1);
        }
    };
    eprintln!("opened {} records", records.len());
    let (kind, width) = match mode.split_once(':') {
        Some((kind, n)) => (kind, n.parse::<usize>().unwrap_or(1).max(1)),
        None => (mode.as_str(), 1),
    };
    match kind {
        "single" => {
            for n in 0.. {
                let text = payload(run, 0, n);
                match journal.append(text.as_bytes()) {
                    Ok(seq) => ack(seq, &text),
                    Err(err) => return failed(&err, journal.append(b"after failure")),
                }
            }
        }
        "batch" => {
            for n in 0.. {
                let texts: Vec<String> = (0..width).map(|w| payload(run, w, n)).collect();
                let refs: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
                match journal.append_batch(&refs) {
                    Ok(seqs) => seqs.zip(&texts).for_each(|(seq, text)| ack(seq, text)),
                    Err(err) => return failed(&err, journal.append(b"after failure")),
                }
            }
        }
        "group" => {
            let committer = match GroupCommitter::spawn(journal, GroupCommitConfig::default()) {
                Ok(c) => c,
                Err(err) => {
                    eprintln!("spawn failed: {err}");
                    return ExitCode::from(1);
                }
            };
            let workers: Vec<_> = (0..width)
                .map(|w| {
                    let handle = committer.handle();
                    let run = run.clone();
                    std::thread::spawn(move || {
                        for n in 0.. {
                            let text = payload(&run, w, n);
                            match handle.blocking_append(text.clone().into_bytes()) {
                                Ok(seq) => ack(seq, &text),
                                Err(err) => {
                                    eprintln!("append failed: {err}");
                                    return;
                                }
                            }
                        }
                    })
                })
                .collect();
            for worker in workers {
                let _ = worker.join();
            }
            return ExitCode::from(3);
        }
        other => {
            eprintln!("unknown mode {other:?}");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
