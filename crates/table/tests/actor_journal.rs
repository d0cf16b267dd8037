//! The actor and its journal: the configuration is the journal's first record and a start
//! with another one is refused; a journal that fails refuses the commands it could not
//! write, the table reopens it and reads back exactly what was acknowledged, and takes
//! commands again once the journal can be written (and a restart finds the same).
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::collections::BTreeSet;
use std::process::Command as Process;
use std::sync::Arc;

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
    fund(&table, "alice", 5_000).await;
    task.shutdown().await;

    let (_, records) = Journal::open(&configured.journal).unwrap();
    assert_eq!(records.len(), 2);
    let first: JournaledConfig = serde_json::from_slice(&records[0].payload).unwrap();
    assert_eq!(first.table, (&configured.table).into());
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
    assert_eq!(table.balance("alice").await.unwrap(), Some(5_000));
    assert_eq!(table.snapshot().await.unwrap().seq, 2);
    task.shutdown().await;
}

/// Set (to the table's data folder) when this test binary runs as the child of
/// [`a_failed_journal_refuses_changes_nothing_and_recovers_when_it_can_be_written`].
const CHILD_DIR: &str = "BANCO_ACTOR_JOURNAL_CHILD_DIR";

/// The wallet telling the table `player`'s balance: a small command whose effect a read
/// shows.
fn told(player: &str, balance: i64) -> banco_table::Command {
    banco_table::Command::WalletChanged {
        player: player.into(),
        balance,
        delta: balance,
        reason: "deposit".into(),
        version: None,
        now_ms: 0,
    }
}

/// The child: sends commands until the journal fails (the file-size limit makes a write fail,
/// standing in for a full disk); while the limit stays, a command is refused and reads
/// show exactly what was acknowledged; once the child lifts its own limit (`prlimit`, the
/// disk has room again), the next command is applied. Prints what was acknowledged,
/// refused and published. Does nothing in a normal test run.
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
            let amount = 100 + i64::try_from(n).unwrap();
            let command = told(&format!("p{amount}"), amount);
            let table = table.clone();
            async move { (n, table.submit(None, command).await) }
        });
        for (n, answer) in futures::future::join_all(sends).await {
            match answer {
                Ok(applied) => println!("ack {} {}", applied.seq, 100 + n),
                Err(ActorError::JournalFailed(why)) => {
                    failed += 1;
                    println!("lost {}", 100 + n);
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
    // The disk is still "full": each command is refused again, naming the cause, and the
    // reads in between show the table as of the last acknowledged record.
    // (A record smaller than the batch that failed may still fit: it is acknowledged.)
    let mut refused = 0;
    for n in 1_000_000.. {
        let snapshot = table.snapshot().await.unwrap();
        println!("snapshot {}", snapshot.seq);
        let books = table.books().await.unwrap();
        assert_eq!(books.check, Ok(()));
        match table.submit(None, told(&format!("p{n}"), n)).await {
            Ok(applied) => println!("ack {} {n}", applied.seq),
            Err(answer @ ActorError::JournalFailed(_)) => {
                println!("lost {n}");
                let shown = table.balance(&format!("p{n}")).await.unwrap();
                println!("shown {n} {shown:?}");
                println!("refused {answer}");
                refused += 1;
                if refused == 2 {
                    break;
                }
            }
            Err(other) => panic!("deposit {n}: {other}"),
        }
    }
    assert_eq!(table.balance("bob").await.unwrap(), None);
    // Room again: the soft file-size limit is lifted.
    let lifted = Process::new("prlimit")
        .args([
            "--pid",
            &std::process::id().to_string(),
            "--fsize=unlimited:",
        ])
        .status()
        .unwrap();
    assert!(lifted.success(), "prlimit: {lifted}");
    let applied = ok(&table, told("bob", 7)).await;
    println!("ack-after {}", applied.seq);
    assert_eq!(table.balance("bob").await.unwrap(), Some(7));
    // Everything published, through the record of the command just answered.
    let last = applied.seq;
    while let Ok(Ok(published)) = tokio::time::timeout(banco_testkit::PATIENCE, feed.recv()).await {
        println!("published {}", published.seq);
        if published.seq >= last {
            break;
        }
    }
    task.shutdown().await;
    println!("child done");
}

#[tokio::test]
async fn a_failed_journal_refuses_changes_nothing_and_recovers_when_it_can_be_written() {
    if std::env::var_os(CHILD_DIR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    // SIGXFSZ ignored (ignored signals stay ignored across exec): the write fails with
    // EFBIG instead of killing the process. 16 blocks of 512 bytes, a soft limit the
    // child lifts itself.
    let output = Process::new("sh")
        .args([
            "-c",
            r#"trap "" XFSZ; ulimit -S -f 16 && exec "$0" "$@""#,
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
    let mut lost: Vec<i64> = Vec::new();
    let mut published = Vec::new();
    let mut refused = 0;
    let mut reads = 0;
    let mut after = Vec::new();
    let number = |w: &str| w.parse::<u64>().unwrap();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        // Each read after the failure shows exactly what was acknowledged before it.
        let last_acked = acked.iter().map(|&(seq, _)| seq).max().unwrap_or(0);
        match words.as_slice() {
            ["ack", seq, amount] => acked.push((seq.parse().unwrap(), amount.parse().unwrap())),
            ["lost", amount] => lost.push(amount.parse::<i64>().unwrap()),
            // A refused command shows nothing of itself.
            ["shown", _, shown] => assert_eq!(*shown, "None", "{line}"),
            ["published", seq] => published.push(number(seq)),
            ["snapshot", seq] => {
                assert_eq!(number(seq), last_acked, "{line}");
                reads += 1;
            }
            ["ack-after", seq] => after.push(number(seq)),
            ["refused", ..] => {
                // What a croupier reads: the cause, and that nothing changed.
                assert!(
                    line.contains("journal write failed: File too large")
                        && line.contains("the command was not applied and nothing changed"),
                    "{line}"
                );
                refused += 1;
            }
            _ => {}
        }
    }
    assert_eq!(refused, 2);
    assert!(
        acked.len() > 2,
        "too few records before the failure: {stdout}"
    );
    acked.sort_unstable();
    let acked_seqs: Vec<u64> = acked.iter().map(|&(seq, _)| seq).collect();
    // Acknowledged records are the journal's records 2, 3, … without a gap (record 1 is
    // the config), and exactly they were published, then the one applied once the journal
    // could be written again, numbered right after them: nothing refused was published.
    assert_eq!(acked_seqs, (2..2 + acked.len() as u64).collect::<Vec<_>>());
    let last = *acked_seqs.last().unwrap();
    assert!(reads >= 2, "{stdout}");
    assert_eq!(after, [last + 1]);
    let mut expected_published = acked_seqs.clone();
    expected_published.push(last + 1);
    assert_eq!(published, expected_published);
    eprintln!("journal failed after {} acknowledged commands", acked.len());

    // A restart has exactly the acknowledged commands, nothing of the refused ones.
    let sink = Arc::new(MemorySink::new());
    let (table, task) = start(dir.path(), sink).await;
    assert_eq!(table.snapshot().await.unwrap().seq, last + 1);
    // (Each command told the balance `amount` of player `p<amount>`.)
    for &(_, amount) in &acked {
        let player = format!("p{amount}");
        assert_eq!(
            table.balance(&player).await.unwrap(),
            Some(amount),
            "{player}"
        );
    }
    assert!(!lost.is_empty());
    for amount in &lost {
        let player = format!("p{amount}");
        assert_eq!(table.balance(&player).await.unwrap(), None, "{player}");
    }
    assert_eq!(table.balance("bob").await.unwrap(), Some(7));
    let books = table.books().await.unwrap();
    assert_eq!(books.check, Ok(()));
    // And it takes commands, numbered after the last acknowledged one.
    let next = ok(&table, told("bob", 8)).await;
    assert_eq!(next.seq, last + 2);
    task.shutdown().await;
    let (_, records) = Journal::open(dir.path().join("T01.journal")).unwrap();
    let keys: BTreeSet<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(keys.len() as u64, last + 2);
}

/// A table on `dir` with €100.00 of alice's in its wallet, a shoe open and betting open on
/// its first round.
async fn alice_at_an_open_round(
    dir: &std::path::Path,
) -> (
    banco_table::TableHandle,
    banco_table::ActorTask,
    banco_table::RoundId,
) {
    let (table, task) = start(dir, Arc::new(MemorySink::new())).await;
    fund(&table, "alice", 10_000).await;
    ok(&table, open_shoe(8)).await;
    let round = ok(&table, open_betting()).await.snapshot.round_id.unwrap();
    (table, task, round)
}

/// A journal written before the wallet's answers were journaled together (one
/// `wallet_debited` record per bet request, its own shape) still replays: the bet it
/// took is in play after a restart, and the table takes bets on, whose answers now come
/// in one `wallet_debited_many` record.
#[tokio::test]
async fn a_journal_of_one_answer_per_record_replays() {
    use banco_records::journal::Entry;
    use banco_rules::BetKind;
    use banco_table::{Command, DebitOutcome};
    let dir = tempfile::tempdir().unwrap();
    let configured = config(dir.path(), Pacing::Live);
    let (_table, task, round) = alice_at_an_open_round(dir.path()).await;
    task.shutdown().await;

    // The request and the wallet's answer to it as the table journaled them then (and the
    // wallet took the debit).
    let wallet = wallet_of(dir.path());
    let debit = banco_wallet::Debit {
        tx: banco_table::wallet_book::debit_id(
            &round,
            "alice",
            banco_table::wallet_book::RequestNumber::OfRound(1),
            BetKind::Player,
        ),
        player: "alice".into(),
        currency: "EUR".into(),
        amount: 1_000,
        table: "T01".into(),
        round: round.to_string(),
        bet: "player".into(),
        position_total: 1_000,
    };
    let receipt = banco_wallet::Wallet::debit(wallet.as_ref(), &debit)
        .await
        .unwrap();
    let now_ms = banco_table::Clock::system().now_ms();
    let records = [
        Command::PlaceBets {
            player: "alice".into(),
            round_id: round.clone(),
            bets: vec![(BetKind::Player, 1_000)],
            key: "k1".into(),
            now_ms,
        },
        Command::WalletDebited {
            player: "alice".into(),
            key: "k1".into(),
            outcome: DebitOutcome::Taken {
                balance: receipt.balance,
                version: receipt.version,
            },
            now_ms,
        },
    ];
    let (mut journal, _) = Journal::open(&configured.journal).unwrap();
    for command in records {
        let entry = Entry {
            command_id: None,
            command: command.into(),
            shuffle_seed: None,
            shuffle_key: None,
        };
        journal
            .append(&serde_json::to_vec(&entry).unwrap())
            .unwrap();
    }
    let (_, written) = Journal::open(&configured.journal).unwrap();
    let last = String::from_utf8(written.last().unwrap().payload.clone()).unwrap();
    assert!(last.contains(r#""command":"wallet_debited""#), "{last}");
    drop(journal);

    let (table, task) = start(dir.path(), Arc::new(MemorySink::new())).await;
    let alice = table.player("alice").await.unwrap();
    assert_eq!(alice.stakes.get(&BetKind::Player), Some(&1_000));
    assert_eq!(alice.balance, Some(9_000));
    assert_eq!(table.books().await.unwrap().in_play, 1_000);
    // A bet now: its answer is journaled the new way.
    ok(&table, bet(&round, "alice", BetKind::Banker, 500, "k2")).await;
    let alice = table.player("alice").await.unwrap();
    assert_eq!(alice.stakes.get(&BetKind::Banker), Some(&500));
    task.shutdown().await;
    let (_, written) = Journal::open(&configured.journal).unwrap();
    let last = String::from_utf8(written.last().unwrap().payload.clone()).unwrap();
    assert!(
        last.contains(r#""command":"wallet_debited_many""#),
        "{last}"
    );
}

/// The table's journal lost (or its folder mistyped) while the wallet keeps the table's
/// movements: a new journal would number the rounds from the first again and reuse their
/// transaction ids, which the wallet answers as replays without moving money. The start
/// is refused, naming the newest round the wallet holds, and writes nothing, so the next
/// start asks again; the same wallet starts a table it holds nothing of.
#[tokio::test]
async fn a_new_journal_of_a_table_the_wallet_holds_rounds_of_is_refused() {
    use banco_rules::BetKind;
    let dir = tempfile::tempdir().unwrap();
    let configured = config(dir.path(), Pacing::Live);
    let (table, task, round) = alice_at_an_open_round(dir.path()).await;
    ok(&table, bet(&round, "alice", BetKind::Player, 1_000, "k1")).await;
    task.shutdown().await;
    std::fs::remove_file(&configured.journal).unwrap();

    let spawn = |config| {
        banco_table::spawn(
            config,
            Arc::new(LocalRules),
            Arc::new(MemorySink::new()),
            banco_table::Clock::system(),
        )
    };
    for _ in 0..2 {
        let why = match spawn(configured.clone()).await {
            Err(ActorError::Startup(why)) => why,
            Err(other) => panic!("refused for another reason: {other}"),
            Ok(_) => panic!("started a new journal of a table the wallet holds rounds of"),
        };
        assert!(
            why.contains(&format!(
                "the journal {} is new, but the wallet holds movements of table T01 (the newest \
                 of round T01-S0001-H001): a new journal numbers the rounds from T01-S0001-H001 \
                 again",
                configured.journal.display()
            )),
            "{why}"
        );
        assert!(why.contains("Restore the table's journal"), "{why}");
        let (_, records) = Journal::open(&configured.journal).unwrap();
        assert!(records.is_empty(), "a refused start journaled {records:?}");
    }
    // Alice's money is where the first journal left it: nothing moved by the refusals.
    let account = banco_wallet::Wallet::account(wallet_of(dir.path()).as_ref(), "alice", "EUR")
        .await
        .unwrap();
    assert_eq!(account.balance, 9_000);

    let mut other = configured.clone();
    other.table.table_id = "T02".into();
    other.journal = dir.path().join("T02.journal");
    let (table, task) = spawn(other).await.unwrap();
    assert_eq!(table.snapshot().await.unwrap().seq, 1);
    task.shutdown().await;
}
