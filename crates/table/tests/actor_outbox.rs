//! The outbox: finished rounds sealed into a hash chain and delivered in order while the
//! table goes on, re-sent after a restart only if not confirmed.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::sync::Arc;

use actor_support::*;
use banco_table::actor::GENESIS_HASH;
use banco_table::{MemorySink, SealedRound};

/// The last round the archive confirmed, as the table's outbox watermark (`T01.outbox`)
/// keeps it; 0 before the first.
fn delivered_seq(dir: &std::path::Path) -> u64 {
    let Ok(bytes) = std::fs::read(dir.join("T01.outbox")) else {
        return 0;
    };
    // A watermark is replaced by a rename, so a read sees a whole one.
    let watermark: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    watermark["delivered_seq"].as_u64().unwrap()
}

fn check_chain(rounds: &[SealedRound], first_seq: u64, mut prev: String) {
    for (i, sealed) in rounds.iter().enumerate() {
        assert_eq!(sealed.seq, first_seq + i as u64);
        assert_eq!(
            sealed.prev_hash, prev,
            "round {} continues the chain",
            sealed.seq
        );
        assert_eq!(
            SealedRound::compute_hash(&sealed.prev_hash, &sealed.round).unwrap(),
            sealed.hash
        );
        prev = sealed.hash.clone();
    }
}

#[tokio::test]
async fn twenty_rounds_reach_a_failing_archive_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::new());
    sink.fail_next(5);
    let (table, task) = start(dir.path(), Arc::clone(&sink)).await;
    fund(&table, "alice", 1_000_000).await;
    ok(&table, open_shoe(8)).await;
    let started = std::time::Instant::now();
    for n in 0..20 {
        play_round(&table, n).await;
    }
    let played = started.elapsed();
    // The five failures cost at least 50+100+200+400+800 ms of backoff, which the table
    // did not wait for.
    assert!(
        sink.received().len() < 20,
        "the table waited for the archive"
    );
    eventually("20 rounds archived", || sink.received().len() == 20).await;
    let delivered = started.elapsed();
    let rounds = sink.received();
    check_chain(&rounds, 1, GENESIS_HASH.to_owned());
    let ids: Vec<String> = rounds
        .iter()
        .map(|r| r.round.round_id.to_string())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert!(sink.attempts() >= 25);
    println!("20 rounds played in {played:?}, all archived after {delivered:?}");
    task.shutdown().await;
}

#[tokio::test]
async fn restart_resends_exactly_the_unconfirmed_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let first = Arc::new(MemorySink::new());
    let (table, task) = start(dir.path(), Arc::clone(&first)).await;
    fund(&table, "alice", 1_000_000).await;
    ok(&table, open_shoe(8)).await;
    for n in 0..3 {
        play_round(&table, n).await;
    }
    eventually("3 rounds archived", || first.received().len() == 3).await;
    eventually("the archive's confirmation of round 3 kept", || {
        delivered_seq(dir.path()) == 3
    })
    .await;
    // The archive goes down; the table goes on.
    first.fail_next(usize::MAX);
    for n in 3..5 {
        play_round(&table, n).await;
    }
    assert_eq!(first.received().len(), 3);
    task.shutdown().await;

    let second = Arc::new(MemorySink::new());
    let (table, task) = start(dir.path(), Arc::clone(&second)).await;
    // Once round 5 is confirmed the outbox has nothing left to send: what was sent by then
    // is all a restart re-sends.
    eventually("rounds 4 and 5 re-sent and confirmed", || {
        delivered_seq(dir.path()) == 5
    })
    .await;
    let resent = second.received();
    assert_eq!(resent.len(), 2, "nothing already confirmed is sent again");
    check_chain(&resent, 4, first.received()[2].hash.clone());
    // New rounds continue the same chain.
    play_round(&table, 5).await;
    eventually("round 6 archived", || second.received().len() == 3).await;
    check_chain(&second.received(), 4, first.received()[2].hash.clone());
    task.shutdown().await;
}

#[tokio::test]
async fn a_table_with_a_key_signs_every_round_and_a_changed_hash_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::new());
    let key = banco_auth::keys::signing_key_from_seed(&[9; 32]);
    let mut actor = config(dir.path(), banco_table::Pacing::Live);
    actor.signer = Some(Arc::new(banco_table::actor::TableSigner::new(key.clone())));
    let (table, task) = start_with(
        actor,
        Arc::new(banco_table::LocalRules),
        Arc::clone(&sink) as _,
    )
    .await;
    fund(&table, "alice", 1_000_000).await;
    ok(&table, open_shoe(8)).await;
    for n in 0..3 {
        play_round(&table, n).await;
    }
    eventually("3 rounds archived", || sink.received().len() == 3).await;
    let rounds = sink.received();
    check_chain(&rounds, 1, GENESIS_HASH.to_owned());
    let public = key.verifying_key();
    for sealed in &rounds {
        assert_eq!(sealed.key_id, banco_auth::key_id(&public));
        sealed.verify_signature(&public).unwrap();
    }
    // Another key, or a hash changed after signing, does not verify.
    let other = banco_auth::keys::signing_key_from_seed(&[8; 32]).verifying_key();
    assert!(rounds[0].verify_signature(&other).is_err());
    let mut forged = rounds[1].clone();
    forged.hash = rounds[2].hash.clone();
    let why = forged.verify_signature(&public).unwrap_err();
    assert!(why.contains(&rounds[1].round.round_id.to_string()), "{why}");
    task.shutdown().await;
}

/// A table with a key signs where its chain stands once the archive has every round, and
/// again while idle; the newest is kept in a file for auditors. A restarted table signs
/// where it stands before any new round.
#[tokio::test]
async fn a_table_with_a_key_signs_checkpoints_of_its_head() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::new());
    let key = banco_auth::keys::signing_key_from_seed(&[9; 32]);
    let public = key.verifying_key();
    let mut actor = config(dir.path(), banco_table::Pacing::Live);
    actor.signer = Some(Arc::new(banco_table::actor::TableSigner::new(key)));
    actor.checkpoint_every = std::time::Duration::from_millis(50);
    let file = actor.checkpoint_file.clone();
    let start_actor = |actor: banco_table::actor::ActorConfig| {
        start_with(
            actor,
            Arc::new(banco_table::LocalRules),
            Arc::clone(&sink) as _,
        )
    };
    let (table, task) = start_actor(actor.clone()).await;
    fund(&table, "alice", 1_000_000).await;
    ok(&table, open_shoe(8)).await;
    for n in 0..2 {
        play_round(&table, n).await;
    }
    eventually("the head of round 2 signed", || {
        sink.checkpoints().iter().any(|c| c.chain_seq == 2)
    })
    .await;
    // Idle: signed again, same head, later.
    eventually("signed again while idle", || {
        sink.checkpoints()
            .iter()
            .filter(|c| c.chain_seq == 2)
            .count()
            >= 2
    })
    .await;
    task.shutdown().await;
    let rounds = sink.received();
    let checkpoints = sink.checkpoints();
    assert!(
        checkpoints
            .windows(2)
            .all(|w| w[0].chain_seq <= w[1].chain_seq && w[0].at <= w[1].at),
        "{checkpoints:?}"
    );
    for c in &checkpoints {
        c.verify(&public).unwrap();
        assert_eq!(c.table, "T01");
        // Before the first round, idle: the empty chain.
        let head = match usize::try_from(c.chain_seq).unwrap() {
            0 => GENESIS_HASH,
            n => rounds[n - 1].hash.as_str(),
        };
        assert_eq!(c.head_hash, head, "a checkpoint names a delivered round");
    }
    let kept = banco_table::actor::Checkpoint::read(&file).unwrap();
    assert_eq!(kept.chain_seq, 2);
    kept.verify(&public).unwrap();
    // Another round number under the same signature does not verify.
    let mut forged = kept.clone();
    forged.chain_seq = 1;
    assert!(forged.verify(&public).is_err());

    // Restarted: where it stands is signed again before any round.
    let before = sink.checkpoints().len();
    let (_table, task) = start_actor(actor).await;
    eventually("signed after the restart", || {
        sink.checkpoints().len() > before
    })
    .await;
    assert_eq!(sink.checkpoints()[before].chain_seq, 2);
    task.shutdown().await;
}
