//! The stored formats, against the golden files in `crates/records/tests/golden/v<N>/`,
//! each folder written by the version that introduced journal format N: every later
//! version must replay those journals and seal exactly those records, byte for byte
//! (hashes and signatures included), or it has changed a format that auditors and
//! restarts depend on. Format 2 has format 1's records and numbers a round's debits in the
//! order its bet requests came (see `banco_records::journal::JOURNAL_FORMAT`), so its
//! rounds name other debit ids; both folders are the same script played.
//!
//! - `T01.journal`: a live table: bets by two players (two requests on one round), a bet
//!   refused by the wallet and its debit cancelled, bets cleared and placed again, a card
//!   taken back, a round voided, a shoe ended early and a new one opened with its burn;
//! - `T02.journal`: an automated single-player table dealing a one-deck shoe to its end,
//!   committed to and revealed;
//! - `rounds.jsonl`: every round both tables sealed, one `SealedRound` a line, the format
//!   of a broadcaster's `outbox.jsonl`, signed by the key of seed `[42; 32]`;
//! - `T01.checkpoint.json`: T01's last signed checkpoint.
//!
//! `BANCO_WRITE_GOLDEN=1 cargo test -p banco-table --test golden` writes them for the
//! format this version starts journals in, into a folder of its own that must not exist
//! yet: only for a new format version, never over an earlier one.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use actor_support::{
    CROUPIER, bet, card, close_betting, config, confirm, deal, fund, ok, shoe_config,
};
use banco_records::journal::{Entry, JOURNAL_FORMAT};
use banco_rules::BetKind;
use banco_rules::shoe::{BurnRule, ShoeConfig};
use banco_table::actor::{
    ActorConfig, Checkpoint, ManualClock, SealedRound, TableHandle, TableSigner,
};
use banco_table::journal::Journal;
use banco_table::{ActorTask, Command, MemorySink, Pacing, RoundId};

const START_MS: u64 = 1_800_000_000_000;

fn golden_dir(format: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../records/tests/golden/v{format}"))
}

fn signer() -> Arc<TableSigner> {
    Arc::new(TableSigner::new(banco_auth::keys::signing_key_from_seed(
        &[42; 32],
    )))
}

fn actor_config(dir: &Path, table: &str, pacing: Pacing) -> ActorConfig {
    let mut actor = config(dir, pacing);
    actor.table.table_id = table.to_owned();
    actor.journal = dir.join(format!("{table}.journal"));
    actor.outbox_watermark = dir.join(format!("{table}.outbox"));
    actor.checkpoint_file = dir.join(format!("{table}.checkpoint.json"));
    // A golden journal holds its records only, not the zeros a table writes ahead.
    actor.commit.zero_ahead = 0;
    actor.signer = Some(signer());
    actor
}

async fn start(
    dir: &Path,
    table: &str,
    pacing: Pacing,
    sink: &Arc<MemorySink>,
) -> (TableHandle, ActorTask, ManualClock) {
    let config = actor_config(dir, table, pacing);
    actor_support::start_manual(config, START_MS, Arc::clone(sink)).await
}

fn burning(decks: u8) -> ShoeConfig {
    shoe_config(decks, BurnRule::ExposeAndBurn)
}

fn open_shoe(config: ShoeConfig) -> Command {
    Command::OpenShoe {
        config,
        by: CROUPIER.into(),
        now_ms: 0,
        commitment: None,
    }
}

/// Waits until every payout and refund the table owes `players` has been taken.
async fn settled(handle: &TableHandle, players: &[&str]) {
    for player in players {
        actor_support::eventually_async("the wallet took every credit", || async {
            handle.player(player).await.unwrap().pending == 0
        })
        .await;
    }
}

/// Opens betting on the next round: its id.
async fn open_round(handle: &TableHandle) -> RoundId {
    ok(handle, actor_support::open_betting())
        .await
        .snapshot
        .round_id
        .unwrap()
}

/// Deals `cards`, each a `step` after the one before.
async fn deal_each(handle: &TableHandle, step: &impl Fn(), cards: &[&str]) {
    for c in cards {
        step();
        ok(handle, deal(c)).await;
    }
}

/// T01: the live table's script.
async fn play_live(handle: &TableHandle, time: &ManualClock) {
    let step = || time.advance(1_000);
    fund(handle, "alice", 100_000).await;
    fund(handle, "bob", 3_000).await;
    ok(handle, open_shoe(burning(8))).await;
    ok(
        handle,
        Command::Burn {
            exposed: card("4S"),
            by: CROUPIER.into(),
            now_ms: 0,
        },
    )
    .await;

    // Round 1: alice in two requests, bob's over his balance refused by the wallet, then
    // a bet he can pay; a Player natural.
    let round = open_round(handle).await;
    step();
    ok(handle, bet(&round, "alice", BetKind::Banker, 2_000, "a1")).await;
    step();
    ok(handle, bet(&round, "alice", BetKind::PlayerPair, 500, "a2")).await;
    step();
    let refused = handle
        .submit(None, bet(&round, "bob", BetKind::Player, 5_000, "b1"))
        .await
        .unwrap();
    assert!(
        refused.events.iter().any(|e| matches!(
            e,
            banco_table::Event::BetsRefused { .. } | banco_table::Event::BetsPending { .. }
        )),
        "{refused:?}"
    );
    step();
    ok(handle, bet(&round, "bob", BetKind::Player, 1_000, "b2")).await;
    step();
    ok(handle, close_betting()).await;
    deal_each(handle, &step, &["8H", "2C", "KD", "3S"]).await;
    step();
    ok(handle, confirm(&round)).await;
    settled(handle, &["alice", "bob"]).await;

    // Round 2: alice clears and bets again; a card taken back and dealt again.
    step();
    let round = open_round(handle).await;
    step();
    ok(
        handle,
        Command::PlaceBets {
            player: "alice".into(),
            round_id: round.clone(),
            bets: vec![(BetKind::Player, 1_000), (BetKind::Tie, 500)],
            key: "a3".into(),
            now_ms: 0,
        },
    )
    .await;
    step();
    ok(
        handle,
        Command::ClearBets {
            player: "alice".into(),
            round_id: None,
            key: "a4".into(),
            now_ms: 0,
        },
    )
    .await;
    step();
    ok(handle, bet(&round, "alice", BetKind::Banker, 1_500, "a5")).await;
    step();
    ok(handle, close_betting()).await;
    deal_each(handle, &step, &["2H", "5D", "4C"]).await;
    step();
    ok(
        handle,
        Command::UndoLastCard {
            reason: "misread".into(),
            by: "pit boss".into(),
            now_ms: 0,
        },
    )
    .await;
    deal_each(handle, &step, &["4C", "9S", "6H"]).await;
    step();
    ok(handle, confirm(&round)).await;
    settled(handle, &["alice"]).await;

    // Round 3: voided after two cards; the stakes refunded.
    step();
    let round = open_round(handle).await;
    step();
    ok(handle, bet(&round, "bob", BetKind::Banker, 700, "b3")).await;
    step();
    ok(handle, close_betting()).await;
    deal_each(handle, &step, &["7C", "7D"]).await;
    step();
    ok(
        handle,
        Command::VoidRound {
            round_id: round,
            reason: "card on the floor".into(),
            by: CROUPIER.into(),
            now_ms: 0,
        },
    )
    .await;
    settled(handle, &["bob"]).await;

    // The shoe ended early, a new one opened and burned; one round on it.
    step();
    ok(
        handle,
        Command::EndShoe {
            reason: "shoe damaged".into(),
            by: CROUPIER.into(),
            now_ms: 0,
        },
    )
    .await;
    step();
    ok(handle, open_shoe(burning(6))).await;
    step();
    ok(
        handle,
        Command::Burn {
            exposed: card("KH"),
            by: CROUPIER.into(),
            now_ms: 0,
        },
    )
    .await;
    step();
    let round = open_round(handle).await;
    step();
    ok(handle, bet(&round, "alice", BetKind::Player, 1_000, "a6")).await;
    step();
    ok(handle, close_betting()).await;
    deal_each(handle, &step, &["TS", "JH", "QD", "KC", "5S", "6C"]).await;
    step();
    ok(handle, confirm(&round)).await;
    settled(handle, &["alice"]).await;
}

/// T02: an automated single-player table deals a one-deck shoe to its end.
async fn play_automated(handle: &TableHandle, time: &ManualClock) {
    fund(handle, "solo", 100_000).await;
    actor_support::open_small_shoe(handle).await;
    actor_support::play_out_first_shoe(handle, "s", || time.advance(1_000)).await;
    settled(handle, &["solo"]).await;
}

fn lines(rounds: &[SealedRound]) -> String {
    rounds
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

/// Writes the golden files into `to` (see the module's docs).
async fn write_golden(to: &Path) {
    assert!(
        !to.join("T01.journal").exists(),
        "{} holds golden files already: a format's files are never written again",
        to.display()
    );
    std::fs::create_dir_all(to).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut sealed = Vec::new();
    for (table, pacing) in [("T01", Pacing::Live), ("T02", Pacing::SinglePlayer)] {
        let sink = Arc::new(MemorySink::new());
        let (handle, task, time) = start(dir.path(), table, pacing, &sink).await;
        match pacing {
            Pacing::Live => play_live(&handle, &time).await,
            _ => play_automated(&handle, &time).await,
        }
        actor_support::eventually("every round archived", || {
            sink.checkpoints()
                .last()
                .is_some_and(|c| Some(c.chain_seq) == sink.received().last().map(|r| r.seq))
        })
        .await;
        task.shutdown().await;
        sealed.extend(sink.received());
        std::fs::copy(
            dir.path().join(format!("{table}.journal")),
            to.join(format!("{table}.journal")),
        )
        .unwrap();
        if table == "T01" {
            std::fs::copy(
                dir.path().join("T01.checkpoint.json"),
                to.join("T01.checkpoint.json"),
            )
            .unwrap();
        }
    }
    std::fs::write(to.join("rounds.jsonl"), lines(&sealed)).unwrap();
}

/// Every record of `journal` reads as this version's entry and encodes back to the very
/// bytes stored; the journal's format.
fn journal_reencodes(journal: &Path) -> u32 {
    let (_journal, records) = Journal::open(journal).unwrap();
    let mut records = records.into_iter();
    let first = records.next().unwrap();
    let config: banco_table::actor::JournaledConfig =
        serde_json::from_slice(&first.payload).unwrap();
    assert_eq!(serde_json::to_vec(&config).unwrap(), first.payload);
    for record in records {
        let entry: Entry = serde_json::from_slice(&record.payload)
            .unwrap_or_else(|e| panic!("record {}: {e}", record.seq));
        assert_eq!(
            serde_json::to_vec(&entry).unwrap(),
            record.payload,
            "record {} re-encodes to other bytes",
            record.seq
        );
    }
    config.format
}

/// Replays the golden journals of `format` and compares what they seal with the golden
/// records; the records, for the caller to look into.
async fn replays_to_the_golden_records(format: u32) -> String {
    let golden = golden_dir(format);
    let expected = std::fs::read_to_string(golden.join("rounds.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut replayed = Vec::new();
    for (table, pacing) in [("T01", Pacing::Live), ("T02", Pacing::SinglePlayer)] {
        let journal = dir.path().join(format!("{table}.journal"));
        std::fs::copy(golden.join(format!("{table}.journal")), &journal).unwrap();
        assert_eq!(journal_reencodes(&journal), format, "{table}");
        // No watermark: the outbox sends every round the replay seals.
        let sink = Arc::new(MemorySink::new());
        let (_handle, task, _time) = start(dir.path(), table, pacing, &sink).await;
        let count = expected
            .lines()
            .filter(|l| l.contains(&format!("\"table\":\"{table}\"")))
            .count();
        actor_support::eventually("the replayed rounds delivered", || {
            sink.received().len() >= count
        })
        .await;
        task.shutdown().await;
        replayed.extend(sink.received());
    }
    let replayed = lines(&replayed);
    for (n, (ours, golden)) in replayed.lines().zip(expected.lines()).enumerate() {
        assert_eq!(ours, golden, "round {} of rounds.jsonl", n + 1);
    }
    assert_eq!(replayed.lines().count(), expected.lines().count());

    let checkpoint = Checkpoint::read(&golden.join("T01.checkpoint.json")).unwrap();
    let public = banco_auth::keys::signing_key_from_seed(&[42; 32]).verifying_key();
    checkpoint.verify(&public).unwrap();
    let last = expected
        .lines()
        .rfind(|l| l.contains("\"table\":\"T01\""))
        .unwrap();
    let last: SealedRound = serde_json::from_str(last).unwrap();
    assert_eq!(
        (checkpoint.chain_seq, checkpoint.head_hash.as_str()),
        (last.seq, last.hash.as_str())
    );
    expected
}

#[tokio::test]
async fn version_1_journals_replay_to_the_golden_records_byte_for_byte() {
    let rounds = replays_to_the_golden_records(1).await;
    assert!(rounds.contains("\"debit:T01-S0001-H001:alice:2:player_pair\""));
}

/// A journal of format 2 numbers its debits by the round's requests: alice's second
/// request on the first round was its second (bob's came after).
#[tokio::test]
async fn version_2_journals_replay_to_the_golden_records_byte_for_byte() {
    if std::env::var_os("BANCO_WRITE_GOLDEN").is_some() {
        write_golden(&golden_dir(JOURNAL_FORMAT)).await;
    }
    let rounds = replays_to_the_golden_records(2).await;
    assert!(rounds.contains("\"debit:T01-S0001-H001:000002:alice:player_pair\""));
    assert!(!rounds.contains(":alice:2:player_pair\""));
}

/// A table started on a journal of format 1 goes on numbering its debits as format 1
/// did, so that a bet request it journaled before an upgrade (and, after it, every request
/// of the round it was on) names the debits the wallet was or will be asked for; a new
/// journal numbers them by the round's requests.
#[tokio::test]
async fn a_table_goes_on_with_the_debit_ids_of_its_journals_format() {
    for (format, id) in [
        (1, "debit:T01-S0002-H002:alice:1:banker"),
        (2, "debit:T01-S0001-H001:000001:alice:banker"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        if format == 1 {
            std::fs::copy(
                golden_dir(1).join("T01.journal"),
                dir.path().join("T01.journal"),
            )
            .unwrap();
        }
        let sink = Arc::new(MemorySink::new());
        let (handle, task, time) = start(dir.path(), "T01", Pacing::Live, &sink).await;
        time.advance(3_600_000);
        fund(&handle, "alice", 10_000).await;
        if format == 2 {
            ok(&handle, open_shoe(burning(8))).await;
            ok(
                &handle,
                Command::Burn {
                    exposed: card("4S"),
                    by: CROUPIER.into(),
                    now_ms: 0,
                },
            )
            .await;
        }
        let round = open_round(&handle).await;
        ok(&handle, bet(&round, "alice", BetKind::Banker, 500, "late")).await;
        let moved = actor_support::wallet_of(dir.path()).transactions();
        assert!(
            moved.iter().any(|tx| tx.as_str() == id),
            "format {format}: {moved:?}"
        );
        task.shutdown().await;
    }
}
