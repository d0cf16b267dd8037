//! Helpers for the actor's tests: starting an actor on a temp dir, and playing rounds
//! through its handle.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use banco_rules::BetKind;
use banco_rules::shoe::{BurnRule, ShoeConfig};
use banco_table::actor::{
    ActorConfig, ActorError, ActorTask, ArchiveSink, Clock, ManualClock, Rules, TableHandle,
};
use banco_table::{Applied, CardSource, Command, LocalRules, MemorySink, Pacing, TableConfig};
use banco_wallet::{MemoryWallet, Wallet};

/// The helpers of the table's own tests that an actor's tests use as they are.
#[path = "../support/mod.rs"]
mod table_support;

pub use table_support::{CROUPIER, banker_natural, card, shoe_config};

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

/// An actor on `config` with the local rules and `sink`, whose clock stands at `now_ms`
/// until the test moves it.
pub async fn start_manual(
    config: ActorConfig,
    now_ms: u64,
    sink: Arc<MemorySink>,
) -> (TableHandle, ActorTask, ManualClock) {
    let (clock, time) = Clock::manual(now_ms);
    let (handle, task) = banco_table::spawn(config, Arc::new(LocalRules), sink, clock)
        .await
        .unwrap();
    (handle, task, time)
}

pub async fn start(dir: &Path, sink: Arc<MemorySink>) -> (TableHandle, ActorTask) {
    start_with(config(dir, Pacing::Live), Arc::new(LocalRules), sink).await
}

pub fn shoe(decks: u8) -> ShoeConfig {
    shoe_config(decks, BurnRule::None)
}

/// One deck with the cut card 20 from the end: a whole shoe is some eight rounds.
pub fn small_shoe() -> ShoeConfig {
    ShoeConfig {
        cut_card_from_end: 20,
        ..shoe_config(1, BurnRule::ExposeAndBurn)
    }
}

/// Opens a [`small_shoe`] as the operator, with no seed: a table that deals itself draws
/// the shoe's key and commits to it.
pub async fn open_small_shoe(handle: &TableHandle) {
    ok(
        handle,
        Command::OpenShoe {
            config: small_shoe(),
            by: "operator".into(),
            now_ms: 0,
            commitment: None,
        },
    )
    .await;
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

/// One single-player round of `solo`: a bet of 100 on Banker (request `key`), then the
/// deal, which plays the hand at once.
pub async fn play_solo_round(handle: &TableHandle, key: &str) {
    let round = handle.snapshot().await.unwrap().table.round_id.unwrap();
    ok(handle, bet(&round, "solo", BetKind::Banker, 100, key)).await;
    ok(
        handle,
        Command::Deal {
            player: "solo".into(),
            now_ms: 0,
        },
    )
    .await;
}

/// Plays single-player rounds ([`play_solo_round`], keys `{prefix}0`, `{prefix}1`, ...)
/// until the table's first shoe has ended, `before_each` called before each. Returns how
/// many were played.
pub async fn play_out_first_shoe(
    handle: &TableHandle,
    prefix: &str,
    mut before_each: impl FnMut(),
) -> usize {
    let mut n = 0;
    while handle.snapshot().await.unwrap().table.shoe == Some(1) {
        before_each();
        play_solo_round(handle, &format!("{prefix}{n}")).await;
        n += 1;
        assert!(n < 30, "a one-deck shoe lasts fewer than 30 rounds");
    }
    n
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

/// `command` is refused because the validator cannot be reached, and changes nothing.
pub async fn refused_unreachable(table: &TableHandle, command: Command) {
    let before = table.snapshot().await.unwrap();
    let err = table.submit(None, command).await.unwrap_err();
    assert!(
        matches!(err, ActorError::ValidatorUnreachable(_)),
        "{err:?}"
    );
    assert!(err.to_string().contains("validator unreachable"), "{err}");
    assert_eq!(table.snapshot().await.unwrap(), before);
}

#[allow(unused_imports, reason = "each test binary uses some of the helpers")]
pub use banco_testkit::{eventually, eventually_async};
