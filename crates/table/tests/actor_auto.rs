//! Automated and single-player tables: the actor shuffles from a journaled seed, burns,
//! deals, confirms and opens the next round by itself; a restart continues the same shoe.
#![allow(clippy::unwrap_used)]

mod actor_support;

use std::path::Path;
use std::sync::Arc;

use actor_support::{bet, config, fund, ok};
use banco_records::journal::{self, Entry};
use banco_rules::shoe::{BurnRule, Procedure, Shoe, ShoeConfig};
use banco_rules::{BetKind, Card};
use banco_table::actor::{ActorError, ManualClock, TableHandle};
use banco_table::journal::Journal;
use banco_table::{ActorTask, CardSource, Command, Pacing, Phase};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const SEED: u64 = 0x5EED_0003;
const START_MS: u64 = 1_800_000_000_000;

fn burning_shoe() -> ShoeConfig {
    ShoeConfig {
        decks: 8,
        cut_card_from_end: 16,
        burn: BurnRule::ExposeAndBurn,
        procedure: Procedure::CutCard,
    }
}

fn seeded_order() -> Vec<Card> {
    Shoe::shuffled(burning_shoe(), &mut ChaCha20Rng::seed_from_u64(SEED))
        .unwrap()
        .order()
        .to_vec()
}

fn open_shoe() -> Command {
    Command::OpenShoe {
        config: burning_shoe(),
        by: "operator".into(),
        now_ms: 0,
        commitment: None,
    }
}

async fn start(dir: &Path, pacing: Pacing) -> (TableHandle, ActorTask, ManualClock) {
    start_at(dir, pacing, START_MS).await
}

async fn start_at(
    dir: &Path,
    pacing: Pacing,
    now_ms: u64,
) -> (TableHandle, ActorTask, ManualClock) {
    actor_support::start_manual(config(dir, pacing), now_ms, Arc::default()).await
}

/// Lets the actor notice the clock: it ticks and drives after each request, so the second
/// snapshot sees what the first one set off.
async fn poke(handle: &TableHandle) -> banco_table::TableSnapshot {
    handle.snapshot().await.unwrap();
    handle.snapshot().await.unwrap().table
}

fn entries(journal: &Path) -> Vec<(u64, Entry)> {
    let (_journal, records) = Journal::open(journal).unwrap();
    records
        .into_iter()
        .skip(1)
        .map(|r| (r.offset, serde_json::from_slice(&r.payload).unwrap()))
        .collect()
}

fn dealt(entries: &[(u64, Entry)]) -> Vec<Card> {
    entries
        .iter()
        .filter_map(|(_, e)| match e.command {
            journal::Command::DealCard {
                card,
                source: CardSource::Shuffler,
                ..
            } => Some(card),
            _ => None,
        })
        .collect()
}

/// What the order holds after the burn (exposed card, then as many face down as it counts).
fn after_burn(order: &[Card]) -> &[Card] {
    let face_down = usize::from(banco_rules::shoe::burn_count(order[0]));
    &order[1 + face_down..]
}

#[tokio::test]
async fn an_automated_table_plays_five_rounds_by_itself_from_the_seeded_order() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, task, time) = start(dir.path(), Pacing::AutomatedMultiplayer).await;
    fund(&handle, "alice", 100_000).await;
    handle.submit_seeded(None, open_shoe(), SEED).await.unwrap();
    let mut snapshot = poke(&handle).await;
    for n in 0..5 {
        let Phase::BettingOpen { closes_at, .. } = snapshot.phase else {
            panic!("round {n}: {:?}", snapshot.phase);
        };
        assert_eq!(closes_at, Some(time.now_ms() + 20_000));
        let round = snapshot.round_id.clone().unwrap();
        ok(
            &handle,
            bet(&round, "alice", BetKind::Banker, 1_000, &format!("r{n}")),
        )
        .await;
        time.advance(20_000);
        snapshot = poke(&handle).await;
        assert!(
            matches!(snapshot.phase, Phase::BettingClosed { .. }),
            "{:?}",
            snapshot.phase
        );
        let late = handle
            .submit(
                None,
                bet(&round, "alice", BetKind::Player, 1_000, &format!("late{n}")),
            )
            .await;
        assert!(matches!(late, Err(ActorError::Refused(_))), "{late:?}");
        // Not before the draw time.
        time.advance(4_999);
        assert!(matches!(
            poke(&handle).await.phase,
            Phase::BettingClosed { .. }
        ));
        time.advance(1);
        snapshot = poke(&handle).await;
        assert_ne!(snapshot.round_id, Some(round), "round {n} was not played");
    }
    assert_eq!(handle.scoreboard().await.unwrap().results().len(), 5);
    let books = handle.books().await.unwrap();
    assert_eq!(books.check, Ok(()));
    assert_eq!(books.in_play, 0);
    task.shutdown().await;

    let entries = entries(&dir.path().join("T01.journal"));
    let order = seeded_order();
    let seeds: Vec<Option<u64>> = entries
        .iter()
        .filter(|(_, e)| matches!(e.command, journal::Command::OpenShoe { .. }))
        .map(|(_, e)| e.shuffle_seed)
        .collect();
    assert_eq!(seeds, vec![Some(SEED)]);
    let burned: Vec<Card> = entries
        .iter()
        .filter_map(|(_, e)| match e.command {
            journal::Command::Burn { exposed, .. } => Some(exposed),
            _ => None,
        })
        .collect();
    assert_eq!(burned, vec![order[0]]);
    let cards = dealt(&entries);
    assert!(cards.len() >= 20, "{} cards for 5 rounds", cards.len());
    assert_eq!(cards, after_burn(&order)[..cards.len()]);
    let confirms = entries
        .iter()
        .filter(|(_, e)| matches!(&e.command, journal::Command::ConfirmResult { by, .. } if by == "auto"))
        .count();
    assert_eq!(confirms, 5);
}

#[tokio::test]
async fn a_restart_after_two_cards_finishes_the_round_with_the_next_cards_of_the_order() {
    // The whole round, uninterrupted.
    let whole = tempfile::tempdir().unwrap();
    let (handle, task, time) = start(whole.path(), Pacing::AutomatedMultiplayer).await;
    fund(&handle, "alice", 100_000).await;
    handle.submit_seeded(None, open_shoe(), SEED).await.unwrap();
    let round = poke(&handle).await.round_id.unwrap();
    ok(&handle, bet(&round, "alice", BetKind::Player, 2_000, "p")).await;
    time.advance(25_000);
    poke(&handle).await;
    let balance = handle.balance("alice").await.unwrap();
    task.shutdown().await;
    let journal = whole.path().join("T01.journal");
    let full = entries(&journal);
    let cards = dealt(&full);
    assert!(cards.len() >= 4);

    // Killed after the second card: the journal ends before the third.
    let third = full
        .iter()
        .filter(|(_, e)| matches!(e.command, journal::Command::DealCard { .. }))
        .nth(2)
        .unwrap()
        .0;
    let cut = tempfile::tempdir().unwrap();
    let cut_journal = cut.path().join("T01.journal");
    let bytes = std::fs::read(&journal).unwrap();
    std::fs::write(&cut_journal, &bytes[..usize::try_from(third).unwrap()]).unwrap();
    assert_eq!(dealt(&entries(&cut_journal)), cards[..2]);

    let (handle, task, _time) =
        start_at(cut.path(), Pacing::AutomatedMultiplayer, START_MS + 25_000).await;
    let snapshot = poke(&handle).await;
    assert!(
        matches!(snapshot.phase, Phase::BettingOpen { .. }),
        "{:?}",
        snapshot.phase
    );
    assert_eq!(handle.balance("alice").await.unwrap(), balance);
    task.shutdown().await;
    assert_eq!(dealt(&entries(&cut_journal)), cards);
    assert_eq!(cards, after_burn(&seeded_order())[..cards.len()]);
}

#[tokio::test]
async fn a_single_player_deal_deals_and_settles_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, task, _time) = start(dir.path(), Pacing::SinglePlayer).await;
    fund(&handle, "solo", 50_000).await;
    handle.submit_seeded(None, open_shoe(), SEED).await.unwrap();
    let snapshot = poke(&handle).await;
    assert_eq!(
        snapshot.phase,
        match snapshot.phase {
            Phase::BettingOpen { opened_at, .. } => Phase::BettingOpen {
                opened_at,
                closes_at: None
            },
            other => panic!("{other:?}"),
        }
    );
    let round = snapshot.round_id.unwrap();
    ok(&handle, bet(&round, "solo", BetKind::Banker, 1_000, "b")).await;
    ok(
        &handle,
        Command::Deal {
            player: "solo".into(),
            now_ms: 0,
        },
    )
    .await;
    let after = handle.snapshot().await.unwrap().table;
    assert_ne!(after.round_id, Some(round));
    assert!(matches!(after.phase, Phase::BettingOpen { .. }));
    assert_eq!(handle.scoreboard().await.unwrap().results().len(), 1);
    let position = handle.player("solo").await.unwrap();
    assert_eq!(position.in_play(), 0);
    assert_eq!(handle.books().await.unwrap().check, Ok(()));
    task.shutdown().await;
    let entries = entries(&dir.path().join("T01.journal"));
    let cards = dealt(&entries);
    assert_eq!(cards, after_burn(&seeded_order())[..cards.len()]);
}
