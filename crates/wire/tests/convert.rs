//! Round trips for every wire conversion, and every refusal naming its field.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use banco_rules::roads::Mark;
use banco_rules::settle::{BetOutcome, settle};
use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig, ShoeState};
use banco_rules::{
    Bet, BetKind, Card, Composition, Coup, CoupResult, Due, Payout, Paytable, Rounding, Scoreboard,
    Settlement, Side, Winner, probabilities, rtp,
};
use banco_wire::convert::{self, ConversionError};
use banco_wire::{FILE_DESCRIPTOR_SET, pb};
use prost::Message;

fn missing(field: &str) -> ConversionError {
    ConversionError::Missing(field.to_owned())
}

/// Asserts an `Invalid` error on `field`, returning its `why` for further checks.
#[track_caller]
fn invalid_on<T: std::fmt::Debug>(result: Result<T, ConversionError>, field: &str) -> String {
    match result {
        Err(ConversionError::Invalid { field: f, why, .. }) if f == field => why,
        other => panic!("expected Invalid on `{field}`, got {other:?}"),
    }
}

fn c(text: &str) -> Card {
    Card::parse(text).unwrap()
}

fn hand(texts: &str) -> CoupResult {
    let cards: Vec<Card> = texts.split_whitespace().map(c).collect();
    Coup::judge(&cards).unwrap()
}

// ---------- cards ----------

#[test]
fn every_card_round_trips_in_canonical_notation() {
    for card in Card::ALL {
        let text = convert::card_to_pb(card);
        assert_eq!(text.len(), 2);
        assert_eq!(convert::card("card", &text), Ok(card));
    }
    let texts = convert::cards_to_pb(Card::ALL);
    assert_eq!(convert::cards("cards", &texts).unwrap(), Card::ALL.to_vec());
}

#[test]
fn non_canonical_or_bad_cards_are_refused_naming_the_element() {
    assert_eq!(convert::card("card", ""), Err(missing("card")));
    for bad in ["1H", "TX", "T", "ZZZ", "AS ", " AS"] {
        invalid_on(convert::card("card", bad), "card");
    }
    // Forms a person may type are valid cards but not canonical: refused, with the fix.
    for (friendly, canonical) in [("10H", "TH"), ("th", "TH"), ("K♦", "KD"), ("0000", "AS")] {
        let why = invalid_on(convert::card("card", friendly), "card");
        assert!(why.contains(canonical), "{friendly}: {why}");
    }
    let texts: Vec<String> = ["AS", "9H", "1H"].map(String::from).to_vec();
    let err = convert::cards("cards", &texts).unwrap_err();
    assert_eq!(err.field(), "cards[2]");
    assert!(err.to_string().contains("\"1H\""), "{err}");
}

// ---------- enums ----------

#[test]
fn enums_round_trip_and_refuse_unspecified_and_unknown_numbers() {
    for kind in BetKind::ALL {
        let wire = pb::BetKind::from(kind);
        assert_eq!(BetKind::try_from(wire), Ok(kind));
        assert_eq!(convert::bet_kind("kind", wire.into()), Ok(kind));
    }
    for w in [Winner::Player, Winner::Banker, Winner::Tie] {
        assert_eq!(convert::winner("winner", pb::Winner::from(w).into()), Ok(w));
        assert_eq!(Winner::try_from(pb::Winner::from(w)), Ok(w));
    }
    for s in [Side::Player, Side::Banker] {
        assert_eq!(convert::side("side", pb::Side::from(s).into()), Ok(s));
        assert_eq!(Side::try_from(pb::Side::from(s)), Ok(s));
    }
    for d in [Due::PlayerCard, Due::BankerCard, Due::Complete] {
        assert_eq!(convert::due("due", pb::Due::from(d).into()), Ok(d));
        assert_eq!(Due::try_from(pb::Due::from(d)), Ok(d));
    }
    for o in [BetOutcome::Win, BetOutcome::Lose, BetOutcome::Push] {
        let raw = pb::BetOutcome::from(o).into();
        assert_eq!(convert::bet_outcome("outcome", raw), Ok(o));
    }
    for b in [BurnRule::ExposeAndBurn, BurnRule::None] {
        assert_eq!(
            convert::burn_rule("burn", pb::BurnRule::from(b).into()),
            Ok(b)
        );
    }
    for p in [Procedure::CutCard, Procedure::ReshuffleEveryHand] {
        let raw = pb::ShoeProcedure::from(p).into();
        assert_eq!(convert::shoe_procedure("procedure", raw), Ok(p));
    }
    for state in [
        ShoeState::AwaitingBurn,
        ShoeState::InPlay,
        ShoeState::CutCardOut,
        ShoeState::LastHand,
        ShoeState::Ended,
    ] {
        let raw = convert::shoe_state_to_pb(Some(state)).into();
        assert_eq!(convert::shoe_state("shoe_state", raw), Ok(Some(state)));
    }
    let no_shoe = convert::shoe_state_to_pb(None);
    assert_eq!(no_shoe, pb::ShoeState::NoShoe);
    assert_eq!(convert::shoe_state("shoe_state", no_shoe.into()), Ok(None));

    // Unspecified is missing, everywhere.
    assert_eq!(
        convert::bet_kind("bets[0].kind", 0),
        Err(missing("bets[0].kind"))
    );
    assert_eq!(convert::winner("winner", 0), Err(missing("winner")));
    assert_eq!(convert::side("side", 0), Err(missing("side")));
    assert_eq!(convert::due("due", 0), Err(missing("due")));
    assert_eq!(convert::bet_outcome("outcome", 0), Err(missing("outcome")));
    assert_eq!(convert::burn_rule("burn", 0), Err(missing("burn")));
    assert_eq!(
        convert::shoe_procedure("procedure", 0),
        Err(missing("procedure"))
    );
    assert_eq!(
        convert::shoe_state("shoe_state", 0),
        Err(missing("shoe_state"))
    );
    assert_eq!(
        BetKind::try_from(pb::BetKind::Unspecified),
        Err(missing("bet_kind"))
    );
    // A number this build does not know (a newer peer) is invalid, not a default.
    invalid_on(convert::bet_kind("kind", 99), "kind");
    invalid_on(convert::winner("winner", -1), "winner");
    invalid_on(convert::shoe_state("shoe_state", 7), "shoe_state");
}

// ---------- ratios, paytables ----------

#[test]
fn payouts_and_paytables_round_trip() {
    for (n, d) in [(1, 1), (19, 20), (8, 1), (1, 2), (27, 50), (3, 2), (0, 7)] {
        let payout = Payout::new(n, d).unwrap();
        assert_eq!(Payout::try_from(pb::Ratio::from(payout)), Ok(payout));
    }
    for name in Paytable::PRESETS {
        let table = Paytable::preset(name).unwrap();
        let wire = pb::Paytable::from(&table);
        assert_eq!(wire.banker_win_on_six.is_some(), name == "no-commission");
        assert_eq!(Paytable::try_from(wire), Ok(table));
    }
}

#[test]
fn bad_ratios_and_incomplete_paytables_are_named() {
    let zero = pb::Ratio {
        numerator: 1,
        denominator: 0,
    };
    invalid_on(Payout::try_from(zero), "denominator");
    invalid_on(
        convert::payout("paytable.tie", Some(zero)),
        "paytable.tie.denominator",
    );
    assert_eq!(convert::payout("tie", None), Err(missing("tie")));

    let mut wire = pb::Paytable::from(Paytable::standard());
    wire.small = None;
    assert_eq!(Paytable::try_from(wire), Err(missing("small")));

    let mut wire = pb::Paytable::from(Paytable::no_commission());
    wire.banker_win_on_six = Some(zero);
    let err = Paytable::try_from(wire)
        .unwrap_err()
        .within("settle.paytable");
    assert_eq!(err.field(), "settle.paytable.banker_win_on_six.denominator");

    let mut wire = pb::Paytable::from(Paytable::standard());
    wire.banker = Some(zero);
    invalid_on(Paytable::try_from(wire), "banker.denominator");
}

// ---------- shoe ----------

#[test]
fn shoe_configs_round_trip_and_bad_ones_are_named() {
    let configs = [
        ShoeConfig::default(),
        ShoeConfig {
            decks: 1,
            cut_card_from_end: 0,
            burn: BurnRule::None,
            procedure: Procedure::ReshuffleEveryHand,
        },
        ShoeConfig {
            decks: 6,
            cut_card_from_end: 60,
            burn: BurnRule::ExposeAndBurn,
            procedure: Procedure::CutCard,
        },
    ];
    for config in configs {
        assert_eq!(
            ShoeConfig::try_from(pb::ShoeConfig::from(config)),
            Ok(config)
        );
    }
    let good = pb::ShoeConfig::from(ShoeConfig::default());
    for decks in [0, 9, 256, u32::MAX] {
        let bad = pb::ShoeConfig { decks, ..good };
        invalid_on(ShoeConfig::try_from(bad), "decks");
    }
    for cut in [3, 405, 70_000] {
        let bad = pb::ShoeConfig {
            cut_card_from_end: cut,
            ..good
        };
        invalid_on(ShoeConfig::try_from(bad), "cut_card_from_end");
    }
    let bad = pb::ShoeConfig { burn: 0, ..good };
    assert_eq!(ShoeConfig::try_from(bad), Err(missing("burn")));
    let bad = pb::ShoeConfig {
        procedure: 0,
        ..good
    };
    assert_eq!(ShoeConfig::try_from(bad), Err(missing("procedure")));
}

#[test]
fn compositions_round_trip_and_bad_ones_are_named() {
    let mut shoe = Composition::full(8).unwrap();
    shoe.remove(c("9S"), 8).unwrap();
    let wire = pb::ShoeComposition::from(&shoe);
    assert_eq!(wire.counts.len(), 52);
    assert_eq!(Composition::try_from(wire.clone()), Ok(shoe));

    let short = pb::ShoeComposition {
        counts: vec![8; 51],
    };
    invalid_on(Composition::try_from(short), "counts");
    let mut nine = wire;
    nine.counts[13] = 9;
    let why = invalid_on(Composition::try_from(nine), "counts[13]");
    assert!(why.contains("AH"), "{why}");
}

// ---------- bets, roundings, settlements ----------

#[test]
fn bets_round_trip_and_bad_stakes_are_named_with_their_index() {
    let bets: Vec<Bet> = BetKind::ALL
        .iter()
        .zip(1..)
        .map(|(&kind, stake)| Bet::new(kind, stake * 250))
        .chain([Bet::new(BetKind::Banker, i64::MAX)])
        .collect();
    let wire: Vec<pb::Bet> = bets.iter().copied().map(pb::Bet::from).collect();
    assert_eq!(convert::bets("bets", wire.clone()), Ok(bets));

    for stake in [0, -1, i64::MIN] {
        let mut bad = wire.clone();
        bad[2].stake_minor = stake;
        let err = convert::bets("bets", bad).unwrap_err().within("settle");
        assert_eq!(err.field(), "settle.bets[2].stake_minor");
        assert!(err.to_string().contains("positive"), "{err}");
    }
    let mut bad = wire;
    bad[2].kind = 0;
    let err = convert::bets("bets", bad).unwrap_err().within("settle");
    assert_eq!(err, missing("settle.bets[2].kind"));
    assert_eq!(err.to_string(), "`settle.bets[2].kind` is missing");
}

#[test]
fn roundings_round_trip_and_must_be_proper_reduced_fractions() {
    for (remainder, denominator) in [(0, 1), (19, 20), (1, 2), (1, 3), (49, 50)] {
        let rounding = Rounding {
            remainder,
            denominator,
        };
        assert_eq!(
            Rounding::try_from(pb::Rounding::from(rounding)),
            Ok(rounding)
        );
    }
    let r = |remainder, denominator| {
        Rounding::try_from(pb::Rounding {
            remainder,
            denominator,
        })
    };
    invalid_on(r(0, 0), "denominator");
    invalid_on(r(1, -2), "denominator");
    invalid_on(r(-1, 2), "remainder");
    invalid_on(r(2, 2), "remainder");
    invalid_on(r(2, 4), "remainder");
    invalid_on(r(0, 5), "remainder");
}

/// A few hands written out (naturals, stands, draws, a perfect pair), then many dealt.
fn sample_hands() -> Vec<CoupResult> {
    [
        "9S 2H KD 3C",
        "4S 3H 3D 3C",
        "TS 9H TD 6C 5H 2D",
        "AS AS 5D 5C",
        "AS 7H 2D KC 9D",
    ]
    .iter()
    .map(|text| hand(text))
    .chain(deal_many(2_000))
    .collect()
}

/// Complete hands dealt from a fixed pseudo-random card stream.
fn deal_many(count: usize) -> Vec<CoupResult> {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next_card = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        Card::from_index(u8::try_from(state % 52).unwrap()).unwrap()
    };
    (0..count)
        .map(|_| {
            let mut coup = Coup::new();
            while !coup.is_complete() {
                coup.deal(next_card()).unwrap();
            }
            coup.result().unwrap()
        })
        .collect()
}

#[test]
fn settlements_round_trip() {
    let bets: Vec<Bet> = BetKind::ALL
        .iter()
        .flat_map(|&kind| [Bet::new(kind, 1), Bet::new(kind, 7), Bet::new(kind, 1_005)])
        .collect();
    let mut seen = BTreeMap::new();
    for result in sample_hands() {
        for name in Paytable::PRESETS {
            let paytable = Paytable::preset(name).unwrap();
            let settled = settle(&bets, &result, &paytable).unwrap();
            for s in &settled {
                *seen.entry(format!("{:?}", s.outcome)).or_insert(0) += 1;
            }
            let wire: Vec<pb::Settlement> =
                settled.iter().copied().map(pb::Settlement::from).collect();
            assert_eq!(convert::settlements("settlements", wire), Ok(settled));
        }
    }
    assert_eq!(
        seen.len(),
        3,
        "wins, losses and pushes all covered: {seen:?}"
    );
}

#[test]
fn inconsistent_settlements_are_named() {
    let result = hand("9S 2H KD 3C"); // Player wins
    let paytable = Paytable::standard();
    let settle_one = |kind, stake| settle(&[Bet::new(kind, stake)], &result, &paytable).unwrap()[0];
    let win: Settlement = settle_one(BetKind::Player, 100);
    let lose: Settlement = settle_one(BetKind::Banker, 100);
    let good_win = pb::Settlement::from(win);
    let good_lose = pb::Settlement::from(lose);

    let check = |wire: pb::Settlement| convert::settlements("settlements", vec![wire]);

    let mut bad = good_win;
    bad.payout = None;
    assert_eq!(check(bad), Err(missing("settlements[0].payout")));
    let mut bad = good_win;
    bad.returned_minor = 150;
    invalid_on(check(bad), "settlements[0].returned_minor");
    let mut bad = good_win;
    bad.winnings_minor = -1;
    invalid_on(check(bad), "settlements[0].winnings_minor");
    let mut bad = good_win;
    bad.rounding = None;
    assert_eq!(check(bad), Err(missing("settlements[0].rounding")));
    let mut bad = good_win;
    bad.rounding = Some(pb::Rounding {
        remainder: 1,
        denominator: 0,
    });
    invalid_on(check(bad), "settlements[0].rounding.denominator");
    let mut bad = good_win;
    bad.stake_minor = -100;
    invalid_on(check(bad), "settlements[0].stake_minor");

    let mut bad = good_lose;
    bad.payout = Some(pb::Ratio {
        numerator: 1,
        denominator: 1,
    });
    invalid_on(check(bad), "settlements[0].payout");
    let mut bad = good_lose;
    bad.returned_minor = 100;
    invalid_on(check(bad), "settlements[0].returned_minor");
    let mut bad = good_lose;
    bad.rounding = Some(pb::Rounding {
        remainder: 1,
        denominator: 2,
    });
    invalid_on(check(bad), "settlements[0].rounding");
    let mut bad = good_lose;
    bad.outcome = 0;
    assert_eq!(check(bad), Err(missing("settlements[0].outcome")));
    let mut bad = good_lose;
    bad.kind = 42;
    invalid_on(check(bad), "settlements[0].kind");
}

// ---------- hand results ----------

#[test]
fn hand_results_round_trip_and_carry_every_derived_fact() {
    let hands = sample_hands();
    for result in &hands {
        let wire = pb::HandResult::from(result);
        assert_eq!(wire.cards_dealt as usize, result.cards_dealt());
        assert_eq!(wire.natural, result.is_natural());
        assert_eq!(convert::winner("winner", wire.winner), Ok(result.winner()));
        assert_eq!(CoupResult::try_from(wire), Ok(*result));
    }
    let winners: std::collections::HashSet<_> = hands.iter().map(|h| h.winner()).collect();
    assert_eq!(winners.len(), 3);
    assert!(hands.iter().any(|h| h.cards_dealt() == 6));
    assert!(hands.iter().any(|h| h.player_perfect_pair()));
}

#[test]
fn hand_results_that_disagree_with_their_cards_are_refused() {
    // Player 2+2 = 4 draws; Banker 3+3 = 6 draws on Player's third 6.
    let result = hand("2S 3H 2D 3C 6H 4D");
    assert_eq!(result.cards_dealt(), 6);
    let good = pb::HandResult::from(result);
    let refuse = |edit: &dyn Fn(&mut pb::HandResult), field: &str| {
        let mut bad = good.clone();
        edit(&mut bad);
        invalid_on(CoupResult::try_from(bad), field)
    };
    refuse(&|h| h.player_total += 1, "player_total");
    refuse(&|h| h.banker_total = 9, "banker_total");
    refuse(&|h| h.natural ^= true, "natural");
    refuse(&|h| h.player_pair ^= true, "player_pair");
    refuse(&|h| h.banker_pair ^= true, "banker_pair");
    refuse(&|h| h.player_perfect_pair ^= true, "player_perfect_pair");
    refuse(&|h| h.banker_perfect_pair ^= true, "banker_perfect_pair");
    refuse(&|h| h.cards_dealt = 4, "cards_dealt");
    refuse(
        &|h| {
            h.winner = if h.winner == pb::Winner::Player as i32 {
                pb::Winner::Banker as i32
            } else {
                pb::Winner::Player as i32
            }
        },
        "winner",
    );
    refuse(&|h| h.player_cards[1] = "1H".into(), "player_cards[1]");
    refuse(&|h| h.banker_cards[0] = "as".into(), "banker_cards[0]");
    // Too few and too many cards.
    refuse(&|h| h.player_cards.truncate(1), "player_cards");
    refuse(&|h| h.banker_cards.push("AS".into()), "banker_cards");
    // Player's third card moved to Banker: Player (4) must draw.
    refuse(
        &|h| {
            let third = h.player_cards.pop().unwrap();
            h.banker_cards.truncate(2);
            h.banker_cards.push(third);
        },
        "banker_cards",
    );
    // Banker's third card moved to Player, who stands on 7: Banker (5) draws it.
    let banker_drew = pb::HandResult::from(hand("4S 2H 3D 3C 5D"));
    let mut bad = banker_drew;
    let third = bad.banker_cards.pop().unwrap();
    bad.player_cards.push(third);
    invalid_on(CoupResult::try_from(bad), "player_cards");
    // A third card after a natural.
    let natural = pb::HandResult::from(hand("9S 2H KD 3C"));
    let mut bad = natural.clone();
    bad.player_cards.push("5D".into());
    bad.cards_dealt = 5;
    invalid_on(CoupResult::try_from(bad), "player_cards");
    let mut bad = natural;
    bad.winner = 0;
    assert_eq!(CoupResult::try_from(bad), Err(missing("winner")));
}

// ---------- odds, roads ----------

#[test]
fn probabilities_and_rtp_go_out_unchanged() {
    let shoe = Composition::full(8).unwrap();
    let p = probabilities(&shoe).unwrap();
    let r = rtp(&p, &Paytable::standard());
    let wp = pb::Probabilities::from(p);
    let wr = pb::Rtp::from(r);
    for kind in BetKind::ALL {
        let (prob, ret) = match kind {
            BetKind::Player => (wp.player, wr.player),
            BetKind::Banker => (wp.banker, wr.banker),
            BetKind::Tie => (wp.tie, wr.tie),
            BetKind::PlayerPair => (wp.player_pair, wr.player_pair),
            BetKind::BankerPair => (wp.banker_pair, wr.banker_pair),
            BetKind::EitherPair => (wp.either_pair, wr.either_pair),
            BetKind::PerfectPair => (wp.perfect_pair, wr.perfect_pair),
            BetKind::Big => (wp.big, wr.big),
            BetKind::Small => (wp.small, wr.small),
        };
        assert_eq!(prob.to_bits(), p.get(kind).to_bits(), "{kind}");
        assert_eq!(ret.to_bits(), r.get(kind).to_bits(), "{kind}");
    }
    assert_eq!(
        wp.banker_win_on_six.to_bits(),
        p.banker_win_on_six.to_bits()
    );
    assert!((wr.banker - 0.989_421).abs() < 1e-6, "{}", wr.banker);
}

#[test]
fn scoreboard_goes_out_as_roads() {
    let results: Vec<Winner> = "TBBPTPPPBTBPBBBP"
        .chars()
        .map(|ch| Winner::from_letter(ch).unwrap())
        .collect();
    let board = Scoreboard::from_results(&results);
    let roads = pb::Roads::from(&board);
    assert_eq!(roads.bead_plate, "TBBPTPPPBTBPBBBP");
    assert_eq!(roads.pending_ties, board.big_road().pending_ties());
    assert_eq!(roads.big_road.len(), board.big_road().columns().len());
    for (wire, column) in roads.big_road.iter().zip(board.big_road().columns()) {
        assert_eq!(wire.entries.len(), column.len());
        for (w, entry) in wire.entries.iter().zip(column) {
            assert_eq!(convert::side("side", w.side), Ok(entry.side));
            assert_eq!(w.ties, entry.ties);
        }
    }
    // The tie before any win waits, then sits on the first entry.
    assert_eq!(roads.big_road[0].entries[0].ties, 1);
    let letters = |marks: &[Mark]| marks.iter().map(|m| m.letter()).collect::<String>();
    assert_eq!(roads.big_eye_boy, letters(board.big_eye_boy().marks()));
    assert_eq!(roads.small_road, letters(board.small_road().marks()));
    assert_eq!(roads.cockroach_pig, letters(board.cockroach_pig().marks()));
    assert!(!roads.big_eye_boy.is_empty());
    assert!(roads.big_eye_boy.chars().all(|ch| ch == 'R' || ch == 'B'));
    let stats = roads.stats.unwrap();
    assert_eq!(stats.hands, 16);
    assert_eq!(stats.banker + stats.player + stats.tie, 16);
    assert_eq!(
        convert::side("streak_side", stats.streak_side),
        Ok(Side::Player)
    );
    assert_eq!(stats.streak_length, 1);
    let ask = board.predict();
    let mark = |m: Option<Mark>| m.map(|m| m.letter().to_string()).unwrap_or_default();
    let banker_ask = roads.banker_ask.unwrap();
    assert_eq!(banker_ask.big_eye_boy, mark(ask.banker.big_eye_boy));
    assert_eq!(banker_ask.cockroach_pig, mark(ask.banker.cockroach_pig));
    assert_eq!(
        roads.player_ask.unwrap().small_road,
        mark(ask.player.small_road)
    );

    let empty = pb::Roads::from(&Scoreboard::new());
    assert_eq!(empty.bead_plate, "");
    assert!(empty.big_road.is_empty());
    assert_eq!(
        empty.stats.unwrap().streak_side,
        pb::Side::Unspecified as i32
    );
}

// ---------- errors ----------

#[test]
fn errors_nest_and_become_invalid_argument() {
    let err = ConversionError::invalid("stake_minor", "-5", "must be positive")
        .within("bets[2]")
        .within("settle");
    assert_eq!(err.field(), "settle.bets[2].stake_minor");
    let status = tonic::Status::from(err);
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        status.message(),
        "`settle.bets[2].stake_minor` = -5 is invalid: must be positive"
    );
    assert_eq!(missing("card").within("").field(), "card");
    assert_eq!(missing("").within("paytable").field(), "paytable");
}

// ---------- the descriptor set ----------

#[test]
fn descriptor_set_lists_the_six_services_and_their_methods() {
    let fds = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
    let files: Vec<&str> = fds.file.iter().map(|f| f.name()).collect();
    assert!(
        files.contains(&"google/protobuf/timestamp.proto"),
        "{files:?}"
    );
    for name in [
        "common", "rules", "table", "player", "video", "archive", "wallet",
    ] {
        let path = format!("banco/v1/{name}.proto");
        assert!(files.contains(&path.as_str()), "{path} in {files:?}");
    }
    let services: BTreeMap<String, Vec<String>> = fds
        .file
        .iter()
        .filter(|f| f.package() == "banco.v1")
        .flat_map(|f| &f.service)
        .map(|s| {
            let methods = s.method.iter().map(|m| m.name().to_owned()).collect();
            (s.name().to_owned(), methods)
        })
        .collect();
    let expect = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let expected: BTreeMap<String, Vec<String>> = [
        (
            "RulesService",
            expect(&["CheckCard", "NextDue", "JudgeHand", "Settle", "Odds"]),
        ),
        (
            "TableService",
            expect(&[
                "OpenShoe",
                "Burn",
                "OpenBetting",
                "CloseBetting",
                "DealCard",
                "UndoLastCard",
                "ConfirmResult",
                "VoidRound",
                "EndShoe",
                "MutePlayer",
                "WatchTable",
                "GetTable",
            ]),
        ),
        (
            "PlayerService",
            expect(&[
                "ListTables",
                "Subscribe",
                "PlaceBets",
                "ClearBets",
                "Rebet",
                "PassHand",
                "TakeSeat",
                "LeaveSeat",
                "MyBets",
                "GetBalance",
                "SetSelfLimit",
                "LastResults",
                "SendChat",
                "WatchVideo",
            ]),
        ),
        ("VideoIngest", expect(&["Publish"])),
        (
            "ArchiveService",
            expect(&[
                "Append",
                "AppendBatch",
                "ListRounds",
                "GetRound",
                "ShoeReport",
                "Stats",
                "PlayerBets",
                "Export",
                "Verify",
                "GetClip",
                "UploadClip",
                "PutCheckpoint",
            ]),
        ),
        (
            "WalletService",
            expect(&[
                "Balance",
                "Debit",
                "DebitMany",
                "Credit",
                "Cancel",
                "SetSelfLimit",
                "Deposit",
                "Withdraw",
                "Block",
                "Unblock",
                "Statement",
                "Movements",
                "WatchBalances",
                "TableRounds",
            ]),
        ),
    ]
    .into_iter()
    .map(|(name, methods)| (name.to_owned(), methods))
    .collect();
    assert_eq!(services, expected);

    // Streaming shapes are part of the contract.
    let method = |service: &str, name: &str| {
        fds.file
            .iter()
            .flat_map(|f| &f.service)
            .filter(|s| s.name() == service)
            .flat_map(|s| &s.method)
            .find(|m| m.name() == name)
            .cloned()
            .unwrap()
    };
    assert!(method("TableService", "WatchTable").server_streaming());
    assert!(method("PlayerService", "Subscribe").server_streaming());
    assert!(method("PlayerService", "WatchVideo").server_streaming());
    assert!(method("VideoIngest", "Publish").client_streaming());
    assert!(!method("VideoIngest", "Publish").server_streaming());
    assert!(method("ArchiveService", "Export").server_streaming());
    assert!(method("ArchiveService", "GetClip").server_streaming());
    assert!(!method("RulesService", "Settle").server_streaming());
    assert!(method("WalletService", "WatchBalances").server_streaming());
    assert!(!method("WalletService", "Debit").server_streaming());
}
