//! Provably fair automated shoes, end to end through the actor: a shoe the table shuffles
//! itself is committed to in its first signed record and its key revealed in a later one,
//! and the key re-deals exactly the cards the records hold; a restart seals the same
//! records.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::path::Path;
use std::sync::Arc;

use actor_support::{
    config, eventually, fund, open_small_shoe, play_out_first_shoe, play_solo_round,
};
use banco_table::actor::{Clock, SealedRound, TableHandle};
use banco_table::fairness::{self, RecordedRound, RecordedShoe, ShuffleKey, Unfair};
use banco_table::{ActorTask, LocalRules, MemorySink, Pacing};

async fn start(dir: &Path, sink: &Arc<MemorySink>) -> (TableHandle, ActorTask) {
    banco_table::spawn(
        config(dir, Pacing::SinglePlayer),
        Arc::new(LocalRules),
        Arc::clone(sink) as _,
        Clock::system(),
    )
    .await
    .unwrap()
}

/// The sealed rounds of shoe `shoe`, in play order.
fn of_shoe(sealed: &[SealedRound], shoe: u32) -> Vec<&SealedRound> {
    sealed.iter().filter(|s| s.round.shoe == shoe).collect()
}

/// What an auditor checks: the shoe's rounds as recorded, against `key`.
fn check(rounds: &[&SealedRound], key: &ShuffleKey) -> Result<fairness::Fair, Unfair> {
    let opening = rounds[0].round.shoe_opening.as_ref().unwrap();
    let cards: Vec<Vec<banco_rules::Card>> = rounds
        .iter()
        .map(|s| s.round.cards.iter().map(|c| c.card).collect())
        .collect();
    let ids: Vec<String> = rounds
        .iter()
        .map(|s| s.round.round_id.to_string())
        .collect();
    let recorded: Vec<RecordedRound<'_>> = ids
        .iter()
        .zip(&cards)
        .map(|(round_id, cards)| RecordedRound { round_id, cards })
        .collect();
    fairness::check(
        &RecordedShoe {
            table: &rounds[0].round.table,
            shoe: rounds[0].round.shoe,
            config: opening.config,
            commitment: opening.commitment.as_deref().unwrap(),
            burn: opening.burn.as_ref().map(|b| b.exposed),
            rounds: &recorded,
        },
        key,
    )
}

#[tokio::test]
async fn a_whole_automated_shoe_is_committed_revealed_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let sink = Arc::new(MemorySink::default());
    let (handle, task) = start(dir.path(), &sink).await;
    fund(&handle, "solo", 100_000).await;
    open_small_shoe(&handle).await;
    let n = play_out_first_shoe(&handle, "b", || {}).await;
    // The next shoe, opened by the table itself, has its own commitment.
    play_solo_round(&handle, &format!("b{n}")).await;
    // Delivery runs behind the table, and a shutdown does not wait for it.
    eventually("the second shoe's first round delivered", || {
        !of_shoe(&sink.received(), 2).is_empty()
    })
    .await;
    task.shutdown().await;

    let sealed = sink.received();
    let first = of_shoe(&sealed, 1);
    assert!(first.len() >= 5, "{} rounds", first.len());
    let commitment = first[0]
        .round
        .shoe_opening
        .as_ref()
        .and_then(|o| o.commitment.clone())
        .unwrap();
    assert_eq!(commitment.len(), 64);
    // Revealed only once the shoe has ended: on its last round and on no other.
    let revealed: Vec<_> = sealed
        .iter()
        .filter_map(|s| {
            s.round
                .revealed
                .as_ref()
                .map(|r| (s.round.round_id.to_string(), r))
        })
        .collect();
    assert_eq!(revealed.len(), 1, "{revealed:?}");
    assert_eq!(
        revealed[0].0,
        first.last().unwrap().round.round_id.to_string()
    );
    assert_eq!(revealed[0].1.shoe, 1);
    let key = ShuffleKey::from_hex(&revealed[0].1.key).unwrap();

    let fair = check(&first, &key).unwrap();
    let dealt: usize = first.iter().map(|s| s.round.cards.len()).sum();
    assert_eq!(
        fair.checked,
        1 + dealt,
        "the burn card and every card dealt"
    );
    assert_eq!(
        fair.left + fair.checked + usize::from(fair.face_down),
        52,
        "{fair:?}"
    );
    // Another key (the next shoe's, say) is refused against this shoe's commitment.
    let second = of_shoe(&sealed, 2);
    let second_commitment = second[0]
        .round
        .shoe_opening
        .as_ref()
        .unwrap()
        .commitment
        .clone();
    assert!(second_commitment.is_some());
    assert_ne!(second_commitment.as_deref(), Some(commitment.as_str()));
    assert!(matches!(
        check(&first, &ShuffleKey::new([0; 32])),
        Err(Unfair::Commitment { .. })
    ));

    // Replayed from the journal, the table seals the same records (the watermark check
    // would refuse to start otherwise) and plays on.
    let (handle, task) = start(dir.path(), &sink).await;
    play_solo_round(&handle, &format!("b{}", n + 1)).await;
    task.shutdown().await;
}
