//! Helpers for the actor's tests: starting an actor on a temp dir, and playing rounds
//! through its handle.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig};
use banco_rules::{BetKind, Card};
use banco_table::actor::{ActorConfig, ActorTask, ArchiveSink, Clock, Rules, TableHandle};
use banco_table::{Applied, CardSource, Command, LocalRules, MemorySink, Pacing, TableConfig};

pub const CROUPIER: &str = "croupier-1";

pub fn card(text: &str) -> Card {
    Card::parse(text).unwrap()
}

pub fn config(dir: &Path, pacing: Pacing) -> ActorConfig {
    ActorConfig::in_dir(TableConfig::new("T01", pacing), dir)
}

pub async fn start_with(
    config: ActorConfig,
    rules: Arc<dyn Rules>,
    sink: Arc<dyn ArchiveSink>,
) -> (TableHandle, ActorTask) {
    banco_table::spawn(config, rules, sink, Clock::system())
        .await
        .unwrap()
}

pub async fn start(dir: &Path, sink: Arc<MemorySink>) -> (TableHandle, ActorTask) {
    start_with(config(dir, Pacing::Live), Arc::new(LocalRules), sink).await
}

pub fn shoe(decks: u8) -> ShoeConfig {
    ShoeConfig {
        decks,
        cut_card_from_end: 16,
        burn: BurnRule::None,
        procedure: Procedure::CutCard,
    }
}

pub fn open_shoe(decks: u8) -> Command {
    Command::OpenShoe {
        config: shoe(decks),
        by: CROUPIER.into(),
        now_ms: 0,
    }
}

pub fn open_betting() -> Command {
    Command::OpenBetting {
        by: CROUPIER.into(),
        now_ms: 0,
    }
}

pub fn close_betting() -> Command {
    Command::CloseBetting {
        by: CROUPIER.into(),
        now_ms: 0,
    }
}

pub fn deal(text: &str) -> Command {
    Command::DealCard {
        card: card(text),
        source: CardSource::Scanner,
        now_ms: 0,
    }
}

pub fn confirm(round: &banco_table::RoundId) -> Command {
    Command::ConfirmResult {
        round_id: round.clone(),
        by: CROUPIER.into(),
        now_ms: 0,
    }
}

pub fn deposit(player: &str, amount: i64) -> Command {
    Command::Deposit {
        player: player.into(),
        amount,
        key: format!("dep-{player}-{amount}"),
        now_ms: 0,
    }
}

pub fn bet(
    handle_round: &banco_table::RoundId,
    player: &str,
    kind: BetKind,
    amount: i64,
    key: &str,
) -> Command {
    Command::PlaceBets {
        player: player.into(),
        round_id: handle_round.clone(),
        bets: vec![(kind, amount)],
        key: key.into(),
        now_ms: 0,
    }
}

pub async fn ok(handle: &TableHandle, command: Command) -> Applied {
    handle
        .submit(None, command.clone())
        .await
        .unwrap_or_else(|e| panic!("{command:?} refused: {e}"))
}

/// A Banker natural (Player 2 3, Banker 4 5) in the `n`-th suit rotation.
pub fn banker_natural(n: u64) -> Vec<String> {
    let suits = ['S', 'H', 'D', 'C'];
    let s = |k: u64| suits[((n + k) % 4) as usize];
    vec![
        format!("2{}", s(0)),
        format!("4{}", s(1)),
        format!("3{}", s(0)),
        format!("5{}", s(1)),
    ]
}

/// Plays round `n`: alice bets 1000 on Banker, the croupier deals a Banker natural and
/// confirms. Returns the confirm's answer.
pub async fn play_round(handle: &TableHandle, n: u64) -> Applied {
    let opened = ok(handle, open_betting()).await;
    let round = opened.snapshot.round_id.clone().unwrap();
    ok(
        handle,
        bet(&round, "alice", BetKind::Banker, 1_000, &format!("r{n}")),
    )
    .await;
    ok(handle, close_betting()).await;
    for c in banker_natural(n) {
        ok(handle, deal(&c)).await;
    }
    ok(handle, confirm(&round)).await
}

/// Waits (up to 20 s) until `done` holds.
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..2_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}
