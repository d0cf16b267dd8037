//! Whatever sequence of requests arrives (several at once, so that they share
//! transactions; retries among them), the books balance: each movement's postings sum to
//! zero, each balance is the sum of its account's postings, and equals deposits −
//! withdrawals − debits + credits + cancels of what the store acknowledged.
#![allow(clippy::unwrap_used)]

mod store_support;

use std::collections::HashMap;

use banco_wallet::{Cash, Cashier as _, Receipt, Wallet as _, WalletError};
use proptest::prelude::*;
use store_support::{cancel_of, credit, debit, open, tx};

#[derive(Clone, Debug)]
enum Step {
    Deposit {
        player: usize,
        amount: i64,
    },
    Withdraw {
        player: usize,
        amount: i64,
    },
    Debit {
        player: usize,
        amount: i64,
    },
    /// Settles the `nth` debit of the earlier rounds of requests, with `amount`.
    Credit {
        nth: usize,
        amount: i64,
    },
    /// Cancels the `nth` debit of the earlier rounds of requests.
    Cancel {
        nth: usize,
    },
    /// The `nth` request of the earlier rounds, again.
    Retry {
        nth: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let player = 0..3_usize;
    let amount = 1..500_i64;
    prop_oneof![
        (player.clone(), amount.clone())
            .prop_map(|(player, amount)| Step::Deposit { player, amount }),
        (player.clone(), amount.clone())
            .prop_map(|(player, amount)| Step::Withdraw { player, amount }),
        (player, amount).prop_map(|(player, amount)| Step::Debit { player, amount }),
        (0..40_usize, 0..1_000_i64).prop_map(|(nth, amount)| Step::Credit { nth, amount }),
        (0..40_usize).prop_map(|nth| Step::Cancel { nth }),
        (0..40_usize).prop_map(|nth| Step::Retry { nth }),
    ]
}

const PLAYERS: [&str; 3] = ["alice", "bob", "carol"];

/// A request, as sent (again, for a retry).
#[derive(Clone, Debug)]
enum Request {
    Deposit(String, usize, i64),
    Withdraw(String, usize, i64),
    Debit(banco_wallet::Debit),
    Credit(banco_wallet::Credit),
    Cancel(banco_wallet::Cancel),
}

impl Request {
    /// The player, and the change of the balance if it is taken.
    fn effect(&self, taken: &HashMap<String, i64>) -> (&'static str, i64) {
        let who = |name: &str| PLAYERS.into_iter().find(|p| *p == name).unwrap();
        match self {
            Request::Deposit(_, p, a) => (PLAYERS[*p], *a),
            Request::Withdraw(_, p, a) => (PLAYERS[*p], -a),
            Request::Debit(d) => (who(&d.player), -d.amount),
            Request::Credit(c) => (who(&c.player), c.amount),
            Request::Cancel(c) => (
                who(&c.player),
                taken.get(c.debit.as_str()).copied().unwrap_or(0),
            ),
        }
    }

    async fn send(self, store: banco_wallet::Store) -> (Request, Result<Receipt, WalletError>) {
        let answer = match &self {
            Request::Deposit(key, p, a) => {
                store
                    .deposit(&Cash::new(&tx(key), PLAYERS[*p], "EUR", *a))
                    .await
            }
            Request::Withdraw(key, p, a) => {
                store
                    .withdraw(&Cash::new(&tx(key), PLAYERS[*p], "EUR", *a))
                    .await
            }
            Request::Debit(d) => store.debit(d).await,
            Request::Credit(c) => store.credit(c).await,
            Request::Cancel(c) => store.cancel(c).await,
        };
        (self, answer)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_books_always_balance(
        steps in proptest::collection::vec(step(), 1..60),
        together in 1..8_usize,
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let db = store_support::sqlite();
            let store = open(&db).await;
            let mut sent: Vec<Request> = Vec::new();
            // Debits of earlier rounds: asked, and taken (with their amount).
            let mut debits: Vec<banco_wallet::Debit> = Vec::new();
            let mut taken: HashMap<String, i64> = HashMap::new();
            let mut expected: HashMap<&str, i64> = HashMap::new();
            for (round, chunk) in steps.chunks(together).enumerate() {
                let mut calls = tokio::task::JoinSet::new();
                for (i, step) in chunk.iter().enumerate() {
                    let key = format!("k{round}-{i}");
                    let request = match step {
                        Step::Deposit { player, amount } => Request::Deposit(key, *player, *amount),
                        Step::Withdraw { player, amount } => {
                            Request::Withdraw(key, *player, *amount)
                        }
                        Step::Debit { player, amount } => {
                            let mut d = debit(&key, PLAYERS[*player], *amount);
                            d.table = format!("T0{}", i % 3);
                            Request::Debit(d)
                        }
                        Step::Credit { nth, amount } if !debits.is_empty() => {
                            let d = &debits[nth % debits.len()];
                            let mut c = credit(&key, &d.player, *amount, &[d.tx.as_str()]);
                            c.table.clone_from(&d.table);
                            Request::Credit(c)
                        }
                        Step::Cancel { nth } if !debits.is_empty() => {
                            Request::Cancel(cancel_of(&debits[nth % debits.len()]))
                        }
                        Step::Retry { nth } if !sent.is_empty() => sent[nth % sent.len()].clone(),
                        _ => continue,
                    };
                    calls.spawn(request.send(store.clone()));
                }
                let mut answered = Vec::new();
                while let Some(joined) = calls.join_next().await {
                    answered.push(joined.unwrap());
                }
                for (request, answer) in answered {
                    match &answer {
                        Ok(receipt) => {
                            assert!(receipt.balance >= 0, "{request:?}: {receipt:?}");
                            if !receipt.replayed {
                                let (player, delta) = request.effect(&taken);
                                *expected.entry(player).or_default() += delta;
                                if let Request::Debit(d) = &request {
                                    taken.insert(d.tx.to_string(), d.amount);
                                }
                            }
                        }
                        Err(
                            WalletError::InsufficientFunds { .. }
                            | WalletError::AlreadySettled { .. }
                            | WalletError::DebitDoesNotExist { .. }
                            | WalletError::Cancelled { .. },
                        ) => {}
                        Err(e) => panic!("{request:?}: {e}"),
                    }
                    if let Request::Debit(d) = &request {
                        debits.push(d.clone());
                    }
                    sent.push(request);
                }
            }
            for player in PLAYERS {
                let balance = store.account(player, "EUR").await.unwrap().balance;
                assert_eq!(balance, expected.get(player).copied().unwrap_or(0), "{player}");
            }
            assert_eq!(store.check_books().await.unwrap(), Vec::<String>::new());
            store.close().await;
        });
    }
}
