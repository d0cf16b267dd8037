//! `Table::apply` throughput on the hot path: PlaceBets commands applied per second on a
//! table with 1,000 funded players and betting open. Each measured batch is one bet
//! request from every player (two positions each) into a fresh copy of the same open
//! round; the copy is made outside the timing. After every batch the bench checks its
//! result: the round's bet totals and the bets in play equal what was placed. Figures are
//! printed by criterion; no time is asserted.

use std::collections::BTreeMap;

use banco_rules::BetKind;
use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig};
use banco_table::book::PositionTotal;
use banco_table::{Command, Event, Limits, Pacing, Table, TableConfig};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const PLAYERS: usize = 1_000;

fn player(i: usize) -> String {
    format!("player{i:04}")
}

/// The bets of player `i`: a main chance and a side bet, varied by player.
fn bets_of(i: usize) -> Vec<(BetKind, i64)> {
    let main = if i.is_multiple_of(2) {
        BetKind::Player
    } else {
        BetKind::Banker
    };
    let side = BetKind::ALL[2 + i % 7];
    vec![(main, 1_000 + (i as i64 % 10) * 100), (side, 500)]
}

/// A live table with every player funded and betting open on its first round.
fn open_table() -> Table {
    let mut config = TableConfig::new("T01", Pacing::Live);
    config.policy.limits = Limits {
        min: 100,
        max: 1_000_000,
    };
    let mut table = Table::new(config).expect("config");
    for i in 0..PLAYERS {
        table
            .apply(&Command::WalletChanged {
                player: player(i),
                balance: 1_000_000_000,
                delta: 1_000_000_000,
                reason: "deposit".into(),
                version: None,
                now_ms: 0,
            })
            .expect("funding");
    }
    let shoe = ShoeConfig {
        decks: 8,
        cut_card_from_end: 16,
        burn: BurnRule::None,
        procedure: Procedure::CutCard,
    };
    for cmd in [
        Command::OpenShoe {
            config: shoe,
            by: "croupier".into(),
            now_ms: 1,
            commitment: None,
        },
        Command::OpenBetting {
            by: "croupier".into(),
            now_ms: 2,
        },
    ] {
        table.apply(&cmd).expect("open");
    }
    table
}

fn place_bets(table: &Table) -> Vec<Command> {
    let round_id = table.round_id().expect("an open round").clone();
    (0..PLAYERS)
        .map(|i| Command::PlaceBets {
            player: player(i),
            round_id: round_id.clone(),
            bets: bets_of(i),
            key: format!("bet-{i}"),
            now_ms: 3,
        })
        .collect()
}

/// The totals the batch must leave on the table.
fn expected_totals() -> BTreeMap<BetKind, PositionTotal> {
    let mut totals: BTreeMap<BetKind, PositionTotal> = BTreeMap::new();
    for (kind, amount) in (0..PLAYERS).flat_map(bets_of) {
        let t = totals.entry(kind).or_default();
        t.amount += amount;
        t.bettors += 1;
    }
    totals
}

fn apply_place_bets(c: &mut Criterion) {
    let table = open_table();
    let commands = place_bets(&table);
    let expected = expected_totals();
    let expected_in_play: i64 = expected.values().map(|t| t.amount).sum();

    let mut group = c.benchmark_group("apply");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PLAYERS as u64));
    group.bench_function("place_bets_1000_players", |b| {
        b.iter_batched(
            || table.clone(),
            |mut t| {
                for cmd in &commands {
                    // The request, then the wallet's answer to its debits.
                    let events = t.apply_with_instant_wallet(cmd).expect("bets accepted");
                    assert!(matches!(events.get(1), Some(Event::BetsAccepted { .. })));
                }
                assert_eq!(t.snapshot().bet_totals, expected, "bet totals");
                assert_eq!(t.ledger().in_play(), expected_in_play, "bets in play");
                t
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

criterion_group!(benches, apply_place_bets);
criterion_main!(benches);
