//! Helpers for the actor's tests: starting an actor on a temp dir, and playing rounds
//! through its handle.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig};
use banco_rules::{BetKind, Card};
use banco_table::actor::{ActorConfig, ActorTask, ArchiveSink, Clock, Rules, TableHandle};
use banco_table::{Applied, CardSource, Command, LocalRules, MemorySink, Pacing, TableConfig};
use banco_wallet::{MemoryWallet, Wallet};

pub const CROUPIER: &str = "croupier-1";

pub fn card(text: &str) -> Card {
    Card::parse(text).unwrap()
}

/// An actor on `dir`, spending through the wallet of `dir` ([`wallet_of`]): restarted on
/// the same dir, it finds the same wallet, as a restarted broadcaster finds its wallet.
pub fn config(dir: &Path, pacing: Pacing) -> ActorConfig {
    let mut config = ActorConfig::in_dir(TableConfig::new("T01", pacing), dir);
    config.wallet = wallet_of(dir);
    config
}

/// The in-memory wallet of the tests on `dir`.
pub fn wallet_of(dir: &Path) -> Arc<MemoryWallet> {
    let mut wallets = WALLETS.lock().unwrap();
    Arc::clone(wallets.entry(dir.to_owned()).or_default())
}

/// The cashier deposits `amount` for `player` (a negative amount withdraws) into the
/// table's wallet, and the table has heard of it.
pub async fn fund(handle: &TableHandle, player: &str, amount: i64) {
    let wallet = Arc::clone(handle.wallet());
    let key = format!(
        "cashier-{player}-{}",
        NEXT_KEY.fetch_add(1, Ordering::Relaxed)
    );
    let receipt = memory_wallet(&wallet)
        .deposit(&key, player, "EUR", amount)
        .unwrap();
    // The table hears of a change elsewhere only for a player it shows a balance to; a
    // host tells it of a new one (as the broadcaster does on a player's first visit).
    ok(
        handle,
        Command::WalletChanged {
            player: player.into(),
            balance: receipt.balance,
            delta: amount,
            reason: "deposit".into(),
            version: receipt.version,
            now_ms: 0,
        },
    )
    .await;
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);
static WALLETS: Mutex<BTreeMap<PathBuf, Arc<MemoryWallet>>> = Mutex::new(BTreeMap::new());

/// The memory wallet behind `wallet`, which must be one of [`wallet_of`]'s.
fn memory_wallet(wallet: &Arc<dyn Wallet>) -> Arc<MemoryWallet> {
    let target = Arc::as_ptr(wallet).cast::<()>();
    WALLETS
        .lock()
        .unwrap()
        .values()
        .find(|w| std::ptr::eq(Arc::as_ptr(w).cast::<()>(), target))
        .cloned()
        .expect("the table's wallet is a test wallet (see `config`)")
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
        commitment: None,
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
    eventually_async(what, || std::future::ready(done())).await;
}

/// Waits (up to 20 s) until the asynchronous `done` holds.
pub async fn eventually_async<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..2_000 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}
