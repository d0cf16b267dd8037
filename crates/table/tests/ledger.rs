//! The ledger: transfers, idempotent keys, refunds on void, and the invariant that the
//! books balance after every command (property test).
#![allow(clippy::unwrap_used)]

mod support;

use banco_rules::BetKind;
use banco_rules::shoe::BurnRule;
use banco_table::ledger::{Account, Entry, EntryKind, Ledger, LedgerError, Posted};
use banco_table::{BalanceReason, Command, Event, Pacing, Phase};
use proptest::prelude::*;
use support::*;

fn entry(key: &str, kind: EntryKind, from: Account, to: Account, amount: i64) -> Entry {
    Entry {
        key: key.into(),
        kind,
        from,
        to,
        amount,
        round_id: None,
        tx: None,
    }
}

fn alice() -> Account {
    Account::Player("alice".into())
}

#[test]
fn transfers_are_checked_and_idempotent() {
    let mut l = Ledger::default();
    let stake = entry("s1", EntryKind::Stake, alice(), Account::InPlay, 1_000);
    assert_eq!(l.post(stake.clone()), Ok(Posted::New));
    assert_eq!(l.post(stake), Ok(Posted::Duplicate));
    // What the table took from alice's wallet: her net here is down by it.
    assert_eq!((l.net("alice"), l.in_play()), (-1_000, 1_000));
    assert_eq!(
        l.post(entry("s1", EntryKind::Stake, alice(), Account::InPlay, 999)),
        Err(LedgerError::KeyReused { key: "s1".into() })
    );
    let before = l.clone();
    // Bets in play never go negative: no more can leave than was staked.
    let r = l.post(entry(
        "r0",
        EntryKind::Refund,
        Account::InPlay,
        alice(),
        1_001,
    ));
    assert!(
        matches!(
            r,
            Err(LedgerError::Insufficient {
                balance: 1_000,
                amount: 1_001,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(matches!(
        l.post(entry("s0", EntryKind::Stake, alice(), Account::InPlay, 0)),
        Err(LedgerError::NonPositive { .. })
    ));
    assert_eq!(l, before, "a refused transfer moves nothing");
    l.post(entry("w1", EntryKind::Payout, Account::House, alice(), 950))
        .unwrap();
    l.post(entry(
        "r1",
        EntryKind::Payout,
        Account::InPlay,
        alice(),
        1_000,
    ))
    .unwrap();
    assert_eq!((l.net("alice"), l.house(), l.in_play()), (950, -950, 0));
    l.check().unwrap();
    assert_eq!(l.start_round().len(), 3);
    assert!(l.round_entries().is_empty());
}

#[test]
fn void_refunds_every_stake_and_the_books_balance() {
    let mut t = live_table_with(&[("a", 50_000), ("b", 50_000), ("c", 50_000)]);
    let round = open(&mut t, 1);
    ok(
        &mut t,
        bets(
            "a",
            &round,
            &[(BetKind::Player, 5_000), (BetKind::Tie, 500)],
            "1",
            2,
        ),
    );
    ok(
        &mut t,
        bets(
            "b",
            &round,
            &[(BetKind::Banker, 7_000), (BetKind::PerfectPair, 600)],
            "1",
            2,
        ),
    );
    ok(
        &mut t,
        bets(
            "c",
            &round,
            &[(BetKind::Small, 900), (BetKind::EitherPair, 500)],
            "1",
            2,
        ),
    );
    assert_eq!(t.ledger().in_play(), 14_500);
    ok(&mut t, close_betting(3));
    ok(&mut t, deal("9S", 4));
    let cmd = void(&t, "shoe jammed", 5);
    let events = ok(&mut t, cmd);
    for (p, refund) in [("a", 5_500), ("b", 7_600), ("c", 1_400)] {
        assert_eq!(t.balance(p), Some(50_000));
        assert!(events.contains(&Event::BalanceChanged {
            player: p.into(),
            balance: 50_000,
            delta: refund,
            in_play: 0,
            pending: 0,
            reason: BalanceReason::VoidRefund,
        }));
    }
    assert_eq!((t.ledger().in_play(), t.ledger().house()), (0, 0));
    let Some(Event::RoundFinished(record)) =
        events.iter().find(|e| matches!(e, Event::RoundFinished(_)))
    else {
        panic!()
    };
    let refunds: i64 = record
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Refund)
        .map(|e| e.amount)
        .sum();
    assert_eq!(refunds, 14_500);
    assert_eq!(
        record
            .entries
            .iter()
            .filter(|e| e.kind == EntryKind::Refund)
            .count(),
        6
    );
    assert_eq!(record.cards.len(), 1);
}

const PLAYERS: [&str; 4] = ["p0", "p1", "p2", "p3"];

/// One step of a random session; the driver turns it into a command that fits (or not).
#[derive(Clone, Debug)]
enum Op {
    Deposit(usize, i64),
    Withdraw(usize, i64),
    Open,
    Close,
    Bet(usize, usize, i64),
    Clear(usize),
    Rebet(usize),
    Deal,
    WrongCard,
    Undo,
    Confirm,
    Void,
    RetryLast,
}

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PLAYERS.len();
    prop_oneof![
        1 => (p.clone(), 1..20_000i64).prop_map(|(p, a)| Op::Deposit(p, a)),
        1 => (p.clone(), 1..5_000i64).prop_map(|(p, a)| Op::Withdraw(p, a)),
        1 => Just(Op::Open),
        1 => Just(Op::Close),
        4 => (p.clone(), 0..9usize, 1..12_000i64).prop_map(|(p, k, a)| Op::Bet(p, k, a)),
        1 => p.clone().prop_map(Op::Clear),
        1 => p.prop_map(Op::Rebet),
        6 => Just(Op::Deal),
        1 => Just(Op::WrongCard),
        1 => Just(Op::Undo),
        2 => Just(Op::Confirm),
        1 => Just(Op::Void),
        1 => Just(Op::RetryLast),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn books_balance_after_every_command(ops in prop::collection::vec(op(), 1..300), seed in any::<u64>()) {
        let mut cfg = config(Pacing::Live);
        cfg.policy.progression_cap = Some(true);
        let mut t = banco_table::Table::new(cfg).unwrap();
        let shoe = shoe_config(1, BurnRule::None);
        let mut shoe = shoe;
        shoe.cut_card_from_end = 12;
        let mut dealer = Dealer::new(shoe, seed);
        let mut now = 1_000u64;
        let mut last: Option<Command> = None;
        for (i, op) in ops.into_iter().enumerate() {
            now += 10;
            if t.shoe().is_none() && !t.phase().round_in_progress() {
                dealer = Dealer::new(shoe, seed.wrapping_add(i as u64));
                ok(&mut t, open_shoe(shoe, now));
            }
            let key = format!("k{i}");
            let from_dealer = matches!(op, Op::Deal);
            let cmd = match op {
                // The cashier, told by the wallet; it withdraws no more than the player has.
                Op::Deposit(p, a) => funding(&t, PLAYERS[p], a),
                Op::Withdraw(p, a) if t.balance(PLAYERS[p]).unwrap_or(0) >= a => funding(&t, PLAYERS[p], -a),
                Op::Withdraw(..) => continue,
                Op::Open => open_betting(now),
                Op::Close => close_betting(now),
                Op::Bet(p, k, a) => {
                    let round = t.round_id().cloned().unwrap_or_else(|| "none".into());
                    bets(PLAYERS[p], &round, &[(BetKind::ALL[k], a)], &key, now)
                }
                Op::Clear(p) => Command::ClearBets { player: PLAYERS[p].into(), round_id: None, key, now_ms: now },
                Op::Rebet(p) => Command::Rebet { player: PLAYERS[p].into(), round_id: None, key, now_ms: now },
                Op::Deal if dealer.next < dealer.shuffled.order().len() => dealer.next_card(now),
                Op::Deal => continue,
                Op::WrongCard => deal("KD", now),
                Op::Undo => Command::UndoLastCard { reason: "misscan".into(), by: "c".into(), now_ms: now },
                Op::Confirm => confirm(&t, now),
                Op::Void => void(&t, "malfunction", now),
                Op::RetryLast => match &last {
                    Some(cmd) => cmd.clone(),
                    None => continue,
                },
            };
            let before = t.clone();
            // The command with the wallet's answers to it (see `support::ok`).
            match try_apply(&mut t, &cmd) {
                Ok(events) => {
                    // Every balance change is told with its delta: each event's balance is
                    // the one before plus its delta, they add up to the change, and the
                    // last one's in_play is the stake left in play.
                    let mut told = std::collections::BTreeMap::new();
                    for e in &events {
                        if let Event::BalanceChanged { player, balance, delta, in_play, .. } = e {
                            let running = told.entry(player.clone()).or_insert_with(|| (before.balance(player).unwrap_or(0), 0));
                            prop_assert_eq!(running.0 + delta, *balance, "{} after {:?}", player, cmd);
                            *running = (*balance, *in_play);
                        }
                    }
                    for p in PLAYERS {
                        let change = t.balance(p).unwrap_or(0) - before.balance(p).unwrap_or(0);
                        let told_balance = told.get(p).map_or(before.balance(p).unwrap_or(0), |r| r.0);
                        prop_assert_eq!(told_balance, before.balance(p).unwrap_or(0) + change, "{} after {:?}", p, cmd);
                        if let Some(&(_, in_play)) = told.get(p) {
                            prop_assert_eq!(in_play, t.stakes_in_play(p).values().sum::<i64>());
                        }
                    }
                    // The dealer's next card went to the table only if it was accepted; an
                    // undone card goes back to the dealer.
                    for e in &events {
                        if let Event::CardUndone { card, .. } = e
                            && dealer.next > 0
                            && dealer.shuffled.order()[dealer.next - 1] == *card
                        {
                            dealer.next -= 1;
                        }
                    }
                    last = Some(cmd.clone());
                }
                Err(_) => {
                    prop_assert_eq!(&t, &before);
                    if from_dealer {
                        dealer.next -= 1;
                    }
                }
            }
            if let Err(e) = t.check_books() {
                prop_assert!(false, "after {:?}: {}", cmd, e);
            }
        }
        if matches!(t.phase(), Phase::Settled | Phase::Voided | Phase::Idle | Phase::NoShoe) {
            prop_assert_eq!(t.ledger().in_play(), 0);
        }
    }
}
