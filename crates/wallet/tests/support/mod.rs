//! What the seamless tests share: the secret, movements, a served wallet, an adapter.
#![allow(dead_code, clippy::unwrap_used, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use banco_wallet::MemoryWallet;
use banco_wallet::seamless::{Endpoint, SeamlessConfig, SeamlessSecret, SeamlessWallet};
use banco_wallet::{Cancel, Credit, CreditKind, Debit, Wallet};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub const SECRET: &[u8] = b"the shared secret of these tests, 32 bytes or more";

pub fn secret() -> SeamlessSecret {
    SeamlessSecret::new(SECRET).unwrap()
}

#[path = "../movements/mod.rs"]
mod movements;
pub use movements::{debit, tx};

pub fn credit(id: &str, of: &Debit, amount: i64) -> Credit {
    Credit {
        tx: tx(id),
        player: of.player.clone(),
        currency: of.currency.clone(),
        amount,
        kind: CreditKind::Settlement,
        table: of.table.clone(),
        round: of.round.clone(),
        bet: of.bet.clone(),
        debits: vec![of.tx.clone()],
    }
}

/// The cancel a table sends for `of`: `cancel:<debit id>`.
pub fn cancel(of: &Debit) -> Cancel {
    Cancel {
        tx: tx(&format!("cancel:{}", of.tx)),
        debit: of.tx.clone(),
        player: of.player.clone(),
        currency: of.currency.clone(),
        amount: of.amount,
        table: of.table.clone(),
        round: of.round.clone(),
    }
}

/// An operator's wallet where `player` holds `amount` euro cents, deposited as
/// `cash-<player>`.
pub fn holding(player: &str, amount: i64) -> Arc<MemoryWallet> {
    let wallet = Arc::new(MemoryWallet::new());
    wallet
        .deposit(&format!("cash-{player}"), player, "EUR", amount)
        .unwrap();
    wallet
}

/// `wallet` served by `banco_wallet::seamless::serve` on a loopback port, until dropped.
pub struct Served {
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

pub async fn served(wallet: Arc<dyn Wallet>) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("seamless+http://{}/", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        banco_wallet::seamless::serve(listener, wallet, secret(), async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Served {
        url,
        stop: Some(stop),
    }
}

/// Short limits, so that a test of a fault does not wait seconds (nothing is timed).
pub fn quick() -> SeamlessConfig {
    SeamlessConfig {
        debit_limit: Duration::from_millis(1_500),
        settle_limit: None,
        attempt_timeout: Duration::from_millis(400),
        backoff_first: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
    }
}

/// The adapter to `url`, with banco's own (local) wallet for self-limits.
pub fn adapter(url: &str, config: SeamlessConfig) -> (SeamlessWallet, Arc<MemoryWallet>) {
    let local = Arc::new(MemoryWallet::new());
    let endpoint = Endpoint::parse(url, None).unwrap();
    let local_wallet: Arc<dyn Wallet> = local.clone();
    (
        SeamlessWallet::new(endpoint, secret(), local_wallet, config),
        local,
    )
}
