//! Issue 3, "It must show": the validator and the broadcaster as separate processes on
//! loopback ports, a croupier and 50 players over gRPC, 1,000 rounds dealt from seeded
//! 8-deck shoes; then every settlement, the hash chain, every balance and the books are
//! checked against an independent model. And every refusal of the issue changes nothing.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use banco::clients::player::bets_to_pb;
use banco_auth::Role;
use banco_e2e::clients::{
    Authed, Cmd, Croupier, Player, numbered_players, player_client, record_of, settled_balance,
    stable, table_client,
};
use banco_e2e::model::{Books, Expected, Limits, Stakes, check_decisions};
use banco_e2e::procs::{BroadcasterSetup, Keys, channel, start_validator};
use banco_e2e::random_bets::{below, random_positions};
use banco_e2e::{outbox, poll};
use banco_rules::shoe::{ShoeConfig, ShuffledShoe};
use banco_rules::{Bet, BetKind, Card, Coup, Due, Paytable, Settlement, Shoe, ShoeState, settle};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use tonic::Code;

const SEED: u64 = 2026;
const PLAYERS: usize = 50;
const WELCOME: i64 = 200_000;

fn rounds() -> usize {
    std::env::var("BANCO_E2E_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1000)
}

/// A round as dealt and as the model settled it.
type Played = (
    String,
    Vec<Card>,
    std::collections::BTreeMap<String, Vec<Settlement>>,
);

/// A random request: 1 to 3 positions, mostly within the limits, some under the minimum
/// (raised), a few over the maximum (refused), now and then a Tie alone (refused).
/// The whale bets the maximum on every position each round, until the balance no longer
/// covers it (INSUFFICIENT_FUNDS from then on).
fn random_request(rng: &mut ChaCha20Rng, whale: bool) -> Vec<(BetKind, i64)> {
    if whale {
        return BetKind::ALL.into_iter().map(|k| (k, 10_200)).collect();
    }
    random_positions(rng)
        .into_iter()
        .map(|kind| {
            let amount = match below(rng, 100) {
                0..70 => 500 + below(rng, 2_500) as i64,
                70..85 => 1 + below(rng, 499) as i64,
                85..90 => 10_201 + below(rng, 5_000) as i64,
                _ => 3_000 + below(rng, 7_201) as i64,
            };
            (kind, amount)
        })
        .collect()
}

fn due_of(state: &pb::TableState) -> pb::Due {
    state.due()
}

fn cards_of(state: &pb::TableState) -> Vec<String> {
    state.cards.iter().map(|c| c.card.clone()).collect()
}

/// What the run saw, to show that every kind of bet and refusal was exercised.
#[derive(Debug, Default)]
struct Seen {
    accepted: BTreeMap<BetKind, u32>,
    raised: u32,
    refused: BTreeMap<String, u32>,
    requests: u32,
    shoes: u32,
}

async fn place(
    player: &mut Player,
    table: &str,
    round_id: &str,
    key: String,
    request: &[(BetKind, i64)],
) -> pb::PlaceBetsResponse {
    player
        .client
        .place_bets(pb::PlaceBetsRequest {
            table_id: table.to_owned(),
            round_id: round_id.to_owned(),
            bets: bets_to_pb(request),
            idempotency_key: key,
        })
        .await
        .unwrap_or_else(|s| panic!("{} PlaceBets {request:?}: {s}", player.name))
        .into_inner()
}

async fn balance(client: &mut PlayerServiceClient<Authed>) -> i64 {
    settled_balance(client).await
}

/// One wave of bets: every player with a request sends it at once; each reply is checked
/// against the model and booked.
async fn bet_wave(
    players: &mut [Player],
    requests: Vec<Option<Vec<(BetKind, i64)>>>,
    books: &mut Books,
    seen: &mut Seen,
    round_id: &str,
    wave: u32,
) {
    let mut expected = Vec::new();
    for (p, r) in players.iter().zip(&requests) {
        expected.push(r.as_ref().map(|r| {
            let existing: Option<Stakes> = books.round.get(&p.name).cloned();
            (books.predict(&p.name, r), existing)
        }));
    }
    let replies = futures::future::join_all(players.iter_mut().zip(&requests).map(
        |(player, request)| async move {
            match request {
                Some(r) => {
                    let key = format!("{}-{round_id}-{wave}", player.name);
                    Some(place(player, "T01", round_id, key, r).await)
                }
                None => None,
            }
        },
    ))
    .await;
    for ((player, request), (reply, expected)) in players
        .iter()
        .zip(&requests)
        .zip(replies.into_iter().zip(expected))
    {
        let (Some(request), Some(reply), Some((expected, existing))) = (request, reply, expected)
        else {
            continue;
        };
        seen.requests += 1;
        if let Err(e) = check_decisions(&expected, request, existing.as_ref(), &reply) {
            panic!("{} in {round_id}: {e}", player.name);
        }
        let accepted = expected.iter().all(|e| matches!(e, Expected::Accepted(_)));
        if accepted {
            books.apply(&player.name, request, &expected);
            for (&(kind, asked), e) in request.iter().zip(&expected) {
                *seen.accepted.entry(kind).or_default() += 1;
                if *e != Expected::Accepted(asked) {
                    seen.raised += 1;
                }
            }
        } else {
            for e in &expected {
                if let Expected::Refused(code) = e {
                    *seen
                        .refused
                        .entry(code.as_str_name().to_owned())
                        .or_default() += 1;
                }
            }
        }
        if let Err(e) = books.check_balance(&player.name, reply.balance.as_ref()) {
            panic!(
                "{} in {round_id}: balance in the PlaceBets reply: {e}",
                player.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_rounds_settle_exactly_and_the_books_balance() {
    let rounds = rounds();
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = WELCOME;
    let broadcaster = setup.start();
    let channel = channel(&broadcaster.url()).await;
    let mut croupier = Croupier::new(
        channel.clone(),
        &keys.issue("croupier", "dealer1", "1h"),
        "T01",
        "console",
    );
    let mut players = numbered_players(&keys, &channel, PLAYERS);
    let tables = players[0]
        .client
        .list_tables(pb::ListTablesRequest {})
        .await
        .unwrap()
        .into_inner()
        .tables;
    assert_eq!(tables.len(), 1);
    let info = &tables[0];
    assert_eq!(info.table_id, "T01");
    assert_eq!(info.decks, 8);
    assert_eq!(info.paytable.as_ref().unwrap().name, "standard");
    let paytable = Paytable::standard();
    let mut books = Books::new(Limits::from_info(info), paytable.clone(), WELCOME);

    let mut rng = ChaCha20Rng::seed_from_u64(SEED);
    let mut shoe: Option<ShuffledShoe> = None;
    let mut played: Vec<Played> = Vec::new();
    let mut seen = Seen::default();
    let started = Instant::now();

    for n in 0..rounds {
        // A new shoe when the last one ended (and at the start).
        if shoe.is_none() {
            let state = croupier.ok(Cmd::OpenShoe).await;
            assert_eq!(state.shoe_state(), pb::ShoeState::AwaitingBurn);
            let mut shuffled = Shoe::shuffled(ShoeConfig::default(), &mut rng).unwrap();
            let burn = shuffled.burn().unwrap();
            let state = croupier.ok(Cmd::Burn(burn.exposed.to_string())).await;
            assert_eq!(state.shoe_state(), pb::ShoeState::InPlay);
            assert_eq!(state.cards_left, u32::from(shuffled.shoe().cards_left()));
            shoe = Some(shuffled);
            seen.shoes += 1;
        }
        let shuffled = shoe.as_mut().unwrap();
        let t0 = Instant::now();
        let state = croupier.ok(Cmd::OpenBetting).await;
        let t1 = Instant::now();
        assert_eq!(state.phase(), pb::TablePhase::BettingOpen);
        let round_id = state.round_id.clone();

        let first: Vec<_> = (0..PLAYERS)
            .map(|i| (below(&mut rng, 10) != 0).then(|| random_request(&mut rng, i == 0)))
            .collect();
        bet_wave(&mut players, first, &mut books, &mut seen, &round_id, 1).await;
        let second: Vec<_> = (0..PLAYERS)
            .map(|_| (below(&mut rng, 5) == 0).then(|| random_request(&mut rng, false)))
            .collect();
        bet_wave(&mut players, second, &mut books, &mut seen, &round_id, 2).await;

        let t2 = Instant::now();
        let mut state = croupier.ok(Cmd::CloseBetting).await;
        let t3 = Instant::now();
        if std::env::var_os("BANCO_E2E_TIMING").is_some() {
            eprintln!("open {:?} bets {:?} close {:?}", t1 - t0, t2 - t1, t3 - t2);
        }
        assert_eq!(state.phase(), pb::TablePhase::BettingClosed);
        let mut totals: BTreeMap<i32, i64> = BTreeMap::new();
        for stakes in books.round.values() {
            for (&kind, &stake) in stakes {
                *totals.entry(pb::BetKind::from(kind).into()).or_default() += stake;
            }
        }
        let shown: BTreeMap<i32, i64> = state
            .bet_totals
            .iter()
            .map(|t| (t.kind, t.total_minor))
            .collect();
        assert_eq!(shown, totals, "{round_id}: bet totals at close");

        // Deal what the table says is due, checking it against the rules.
        let mut coup = Coup::default();
        loop {
            let due = due_of(&state);
            assert_eq!(
                due,
                pb::Due::from(coup.due()),
                "{round_id}: due after {:?}",
                coup.cards()
            );
            if due == pb::Due::Complete {
                break;
            }
            let card = shuffled.next_card().unwrap();
            coup.deal(card).unwrap();
            state = croupier.ok(Cmd::Deal(card.to_string())).await;
            assert_eq!(state.cards_left, u32::from(shuffled.shoe().cards_left()));
        }
        let t4 = Instant::now();
        assert_eq!(coup.due(), Due::Complete);
        assert_eq!(state.phase(), pb::TablePhase::Result, "{round_id}");
        let cards = coup.cards().to_vec();
        assert_eq!(
            cards_of(&state),
            cards.iter().map(ToString::to_string).collect::<Vec<_>>()
        );
        let state = croupier.ok(Cmd::Confirm(round_id.clone())).await;
        if std::env::var_os("BANCO_E2E_TIMING").is_some() {
            eprintln!(
                "deal {} cards {:?} confirm {:?}",
                cards.len(),
                t4 - t3,
                t4.elapsed()
            );
        }
        assert_eq!(state.phase(), pb::TablePhase::Settled, "{round_id}");
        let settlements = books.settle(&cards);
        played.push((round_id.clone(), cards, settlements));
        let after = shuffled.hand_finished().unwrap();
        if after == ShoeState::Ended {
            assert!(
                matches!(
                    state.shoe_state(),
                    pb::ShoeState::Ended | pb::ShoeState::NoShoe
                ),
                "{round_id}: the shoe ended, the table says {:?}",
                state.shoe_state()
            );
            shoe = None;
        } else {
            assert_eq!(state.shoe_state(), pb::ShoeState::from(after), "{round_id}");
        }
        if n % 100 == 99 {
            eprintln!("table_core: {} rounds in {:?}", n + 1, started.elapsed());
        }
    }
    let elapsed = started.elapsed();

    // The outbox: every round once, in order, settled as the rules settle it.
    let lines = outbox::wait_for(&setup.outbox(), rounds, Duration::from_secs(30)).await;
    assert_eq!(lines.len(), rounds, "rounds in the outbox");
    outbox::verify_chain(&lines).unwrap();
    let mut house_from_outbox = 0;
    for (line, (round_id, cards, settlements)) in lines.iter().zip(&played) {
        let r = line.recorded();
        assert_eq!(&r.round_id, round_id);
        assert_eq!(&r.cards, cards, "{round_id}: cards");
        assert_eq!(
            &r.settlements, settlements,
            "{round_id}: settlements vs the model"
        );
        let result = Coup::judge(&r.cards).unwrap();
        assert_eq!(
            r.bets.keys().collect::<Vec<_>>(),
            r.settlements.keys().collect::<Vec<_>>(),
            "{round_id}: every bettor settled"
        );
        for (player, stakes) in &r.bets {
            let bets: Vec<Bet> = stakes.iter().map(|(&k, &s)| Bet::new(k, s)).collect();
            let again = settle(&bets, &result, &paytable).unwrap();
            assert_eq!(&again, &r.settlements[player], "{round_id} {player}");
            house_from_outbox += again.iter().map(|s| s.stake - s.returned).sum::<i64>();
        }
    }
    assert_eq!(house_from_outbox, books.house);

    // Every balance, and the books.
    let mut total = 0;
    for player in &mut players {
        let got = balance(&mut player.client).await;
        assert_eq!(
            got,
            books.balance(&player.name),
            "{}'s balance",
            player.name
        );
        total += got;
    }
    assert_eq!(
        total + books.house,
        books.credited,
        "player balances + house result = credited"
    );
    assert_eq!(books.credited, WELCOME * PLAYERS as i64);

    // The run exercised every position and every refusal it meant to.
    for kind in BetKind::ALL {
        assert!(seen.accepted.contains_key(&kind), "{kind} never accepted");
    }
    assert!(seen.raised > 0, "no bet raised to the minimum");
    for code in [
        "REFUSAL_CODE_ABOVE_MAXIMUM",
        "REFUSAL_CODE_NOT_ALLOWED",
        "REFUSAL_CODE_INSUFFICIENT_FUNDS",
    ] {
        assert!(
            seen.refused.contains_key(code),
            "never refused with {code}: {seen:?}"
        );
    }
    eprintln!(
        "table_core: {rounds} rounds, {} shoes, {} bet requests by {PLAYERS} players in {elapsed:?} \
         ({:.1} ms/round); house result {}; accepted {:?}; raised {}; refused {:?}",
        seen.shoes,
        seen.requests,
        elapsed.as_secs_f64() * 1000.0 / rounds as f64,
        books.house,
        seen.accepted,
        seen.raised,
        seen.refused,
    );
}

/// Reads a refused PlaceBets: the one code of every decision.
fn refusal_code(reply: &pb::PlaceBetsResponse) -> pb::RefusalCode {
    let codes: BTreeSet<_> = reply
        .decisions
        .iter()
        .map(|d| match &d.decision {
            Some(pb::bet_decision::Decision::Refusal(r)) => r.code(),
            other => panic!("expected a refusal, got {other:?}"),
        })
        .collect();
    assert_eq!(codes.len(), 1, "{reply:?}");
    codes.into_iter().next().unwrap()
}

#[tokio::test]
async fn every_refusal_of_issue_3_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = 20_000;
    let broadcaster = setup.start();
    let channel = channel(&broadcaster.url()).await;
    let croupier_token = keys.issue("croupier", "dealer1", "1h");
    let mut croupier = Croupier::new(channel.clone(), &croupier_token, "T01", "console");
    let alice_token = keys.issue("player", "alice", "1h");
    let mut alice = Player::new(channel.clone(), "alice", alice_token.clone());

    // Tokens: a player's on TableService, a forged one, an expired one. Nothing moves.
    let before = croupier.state().await.unwrap();
    let open = pb::OpenShoeRequest {
        table_id: "T01".into(),
        command_id: "sneaky-1".into(),
        config: None,
    };
    let denied = table_client(channel.clone(), &alice_token)
        .open_shoe(open.clone())
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let other = Keys::generate(&dir.path().join("other-keys"));
    let forged = other.issue("croupier", "dealer1", "1h");
    let denied = table_client(channel.clone(), &forged)
        .open_shoe(open.clone())
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::Unauthenticated, "{denied:?}");
    let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
    let expired = keys.issue_at(
        Role::Croupier,
        "dealer1",
        Duration::from_secs(3600),
        two_hours_ago,
    );
    let denied = table_client(channel.clone(), &expired)
        .open_shoe(open.clone())
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::Unauthenticated, "{denied:?}");
    let expired_player = keys.issue_at(
        Role::Player,
        "alice",
        Duration::from_secs(3600),
        two_hours_ago,
    );
    let denied = player_client(channel.clone(), &expired_player)
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::Unauthenticated, "{denied:?}");
    let denied = player_client(channel.clone(), &croupier_token)
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    assert_eq!(stable(&croupier.state().await.unwrap()), stable(&before));

    // A shoe, a burn, a round with bets.
    croupier.ok(Cmd::OpenShoe).await;
    croupier.ok(Cmd::Burn("2C".into())).await;
    let state = croupier.ok(Cmd::OpenBetting).await;
    let round = state.round_id.clone();
    let ok = place(
        &mut alice,
        "T01",
        &round,
        "k1".into(),
        &[(BetKind::Player, 1_000)],
    )
    .await;
    assert!(matches!(
        ok.decisions[0].decision,
        Some(pb::bet_decision::Decision::Accepted(_))
    ));
    assert_eq!(balance(&mut alice.client).await, 19_000);
    let table_before = stable(&croupier.state().await.unwrap());

    // Over the table maximum.
    let over = place(
        &mut alice,
        "T01",
        &round,
        "k2".into(),
        &[(BetKind::Banker, 10_201)],
    )
    .await;
    assert_eq!(refusal_code(&over), pb::RefusalCode::AboveMaximum);
    // Over the balance.
    let broke = place(
        &mut alice,
        "T01",
        &round,
        "k3".into(),
        &[(BetKind::Banker, 10_000), (BetKind::PlayerPair, 10_000)],
    )
    .await;
    assert_eq!(refusal_code(&broke), pb::RefusalCode::InsufficientFunds);
    // The same key again: the first answer, debited once.
    let again = place(
        &mut alice,
        "T01",
        &round,
        "k1".into(),
        &[(BetKind::Player, 1_000)],
    )
    .await;
    assert_eq!(again.decisions, ok.decisions);
    // The same key for another request.
    let conflict = place(
        &mut alice,
        "T01",
        &round,
        "k1".into(),
        &[(BetKind::Player, 2_000)],
    )
    .await;
    assert_eq!(
        refusal_code(&conflict),
        pb::RefusalCode::IdempotencyConflict
    );
    assert_eq!(balance(&mut alice.client).await, 19_000);
    // The request the wallet refused went through the table's journal: the request, the
    // wallet's refusal and the acknowledgements of its two debits' cancels, a moment after
    // the reply. The wallet task journals the acknowledgements that are in when the first
    // comes: one record, or two when the second cancel was answered after the first was
    // journaled (seen on a loaded machine). So 3 records or 4, and nothing else changed.
    let journaled = |s: &pb::TableState| record_of(s.seq) - record_of(table_before.seq);
    let mut now = poll(
        Duration::from_secs(2),
        Duration::from_millis(20),
        async || stable(&croupier.state().await.unwrap()),
        |s| journaled(s) == 4,
    )
    .await;
    assert!(
        (3..=4).contains(&journaled(&now)),
        "{} records journaled",
        journaled(&now)
    );
    now.seq = table_before.seq;
    assert_eq!(now, table_before);
    let table_before = stable(&croupier.state().await.unwrap());
    // A Tie alone (bob has no Player or Banker bet; his welcome credit is all he gets).
    let mut bob = Player::new(channel.clone(), "bob", keys.issue("player", "bob", "1h"));
    let lone = place(&mut bob, "T01", &round, "b1".into(), &[(BetKind::Tie, 500)]).await;
    assert_eq!(refusal_code(&lone), pb::RefusalCode::NotAllowed);
    assert_eq!(balance(&mut bob.client).await, 20_000);
    // Bob's welcome deposit is the wallet's, and the table never showed him a balance:
    // not a record here.
    assert_eq!(stable(&croupier.state().await.unwrap()), table_before);

    // A late bet.
    croupier.ok(Cmd::CloseBetting).await;
    let closed = stable(&croupier.state().await.unwrap());
    let late = place(
        &mut alice,
        "T01",
        &round,
        "k5".into(),
        &[(BetKind::Banker, 1_000)],
    )
    .await;
    assert_eq!(refusal_code(&late), pb::RefusalCode::BettingClosed);
    assert_eq!(balance(&mut alice.client).await, 19_000);
    assert_eq!(stable(&croupier.state().await.unwrap()), closed);

    // Six aces: P A A, B A A, then a third card each (2 against 2: both draw). A tie.
    for due in [
        pb::Due::PlayerCard,
        pb::Due::BankerCard,
        pb::Due::PlayerCard,
        pb::Due::BankerCard,
        pb::Due::PlayerCard,
        pb::Due::BankerCard,
    ] {
        let before = croupier.state().await.unwrap();
        assert_eq!(before.due(), due);
        croupier.ok(Cmd::Deal("AS".into())).await;
    }
    let complete = croupier.state().await.unwrap();
    assert_eq!(complete.phase(), pb::TablePhase::Result);
    assert_eq!(complete.due(), pb::Due::Complete);
    // A card when none is due.
    let (refusal, after) = croupier.refused(Cmd::Deal("KD".into())).await;
    assert_eq!(refusal.code(), pb::RefusalCode::HandComplete, "{refusal:?}");
    assert_eq!(stable(&after), stable(&complete));
    // A resent command id: the first reply, nothing applied again.
    let id = croupier.next_id();
    let confirm = Cmd::Confirm(round.clone());
    let first = croupier.send(&id, &confirm).await.unwrap();
    assert!(first.refusal.is_none() && !first.replayed, "{first:?}");
    let resent = croupier.send(&id, &confirm).await.unwrap();
    assert!(resent.replayed, "{resent:?}");
    assert_eq!(resent.seq, first.seq);
    // A tie: alice's Player bet is pushed; the stake comes back through the table's
    // outbox, pending until the wallet acknowledges it a moment later.
    assert_eq!(balance(&mut alice.client).await, 20_000);

    // The ninth ace of spades from eight decks.
    croupier.ok(Cmd::OpenBetting).await;
    croupier.ok(Cmd::CloseBetting).await;
    croupier.ok(Cmd::Deal("AS".into())).await;
    croupier.ok(Cmd::Deal("AS".into())).await;
    let eighth = croupier.state().await.unwrap();
    let (refusal, after) = croupier.refused(Cmd::Deal("AS".into())).await;
    assert_eq!(refusal.code(), pb::RefusalCode::Misread, "{refusal:?}");
    assert_eq!(stable(&after), stable(&eighth));
    assert_eq!(stable(&croupier.state().await.unwrap()), stable(&eighth));
    for card in ["KC", "KH", "KS", "KD"] {
        croupier.ok(Cmd::Deal(card.into())).await;
    }
    let state = croupier.state().await.unwrap();
    assert_eq!(state.phase(), pb::TablePhase::Result);
    croupier.ok(Cmd::Confirm(state.round_id.clone())).await;

    let lines = outbox::wait_for(&setup.outbox(), 2, Duration::from_secs(10)).await;
    assert_eq!(lines.len(), 2);
    outbox::verify_chain(&lines).unwrap();
    let first = lines[0].recorded();
    assert_eq!(
        first.bets["alice"],
        Stakes::from([(BetKind::Player, 1_000)])
    );
}
