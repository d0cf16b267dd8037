//! Exact odds against published figures, hand-derived fractions, degenerate shoes and a
//! brute-force deal of every ordering of small shoes.
#![allow(clippy::unwrap_used)]

use banco_rules::draw::{banker_draws, is_natural, player_draws, total};
use banco_rules::odds::{OddsError, Probabilities, probabilities, rtp};
use banco_rules::{BetKind, Card, Composition, Paytable, PerBet, parse_cards};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

fn full(decks: u8) -> Probabilities {
    probabilities(&Composition::full(decks).unwrap()).unwrap()
}

fn shoe_of(cards: &str) -> Composition {
    let mut counts = [0u16; 52];
    for card in parse_cards(cards).unwrap() {
        counts[usize::from(card.index())] += 1;
    }
    Composition::from_counts(counts)
}

fn assert_close(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: got {got:.15}, want {want:.15} (±{tolerance:e})"
    );
}

/// `got` rounds to `want` at `decimals` places.
fn assert_rounds_to(what: &str, got: f64, want: f64, decimals: i32) {
    let scale = 10f64.powi(decimals);
    assert_eq!(
        (got * scale).round() / scale,
        want,
        "{what}: got {got:.10}, want {want} at {decimals} decimals"
    );
}

#[test]
fn eight_decks_match_the_published_main_bet_odds() {
    let p = full(8);
    for (what, got, want) in [
        ("banker", p.wins.banker, 0.458597),
        ("player", p.wins.player, 0.446247),
        ("tie", p.wins.tie, 0.095156),
    ] {
        assert_rounds_to(what, got, want, 6);
    }
}

#[test]
fn six_decks_reproduce_the_seed_001_rtp_table() {
    let r = rtp(&full(6), &Paytable::standard());
    for (kind, percent) in [
        (BetKind::Banker, 98.94),
        (BetKind::Player, 98.76),
        (BetKind::Tie, 85.56),
        (BetKind::PlayerPair, 88.75),
        (BetKind::BankerPair, 88.75),
        (BetKind::PerfectPair, 82.93),
        (BetKind::EitherPair, 85.46),
        (BetKind::Big, 95.65),
        (BetKind::Small, 94.73),
    ] {
        assert_rounds_to(kind.name(), r.get(kind) * 100.0, percent, 2);
        assert_close(kind.name(), r.house_edge(kind), 1.0 - r.get(kind), 0.0);
    }
}

#[test]
fn other_paytables_on_eight_decks() {
    let p = full(8);
    let tie_9 = rtp(&p, &Paytable::tie_9());
    assert_rounds_to("tie 9:1", tie_9.tie * 100.0, 95.16, 2);
    assert_close("tie 9:1", tie_9.tie, 10.0 * p.wins.tie, 1e-15);
    assert_eq!(tie_9.banker, rtp(&p, &Paytable::standard()).banker);

    // Paying 1:2 on a Banker six costs 1.46 % (the published house edge of this variant),
    // not the 1.06 % of the 5 % commission.
    let no_commission = rtp(&p, &Paytable::no_commission());
    assert_rounds_to(
        "no-commission banker",
        no_commission.banker * 100.0,
        98.54,
        2,
    );
    let by_hand =
        2.0 * (p.wins.banker - p.banker_win_on_six) + 1.5 * p.banker_win_on_six + p.wins.tie;
    assert_close("no-commission banker", no_commission.banker, by_hand, 1e-15);
    // Banker wins on 6 are a known fraction of the 8-deck shoe: about 5.39 % of coups.
    assert_rounds_to("banker wins on six", p.banker_win_on_six, 0.0539, 4);

    let standard = rtp(&p, &Paytable::standard());
    assert_rounds_to("8-deck banker", standard.banker, 0.989421, 6);
    assert_rounds_to("8-deck player", standard.player, 0.987649, 6);
}

#[test]
fn probabilities_are_complete_for_every_deck_count() {
    for decks in 1..=8 {
        let p = full(decks);
        assert_close(
            "banker+player+tie",
            p.wins.banker + p.wins.player + p.wins.tie,
            1.0,
            1e-12,
        );
        assert_close("big+small", p.wins.big + p.wins.small, 1.0, 1e-12);
        assert_eq!(p.wins.player_pair, p.wins.banker_pair, "{decks} decks");
        for kind in BetKind::ALL {
            assert!(
                (0.0..=1.0).contains(&p.get(kind)),
                "{kind} at {decks} decks"
            );
        }
        // Banker has the edge over Player in every shoe size.
        assert!(p.wins.banker > p.wins.player, "{decks} decks");
    }
}

#[test]
fn pair_odds_match_hand_derived_fractions() {
    // One deck: 3 of the 51 cards left match the first card's rank.
    let one = full(1);
    assert_close("1 deck pair", one.wins.player_pair, 3.0 / 51.0, 1e-15);
    // Both pair: Σ_r Σ_s over ordered 4-card draws = 156² − 13·12² + 13·4! = 22776.
    let both = 22776.0 / (52.0 * 51.0 * 50.0 * 49.0);
    assert_close(
        "1 deck either",
        one.wins.either_pair,
        6.0 / 51.0 - both,
        1e-15,
    );
    // One deck holds each card once: no perfect pair is possible.
    assert_eq!(one.wins.perfect_pair, 0.0);

    let eight = full(8);
    assert_close("8 deck pair", eight.wins.player_pair, 31.0 / 415.0, 1e-15);

    // Two decks: a hand is a perfect pair with probability 1/103; both hands are, in
    // 104² − 52·2² = 10608 ordered four-card draws.
    let two = full(2);
    let both = 10608.0 / (104.0 * 103.0 * 102.0 * 101.0);
    assert_close(
        "2 deck perfect",
        two.wins.perfect_pair,
        2.0 / 103.0 - both,
        1e-15,
    );
}

#[test]
fn degenerate_shoes_have_certain_outcomes() {
    // (shoe, tie, big): every total is forced.
    for (cards, tie, big) in [
        // All zero: both hands draw on 0 and stay on 0.
        ("TS TH JS JH QS KS", 1.0, 1.0),
        // All threes: 6 against 6, both stand.
        ("3S 3H 3D 3C 3S 3H", 1.0, 0.0),
        // All fours: two naturals of 8.
        ("4S 4H 4D 4C 4S 4H 4D", 1.0, 0.0),
        // All aces: 2 against 2, both draw to 3.
        ("AS AH AD AC AS AH AD AC", 1.0, 1.0),
        // All fives: 0 against 0, both draw to 5.
        ("5S 5H 5D 5C 5S 5H", 1.0, 1.0),
    ] {
        let p = probabilities(&shoe_of(cards)).unwrap();
        assert_eq!(p.wins.tie, tie, "{cards}");
        assert_eq!(p.wins.banker + p.wins.player, 1.0 - tie, "{cards}");
        assert_eq!(p.wins.big, big, "{cards}");
        assert_eq!(p.wins.small, 1.0 - big, "{cards}");
    }
    // Ranks T T J J Q K: 2·(2·1) ordered pairs out of 6·5.
    let zeros = probabilities(&shoe_of("TS TH JS JH QS KS")).unwrap();
    assert_close("zero pair", zeros.wins.player_pair, 4.0 / 30.0, 1e-15);
    assert_eq!(zeros.wins.perfect_pair, 0.0);
}

#[test]
fn too_few_cards_is_an_error_naming_the_count() {
    let err = probabilities(&shoe_of("AS 2S 3S 4S 5S")).unwrap_err();
    assert_eq!(err, OddsError::TooFewCards { cards: 5 });
    assert!(err.to_string().contains('5'), "{err}");
    assert!(probabilities(&shoe_of("AS 2S 3S 4S 5S 6S")).is_ok());
    let err = probabilities(&Composition::from_counts([0; 52])).unwrap_err();
    assert_eq!(err, OddsError::TooFewCards { cards: 0 });
}

#[test]
fn in_a_shoe_without_eights_and_nines_small_is_a_natural_or_both_standing() {
    let mut shoe = Composition::full(1).unwrap();
    for card in Card::ALL {
        if card.value() >= 8 {
            shoe.remove(card, 1).unwrap();
        }
    }
    let p = probabilities(&shoe).unwrap();
    // Four cards only: a natural (still possible: 4+4, 5+3, …), or both hands on 6 or 7.
    let values = shoe.value_counts().map(u64::from);
    let n: u64 = values.iter().sum();
    let mut standing = 0u64;
    for seq in 0..10_000usize {
        let drawn = [seq % 10, seq / 10 % 10, seq / 100 % 10, seq / 1000];
        // Falling counts per value: the k-th card of a value has (count − k) choices.
        let mut taken = [0u64; 10];
        let mut weight = 1;
        for &v in &drawn {
            weight *= values[v].saturating_sub(taken[v]);
            taken[v] += 1;
        }
        let stands = |t: usize| t == 6 || t == 7;
        let (pt, bt) = ((drawn[0] + drawn[2]) % 10, (drawn[1] + drawn[3]) % 10);
        if pt >= 8 || bt >= 8 || (stands(pt) && stands(bt)) {
            standing += weight;
        }
    }
    let all = n * (n - 1) * (n - 2) * (n - 3);
    assert_close("small", p.wins.small, standing as f64 / all as f64, 1e-15);
    assert!(p.wins.small < full(1).wins.small);
}

/// Every event of one dealt coup, from the cards in dealing order.
struct Dealt {
    winner: char,
    cards: usize,
    player_pair: bool,
    banker_pair: bool,
    perfect: bool,
    banker_six: bool,
}

/// The coup as dealt from `order`, using only draw.rs for the tableau.
fn deal(order: &[Card]) -> Dealt {
    let player = [order[0], order[2]];
    let banker = [order[1], order[3]];
    let pt = total(player.iter().map(|c| c.value()));
    let bt = total(banker.iter().map(|c| c.value()));
    let mut next = 4;
    let (mut pf, mut bf) = (pt, bt);
    if !is_natural(pt) && !is_natural(bt) {
        let mut player_third = None;
        if player_draws(pt) {
            let t = order[next].value();
            next += 1;
            player_third = Some(t);
            pf = (pt + t) % 10;
        }
        if banker_draws(bt, player_third) {
            bf = (bt + order[next].value()) % 10;
            next += 1;
        }
    }
    Dealt {
        winner: match pf.cmp(&bf) {
            std::cmp::Ordering::Greater => 'P',
            std::cmp::Ordering::Less => 'B',
            std::cmp::Ordering::Equal => 'T',
        },
        cards: next,
        player_pair: player[0].rank() == player[1].rank(),
        banker_pair: banker[0].rank() == banker[1].rank(),
        perfect: player[0] == player[1] || banker[0] == banker[1],
        banker_six: bf > pf && bf == 6,
    }
}

/// Deals every ordered choice of six distinct positions of `cards` and counts.
fn brute_force(cards: &[Card]) -> Probabilities {
    let n = cards.len();
    let mut counts = [0u64; 10];
    let mut order = Vec::with_capacity(6);
    let mut used = vec![false; n];
    fn walk(cards: &[Card], used: &mut [bool], order: &mut Vec<Card>, counts: &mut [u64; 10]) {
        if order.len() == 6 {
            let d = deal(order);
            let events = [
                d.winner == 'B',
                d.winner == 'P',
                d.winner == 'T',
                d.player_pair,
                d.banker_pair,
                d.player_pair || d.banker_pair,
                d.perfect,
                d.cards >= 5,
                d.cards == 4,
                d.banker_six,
            ];
            for (count, happened) in counts.iter_mut().zip(events) {
                *count += u64::from(happened);
            }
            return;
        }
        for i in 0..cards.len() {
            if !used[i] {
                used[i] = true;
                order.push(cards[i]);
                walk(cards, used, order, counts);
                order.pop();
                used[i] = false;
            }
        }
    }
    walk(cards, &mut used, &mut order, &mut counts);
    let all = (0..6).map(|i| (n - i) as f64).product::<f64>();
    let p = counts.map(|c| c as f64 / all);
    Probabilities {
        wins: PerBet {
            banker: p[0],
            player: p[1],
            tie: p[2],
            player_pair: p[3],
            banker_pair: p[4],
            either_pair: p[5],
            perfect_pair: p[6],
            big: p[7],
            small: p[8],
        },
        banker_win_on_six: p[9],
    }
}

fn assert_same(what: &str, got: &Probabilities, want: &Probabilities) {
    for kind in BetKind::ALL {
        assert_close(
            &format!("{what} {kind}"),
            got.get(kind),
            want.get(kind),
            1e-12,
        );
    }
    assert_close(
        &format!("{what} banker on six"),
        got.banker_win_on_six,
        want.banker_win_on_six,
        1e-12,
    );
}

#[test]
fn small_shoes_match_a_brute_force_deal_of_every_order() {
    for seed in 0..12u64 {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        // A few distinct cards, repeated, so that pairs and perfect pairs happen; the pool
        // is drawn from the whole deck so every value class turns up across seeds.
        let pool: Vec<Card> = (0..5)
            .map(|_| Card::ALL[(rng.next_u64() % 52) as usize])
            .chain([Card::ALL[(seed * 7 % 13) as usize]])
            .collect();
        let n = 8 + (rng.next_u64() % 3) as usize;
        let cards: Vec<Card> = (0..n)
            .map(|_| pool[(rng.next_u64() % pool.len() as u64) as usize])
            .collect();
        let mut counts = [0u16; 52];
        for card in &cards {
            counts[usize::from(card.index())] += 1;
        }
        let text: Vec<String> = cards.iter().map(ToString::to_string).collect();
        let what = format!("seed {seed} [{}]", text.join(" "));
        let exact = probabilities(&Composition::from_counts(counts)).unwrap();
        assert_same(&what, &exact, &brute_force(&cards));
    }
}

#[test]
fn hand_picked_small_shoes_match_brute_force() {
    for cards in [
        // Naturals, draws and both pair kinds.
        "9S 9S 8H 2C 2C 7D 6H 3S",
        // Player draws, Banker's tableau decides on the third card.
        "5S 5H AS 3D 3D 4C 6C 7H KS",
        // Banker on 6 against a Player third of 6 or 7.
        "6S 6S TH TH 7C 6D AS 2C QS",
        // Banker on 3 against a Player 8.
        "3S TD 8C 8C 5H 4H JS 2D",
    ] {
        let list = parse_cards(cards).unwrap();
        assert_same(
            cards,
            &probabilities(&shoe_of(cards)).unwrap(),
            &brute_force(&list),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn depleted_shoes_stay_coherent(decks in 1u8..=8, seed in any::<u64>(), out in 0usize..400) {
        let mut shoe = Composition::full(decks).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let out = out.min(shoe.len() as usize - 6);
        let mut removed = 0;
        while removed < out {
            let card = Card::ALL[(rng.next_u64() % 52) as usize];
            if shoe.remove(card, decks).is_ok() {
                removed += 1;
            }
        }
        let p = probabilities(&shoe).unwrap();
        prop_assert!((p.wins.banker + p.wins.player + p.wins.tie - 1.0).abs() < 1e-12);
        prop_assert!((p.wins.big + p.wins.small - 1.0).abs() < 1e-12);
        for kind in BetKind::ALL {
            prop_assert!((0.0..=1.0).contains(&p.get(kind)), "{} {}", kind, p.get(kind));
        }
        prop_assert!(p.wins.either_pair >= p.wins.player_pair.max(p.wins.banker_pair) - 1e-15);
        prop_assert!(p.wins.either_pair <= p.wins.player_pair + p.wins.banker_pair + 1e-15);
        prop_assert!(p.banker_win_on_six <= p.wins.banker);
        // A perfect pair is a pair.
        prop_assert!(p.wins.perfect_pair <= p.wins.either_pair + 1e-15);
        let r = rtp(&p, &Paytable::standard());
        prop_assert!((r.tie - 9.0 * p.wins.tie).abs() < 1e-15);
    }
}
