//! What the croupier console is shown beyond the hand: the roads of the whole shoe (also in
//! a subscriber's Snapshot and in LastResults, where the history strip stays at 59), the
//! burn, a finished round's money and its currency, and a mute of an unknown id refused.
#![allow(clippy::unwrap_used)]

mod common;

use banco_rules::{Card, Scoreboard, Winner};
use common::*;
use pb::table_event::Event as E;

/// An 8-deck shoe without a burn, so that it plays well over 59 hands.
async fn open_eight_decks(c: &mut Croupier) {
    let reply = c
        .open_shoe(pb::OpenShoeRequest {
            table_id: t01(),
            command_id: id(),
            config: Some(pb::ShoeConfig {
                decks: 8,
                cut_card_from_end: 16,
                burn: pb::BurnRule::None.into(),
                procedure: pb::ShoeProcedure::CutCard.into(),
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(reply.refusal.is_none(), "{:?}", reply.refusal);
}

/// Eight decks in a fixed order (each deck stepped through by 7, which visits all 52).
fn eight_decks() -> impl Iterator<Item = Card> {
    (0..8).flat_map(|_| (0..52).map(|i| Card::ALL[(i * 7) % 52]))
}

fn winner_of(result: &pb::HandResult) -> Winner {
    banco_wire::convert::winner("winner", result.winner).unwrap()
}

/// Plays `rounds` rounds, dealing each card the table asks for; returns each result and
/// the last reply.
async fn play(
    c: &mut Croupier,
    cards: &mut impl Iterator<Item = Card>,
    rounds: usize,
) -> (Vec<Winner>, pb::CommandReply) {
    let mut winners = Vec::new();
    let mut last = None;
    for _ in 0..rounds {
        let round = state(&open_betting(c).await).round_id.clone();
        let mut reply = close_betting(c).await;
        while matches!(
            state(&reply).due(),
            pb::Due::PlayerCard | pb::Due::BankerCard
        ) {
            let card = cards.next().unwrap().to_string();
            reply = deal(c, &card).await;
            assert!(reply.refusal.is_none(), "{card}: {:?}", reply.refusal);
        }
        winners.push(winner_of(state(&reply).result.as_ref().unwrap()));
        let confirmed = confirm(c, &round).await;
        assert!(confirmed.refusal.is_none(), "{:?}", confirmed.refusal);
        last = Some(confirmed);
    }
    (winners, last.unwrap())
}

#[tokio::test]
async fn the_roads_cover_the_whole_shoe_and_the_strip_its_last_59() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    open_eight_decks(&mut c).await;
    let mut cards = eight_decks();
    let (winners, reply) = play(&mut c, &mut cards, 64).await;
    let whole = pb::Roads::from(&Scoreboard::from_results(&winners));
    let strip: Vec<i32> = winners[winners.len() - 59..]
        .iter()
        .map(|&w| pb::Winner::from(w).into())
        .collect();
    assert_eq!(whole.bead_plate.len(), 64);

    // The console: the command's reply and a new WatchTable.
    let shown = state(&reply);
    assert_eq!(shown.roads.as_ref(), Some(&whole));
    assert_eq!(shown.last_results, strip);
    let mut watch = watch_t01(&mut c).await;
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.roads.as_ref(), Some(&whole));
    assert_eq!(first.last_results, strip);

    // A subscriber's snapshot, and LastResults.
    let mut p = h.player("pia");
    let mut events = p
        .subscribe(pb::SubscribeRequest {
            table_id: t01(),
            resume_from_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let Some(E::Snapshot(snapshot)) = events.message().await.unwrap().unwrap().event else {
        panic!("no snapshot first");
    };
    assert_eq!(snapshot.roads.as_ref(), Some(&whole));
    assert_eq!(snapshot.last_results, strip);
    let last = p
        .last_results(pb::LastResultsRequest { table_id: t01() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(last.roads.as_ref(), Some(&whole));
    assert_eq!(last.last_results, strip);

    // One more result: the console's roads and the players' RoadsUpdated grow together.
    let (more, reply) = play(&mut c, &mut cards, 1).await;
    let all: Vec<Winner> = winners.iter().chain(&more).copied().collect();
    let whole = pb::Roads::from(&Scoreboard::from_results(&all));
    assert_eq!(state(&reply).roads.as_ref(), Some(&whole));
    loop {
        if let Some(E::RoadsUpdated(updated)) = events.message().await.unwrap().unwrap().event {
            assert_eq!(updated.roads.as_ref(), Some(&whole));
            assert_eq!(updated.last_results.len(), 59);
            break;
        }
    }
    h.stop().await;
}

#[tokio::test]
async fn the_console_sees_the_burn_and_what_a_round_paid() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut p = h.player("pia");
    let opened = open_shoe(&mut c).await;
    assert_eq!(state(&opened).burn, None, "not burned yet");
    assert_eq!(state(&opened).currency, "EUR");
    assert_eq!(
        state(&opened).roads,
        Some(pb::Roads::from(&Scoreboard::new()))
    );
    let burned = burn(&mut c, "4S").await;
    assert_eq!(
        state(&burned).burn,
        Some(pb::ShoeBurn {
            exposed_card: "4S".into(),
            burned_face_down: 4,
        })
    );
    let round = state(&open_betting(&mut c).await).round_id.clone();
    place(&mut p, &round, vec![bet(pb::BetKind::Banker, 2_000)], "b").await;
    let mut q = h.player("quinn");
    place(&mut q, &round, vec![bet(pb::BetKind::Player, 1_000)], "q").await;
    close_betting(&mut c).await;
    // Player 2♥ 3♥ (5), Banker 4♥ 5♥ (9): a Banker natural.
    let mut last = None;
    for card in ["2H", "4H", "3H", "5H"] {
        last = Some(deal(&mut c, card).await);
    }
    assert_eq!(state(&last.unwrap()).round_totals, None, "not before R");
    let settled = confirm(&mut c, &round).await;
    let shown = state(&settled);
    assert_eq!(
        shown.round_totals,
        Some(pb::RoundTotals {
            staked_minor: 3_000,
            returned_minor: 3_900,
            house_result_minor: -900,
        })
    );
    assert_eq!(shown.currency, "EUR");
    assert_eq!(shown.burn.as_ref().unwrap().exposed_card, "4S");
    h.stop().await;
}

#[tokio::test]
async fn a_mute_of_an_id_never_seen_here_is_refused_naming_it() {
    let h = Harness::start().await;
    let mut c = h.croupier();
    let mut bob = h.player("bob77");
    let said = bob
        .send_chat(pb::SendChatRequest {
            table_id: t01(),
            text: "hello".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(said.refusal.is_none(), "{:?}", said.refusal);
    let mute = |player: &str| pb::MutePlayerRequest {
        table_id: t01(),
        command_id: id(),
        player_id: player.to_owned(),
        minutes: 30,
        reason: "insults".to_owned(),
    };
    let refused = c.mute_player(mute("bob777")).await.unwrap().into_inner();
    let refusal = refused.refusal.unwrap();
    assert_eq!(refusal.code(), pb::RefusalCode::NotAllowed);
    assert_eq!(refusal.field, "player_id");
    assert!(
        refusal.message.contains("cannot mute bob777"),
        "{refusal:?}"
    );
    let muted = c.mute_player(mute("bob77")).await.unwrap().into_inner();
    assert!(muted.refusal.is_none(), "{:?}", muted.refusal);
    h.stop().await;
}
