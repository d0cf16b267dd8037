//! The actor and its journal: the configuration is the journal's first record and a start
//! with another one is refused; a journal that fails stops the table, which a restart
//! brings back exactly as acknowledged.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::collections::BTreeSet;
use std::process::Command as Process;
use std::sync::Arc;
use std::time::Duration;

use actor_support::*;
use banco_rules::shoe::ShoeConfig;
use banco_table::journal::Journal;
use banco_table::{ActorError, JournaledConfig, LocalRules, MemorySink, Pacing};

#[tokio::test]
async fn the_config_is_journaled_first_and_a_changed_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut configured = config(dir.path(), Pacing::Live);
    configured.default_shoe = Some(shoe(8));
    let (table, task) = start_with(
        configured.clone(),
        Arc::new(LocalRules),
        Arc::new(MemorySink::new()),
    )
    .await;
    assert_eq!(table.snapshot().await.unwrap().seq, 1);
    ok(&table, deposit("alice", 5_000)).await;
    task.shutdown().await;

    let (_, records) = Journal::open(&configured.journal).unwrap();
    assert_eq!(records.len(), 2);
    let first: JournaledConfig = serde_json::from_slice(&records[0].payload).unwrap();
    assert_eq!(first.table, configured.table);
    assert_eq!(first.default_shoe, Some(shoe(8)));

    let refused = |config| async {
        let spawned = banco_table::spawn(
            config,
            Arc::new(LocalRules),
            Arc::new(MemorySink::new()),
            banco_table::Clock::system(),
        )
        .await;
        match spawned {
            Err(ActorError::Startup(why)) => why,
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(_) => panic!("started under another configuration"),
        }
    };
    let mut higher_limit = configured.clone();
    higher_limit.table.policy.limits.max = 20_000;
    let why = refused(higher_limit).await;
    assert!(
        why.contains("table.policy.limits.max: the journal has 10200, this start has 20000"),
        "{why}"
    );
    let mut paytable = configured.clone();
    paytable.table.policy.paytable = banco_rules::Paytable::preset("no-commission").unwrap();
    let why = refused(paytable).await;
    assert!(why.contains("table.policy.paytable"), "{why}");
    let mut other_shoe = configured.clone();
    other_shoe.default_shoe = Some(ShoeConfig {
        decks: 6,
        ..shoe(8)
    });
    let why = refused(other_shoe).await;
    assert!(
        why.contains("default_shoe.decks: the journal has 8, this start has 6"),
        "{why}"
    );
    // Nothing was written by the refused starts; the right config starts as before.
    let (_, records) = Journal::open(&configured.journal).unwrap();
    assert_eq!(records.len(), 2);
    let (table, task) = start_with(
        configured,
        Arc::new(LocalRules),
        Arc::new(MemorySink::new()),
    )
    .await;
    assert_eq!(table.balance("alice").await.unwrap(), 5_000);
    assert_eq!(table.snapshot().await.unwrap().seq, 2);
    task.shutdown().await;
}

/// Set (to the table's data folder) when this test binary runs as the child of
/// [`a_failed_journal_stops_the_table_and_a_restart_recovers_what_was_acknowledged`].
const CHILD_DIR: &str = "BANCO_ACTOR_JOURNAL_CHILD_DIR";

/// The child: deposits until the journal fails (the file-size limit makes a write fail,
/// standing in for a full disk), then checks that everything is refused and prints what
/// was acknowledged and published. Does nothing in a normal test run.
#[tokio::test]
async fn journal_failure_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    // Ends the harness's "test journal_failure_child ... " line, so ours stand alone.
    println!();
    let (table, task) = start(std::path::Path::new(&dir), Arc::new(MemorySink::new())).await;
    let mut feed = table.subscribe();
    let mut failed = 0;
    // Eight at a time, so that several records share a commit and fail together.
    for batch in 0u64.. {
        let sends = (0..8).map(|i| {
            let n = batch * 8 + i;
            let deposit = banco_table::Command::Deposit {
                player: "alice".into(),
                amount: 100 + i64::try_from(n).unwrap(),
                key: format!("d{n}"),
                now_ms: 0,
            };
            let table = table.clone();
            async move { (n, table.submit(None, deposit).await) }
        });
        for (n, answer) in futures::future::join_all(sends).await {
            match answer {
                Ok(applied) => println!("ack {} {}", applied.seq, 100 + n),
                Err(ActorError::JournalFailed(why)) => {
                    failed += 1;
                    eprintln!("journal failed: {why}");
                }
                Err(other) => panic!("deposit {n}: {other}"),
            }
        }
        if failed > 0 {
            break;
        }
        assert!(batch < 10_000, "the journal never failed");
    }
    // From now on every request is refused.
    let answers = [
        table
            .submit(None, deposit("bob", 1))
            .await
            .map(|_| ())
            .unwrap_err(),
        table.snapshot().await.map(|_| ()).unwrap_err(),
        table.balance("alice").await.map(|_| ()).unwrap_err(),
        table.player("alice").await.map(|_| ()).unwrap_err(),
        table.books().await.map(|_| ()).unwrap_err(),
        table.scoreboard().await.map(|_| ()).unwrap_err(),
    ];
    for answer in answers {
        assert!(matches!(answer, ActorError::JournalFailed(_)), "{answer:?}");
        println!("refused {answer}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    while let Ok(published) = feed.try_recv() {
        println!("published {}", published.seq);
    }
    task.shutdown().await;
    println!("child done");
}

#[tokio::test]
async fn a_failed_journal_stops_the_table_and_a_restart_recovers_what_was_acknowledged() {
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    // SIGXFSZ ignored (ignored signals stay ignored across exec): the write fails with
    // EFBIG instead of killing the process. 16 blocks of 512 bytes.
    let output = Process::new("sh")
        .args([
            "-c",
            r#"trap "" XFSZ; ulimit -f 16 && exec "$0" "$@""#,
            exe.to_str().unwrap(),
            "journal_failure_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "child failed: {}\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("child done"), "{stdout}\n{stderr}");
    let mut acked: Vec<(u64, i64)> = Vec::new();
    let mut published = Vec::new();
    let mut refused = 0;
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["ack", seq, amount] => acked.push((seq.parse().unwrap(), amount.parse().unwrap())),
            ["published", seq] => published.push(seq.parse::<u64>().unwrap()),
            ["refused", ..] => {
                assert!(line.contains("journal failed"), "{line}");
                refused += 1;
            }
            _ => {}
        }
    }
    assert_eq!(refused, 6);
    assert!(
        acked.len() > 2,
        "too few records before the failure: {stdout}"
    );
    acked.sort_unstable();
    let acked_seqs: Vec<u64> = acked.iter().map(|&(seq, _)| seq).collect();
    // Acknowledged records are the journal's records 2, 3, … without a gap (record 1 is
    // the config), and exactly they were published: nothing after the failure.
    assert_eq!(acked_seqs, (2..2 + acked.len() as u64).collect::<Vec<_>>());
    assert_eq!(published, acked_seqs);
    eprintln!("journal failed after {} acknowledged deposits", acked.len());

    // The restart (no file-size limit here) has exactly the acknowledged deposits.
    let sink = Arc::new(MemorySink::new());
    let (table, task) = start(dir.path(), sink).await;
    let last = *acked_seqs.last().unwrap();
    assert_eq!(table.snapshot().await.unwrap().seq, last);
    let total: i64 = acked.iter().map(|&(_, amount)| amount).sum();
    assert_eq!(table.balance("alice").await.unwrap(), total);
    let books = table.books().await.unwrap();
    assert_eq!(books.deposits, total);
    assert_eq!(books.check, Ok(()));
    // And it takes commands again, numbered after the last acknowledged one.
    let next = ok(&table, deposit("bob", 1)).await;
    assert_eq!(next.seq, last + 1);
    task.shutdown().await;
    let (_, records) = Journal::open(dir.path().join("T01.journal")).unwrap();
    let keys: BTreeSet<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(keys.len() as u64, last + 1);
}
