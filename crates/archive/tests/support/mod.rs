//! Realistic rounds from a real `banco_table::Table`, sealed as a table seals them, and
//! stores on either backend: SQLite always, PostgreSQL when `DATABASE_URL` is set (each
//! test in its own schema, so tests run in parallel).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::Arc;

use banco_archive::{Store, TrustedKeys};
use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig};
use banco_rules::{BetKind, Card, Shoe};
use banco_table::actor::{Chain, ClipFacts, SealedRound, TableSigner, clip_statement};
use banco_table::{CardSource, Command, Event, FinishedRound, Pacing, RoundId, Table, TableConfig};
use banco_wire::pb;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub const CROUPIER: &str = "croupier-1";

pub use banco_testdb::TestDb;

/// A fresh SQLite archive file.
pub fn sqlite() -> TestDb {
    banco_testdb::sqlite("archive.db")
}

pub fn table_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[7u8; 32])
}

pub fn trusted() -> TrustedKeys {
    TrustedKeys::new([table_key().verifying_key()])
}

pub fn chain() -> Chain {
    Chain::new(Some(Arc::new(TableSigner::new(table_key()))))
}

fn ok(t: &mut Table, cmd: Command, finished: &mut Vec<FinishedRound>) {
    let events = t
        .apply_with_instant_wallet(&cmd)
        .unwrap_or_else(|r| panic!("{cmd:?} refused: {r}"));
    for e in events {
        if let Event::RoundFinished(round) = e {
            finished.push(*round);
        }
    }
}

/// Plays `hands` rounds of table `table` from a seeded 8-deck shoe: player `p1` bets on
/// Banker (request key `p1-<round>`), `p2` on Player and then on Tie every hand (two
/// requests, a second apart: `p2-<round>` and `p2-<round>-tie`); hand 2 has a correction (a card taken back
/// and dealt again); hand 3 is voided after two cards. Time advances 1 s per step from
/// `start_ms`.
pub fn play(table: &str, hands: u32, start_ms: u64) -> Vec<FinishedRound> {
    let mut t = Table::new(TableConfig::new(table, Pacing::Live)).unwrap();
    let mut out = Vec::new();
    let mut now = start_ms;
    let mut tick = || {
        now += 1000;
        now
    };
    for p in ["p1", "p2"] {
        let funding = banco_table::instant_wallet::funding(&t, p, 10_000_000);
        ok(&mut t, funding, &mut out);
    }
    let config = ShoeConfig {
        decks: 8,
        cut_card_from_end: 16,
        burn: BurnRule::None,
        procedure: Procedure::CutCard,
    };
    let shuffled = Shoe::shuffled(config, &mut ChaCha20Rng::seed_from_u64(42)).unwrap();
    let cards: Vec<Card> = shuffled.order().to_vec();
    let mut next = 0usize;
    ok(
        &mut t,
        Command::OpenShoe {
            config,
            by: CROUPIER.into(),
            now_ms: tick(),
            commitment: None,
        },
        &mut out,
    );
    for hand in 1..=hands {
        ok(
            &mut t,
            Command::OpenBetting {
                by: CROUPIER.into(),
                now_ms: tick(),
            },
            &mut out,
        );
        let round: RoundId = t.round_id().cloned().unwrap();
        let bets = |key: String, bets: Vec<(BetKind, i64)>, now: u64| Command::PlaceBets {
            player: key[..2].into(),
            round_id: round.clone(),
            bets,
            key,
            now_ms: now,
        };
        ok(
            &mut t,
            bets(format!("p1-{round}"), vec![(BetKind::Banker, 1000)], tick()),
            &mut out,
        );
        ok(
            &mut t,
            bets(format!("p2-{round}"), vec![(BetKind::Player, 500)], tick()),
            &mut out,
        );
        ok(
            &mut t,
            bets(format!("p2-{round}-tie"), vec![(BetKind::Tie, 100)], tick()),
            &mut out,
        );
        ok(
            &mut t,
            Command::CloseBetting {
                by: CROUPIER.into(),
                now_ms: tick(),
            },
            &mut out,
        );
        let mut dealt = 0;
        while t.due().is_some_and(|d| d.side().is_some()) {
            let card = cards[next];
            next += 1;
            ok(
                &mut t,
                Command::DealCard {
                    card,
                    source: CardSource::Scanner,
                    now_ms: tick(),
                },
                &mut out,
            );
            dealt += 1;
            if hand == 2 && dealt == 3 {
                // Taken back and dealt again: a correction.
                ok(
                    &mut t,
                    Command::UndoLastCard {
                        reason: "misread".into(),
                        by: "pit-boss".into(),
                        now_ms: tick(),
                    },
                    &mut out,
                );
                ok(
                    &mut t,
                    Command::DealCard {
                        card,
                        source: CardSource::Manual,
                        now_ms: tick(),
                    },
                    &mut out,
                );
            }
            if hand == 3 && dealt == 2 {
                break;
            }
        }
        if hand == 3 {
            ok(
                &mut t,
                Command::VoidRound {
                    round_id: round.clone(),
                    reason: "scanner fault".into(),
                    by: CROUPIER.into(),
                    now_ms: tick(),
                },
                &mut out,
            );
        } else {
            ok(
                &mut t,
                Command::ConfirmResult {
                    round_id: round.clone(),
                    by: CROUPIER.into(),
                    now_ms: tick(),
                },
                &mut out,
            );
        }
    }
    out
}

/// Seals `rounds` as the table does.
pub fn seal(rounds: &[FinishedRound]) -> Vec<SealedRound> {
    let mut chain = chain();
    rounds
        .iter()
        .map(|r| chain.seal(r.clone()).unwrap())
        .collect()
}

fn unhex(text: &str) -> Vec<u8> {
    banco_records::hex::from_hex(text).unwrap()
}

/// The wire record the broadcaster's client sends for a sealed round.
pub fn record(sealed: &SealedRound) -> pb::RoundRecord {
    pb::RoundRecord {
        round_id: sealed.round.round_id.to_string(),
        table_id: sealed.round.table.clone(),
        chain_seq: sealed.seq,
        prev_hash: unhex(&sealed.prev_hash),
        hash: unhex(&sealed.hash),
        signature: unhex(&sealed.signature),
        key_id: sealed.key_id.clone(),
        table_record: serde_json::to_vec(&sealed.round).unwrap(),
        ..Default::default()
    }
}

/// `record` with the table's seal of what it says of its clip, as a broadcaster holding
/// the table key sends it (see `RoundRecord.clip_signature`).
pub fn clip_sealed(mut record: pb::RoundRecord, sealed: &SealedRound) -> pb::RoundRecord {
    let sha256: String = record
        .clip
        .as_ref()
        .map(|c| banco_records::hex::to_hex(&c.sha256))
        .unwrap_or_default();
    let reason = record.clip_missing.as_ref().map(|m| {
        m.reason()
            .as_str_name()
            .trim_start_matches("CLIP_MISSING_REASON_")
            .to_ascii_lowercase()
    });
    let facts = match (&record.clip, &reason) {
        (Some(clip), _) => ClipFacts::Clip {
            sha256: &sha256,
            size_bytes: clip.size_bytes,
        },
        (None, Some(reason)) => ClipFacts::Missing { reason },
        (None, None) => return record,
    };
    let statement = clip_statement(&record.round_id, &sealed.hash, facts);
    record.clip_signature = unhex(&TableSigner::new(table_key()).seal_clip(&statement));
    record
}

/// Runs `sql` on the store's database, as someone with access to it would.
pub async fn exec(store: &Store, sql: &str) {
    match store.db() {
        banco_archive::store::Db::Sqlite(pool) => {
            sqlx::query(sql).execute(pool).await.unwrap();
        }
        banco_archive::store::Db::Postgres(pool) => {
            sqlx::query(sql).execute(pool).await.unwrap();
        }
    }
}

pub async fn open(db: &TestDb) -> Store {
    Store::open(&db.url).await.unwrap()
}

/// A store holding `hands` rounds of T01 (and 5 of T02), all appended.
pub async fn filled(db: &TestDb, hands: u32) -> (Store, Vec<SealedRound>) {
    let store = open(db).await;
    let keys = trusted();
    let sealed = seal(&play("T01", hands, 1_700_000_000_000));
    for s in &sealed {
        let appended = banco_archive::ingest::append(&store, &keys, &record(s))
            .await
            .unwrap();
        assert!(
            matches!(appended, banco_archive::Appended::Stored { .. }),
            "{appended:?}"
        );
    }
    for s in &seal(&play("T02", 5, 1_700_100_000_000)) {
        banco_archive::ingest::append(&store, &keys, &record(s))
            .await
            .unwrap();
    }
    (store, sealed)
}
