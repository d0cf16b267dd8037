//! What players are told of a journaled command: the table's events turned into wire
//! events, each public or private to one player.
//!
//! The translation is pure: it reads the command's events, the table right after it, and
//! the table right before it (for the side of an undone card), and keeps the shoe's roads
//! up to date. Events that are nobody's business but the table's (`RoundFinished`,
//! `Replayed`, self-limit and cashier records without a balance change) give nothing.

use std::sync::Arc;

use banco_records::ShoeId;
use banco_rules::roads::LAST_RESULTS_SHOWN;
use banco_rules::{Coup, Scoreboard};
use banco_table::convert;
use banco_table::{Event, TableSnapshot};
use banco_wire::pb;
use banco_wire::pb::table_event::Event as Wire;

/// One wire event before it is numbered and encoded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Outgoing {
    /// `None`: everyone at the table; `Some(player)`: that player only.
    pub(crate) to: Option<Arc<str>>,
    pub(crate) round_id: String,
    pub(crate) event: Wire,
}

impl Outgoing {
    fn public(round_id: &str, event: Wire) -> Outgoing {
        Outgoing {
            to: None,
            round_id: round_id.to_owned(),
            event,
        }
    }

    fn private(player: &str, round_id: &str, event: Wire) -> Outgoing {
        Outgoing {
            to: Some(Arc::from(player)),
            round_id: round_id.to_owned(),
            event,
        }
    }
}

/// The wire events of one journaled command.
///
/// `before` is the table as the previous record left it, `after` as this one did.
/// `board` is the shoe's scoreboard; it is updated here, as the table updates its own.
pub(crate) fn translate(
    events: &[Event],
    before: &TableSnapshot,
    after: &TableSnapshot,
    board: &mut Scoreboard,
    currency: &str,
) -> Vec<Outgoing> {
    let mut out = Vec::new();
    translate_into(events, before, after, board, currency, &mut out);
    out
}

/// [`translate`] into `out`, after what it holds: the hub keeps one buffer for every
/// record. A wire event is large (a few hundred bytes), and a record of a busy betting
/// window carries hundreds: a vector grown anew for each was most of the hub's time, in
/// the allocator and in the kernel handing it fresh pages.
pub(crate) fn translate_into(
    events: &[Event],
    before: &TableSnapshot,
    after: &TableSnapshot,
    board: &mut Scoreboard,
    currency: &str,
    out: &mut Vec<Outgoing>,
) {
    let table = after.table.as_str();
    let round = after
        .round_id
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let round = round.as_str();
    for event in events {
        match event {
            Event::ShoeOpened {
                shoe,
                config,
                commitment,
                ..
            } => {
                *board = Scoreboard::new();
                out.push(Outgoing::public(
                    "",
                    shoe_event(table, *shoe, pb::ShoeEventKind::NewShoe, after, |e| {
                        e.config = Some(pb::ShoeConfig::from(*config));
                        e.commitment = commitment.clone().unwrap_or_default();
                    }),
                ));
            }
            Event::Burned { shoe, burn, .. } => out.push(Outgoing::public(
                "",
                shoe_event(table, *shoe, pb::ShoeEventKind::Burn, after, |e| {
                    e.exposed_card = burn.exposed.to_string();
                    e.burned_face_down = u32::from(burn.face_down);
                }),
            )),
            Event::BettingOpened {
                round_id,
                opened_at,
                closes_at,
                ..
            } => out.push(Outgoing::public(
                &round_id.to_string(),
                Wire::BettingOpened(pb::BettingOpened {
                    closes_at: closes_at.map(banco_wire::convert::timestamp_of_ms),
                    duration_ms: closes_at.map_or(0, |c| {
                        u32::try_from(c.saturating_sub(*opened_at)).unwrap_or(u32::MAX)
                    }),
                }),
            )),
            Event::BettingClosed { round_id, .. } => out.push(Outgoing::public(
                &round_id.to_string(),
                Wire::BettingClosed(pb::BettingClosed {
                    bet_totals: convert::position_totals(&after.bet_totals),
                }),
            )),
            // Coalesced by the hub (at most a few a second): see `Hub`.
            Event::BetTotals { .. } => {}
            Event::CardDealt {
                round_id,
                card,
                to,
                due_next,
                source,
                at,
            } => out.push(Outgoing::public(
                &round_id.to_string(),
                Wire::CardDealt(pb::CardDealt {
                    card: Some(convert::dealt_card_to_pb(&banco_table::phase::DealtCard {
                        card: *card,
                        to: *to,
                        source: *source,
                        at: *at,
                    })),
                    due: pb::Due::from(*due_next).into(),
                    player_total: u32::from(after.player_total),
                    banker_total: u32::from(after.banker_total),
                    cards_left: after.cards_left.map_or(0, u32::from),
                }),
            )),
            Event::CutCardOut { round_id } => {
                let shoe = after.shoe.unwrap_or_default();
                out.push(Outgoing::public(
                    &round_id.to_string(),
                    shoe_event(table, shoe, pb::ShoeEventKind::CutCard, after, |_| {}),
                ));
            }
            Event::CardUndone {
                round_id,
                card,
                reason,
                due_next,
                ..
            } => {
                // The card taken back was the last one the table had dealt before.
                let side = before
                    .cards
                    .last()
                    .filter(|d| d.card == *card)
                    .map_or(pb::Side::Unspecified, |d| pb::Side::from(d.to));
                out.push(Outgoing::public(
                    &round_id.to_string(),
                    Wire::CardUndone(pb::CardUndone {
                        card: card.to_string(),
                        side: side.into(),
                        reason: reason.clone(),
                        due: pb::Due::from(*due_next).into(),
                        player_total: u32::from(after.player_total),
                        banker_total: u32::from(after.banker_total),
                    }),
                ));
            }
            Event::Result { round_id, result } => out.push(Outgoing::public(
                &round_id.to_string(),
                Wire::RoundResult(pb::RoundResult {
                    result: Some(pb::HandResult::from(result)),
                }),
            )),
            Event::Settled {
                round_id, players, ..
            } => {
                let round_id = round_id.to_string();
                // The table scores a settled round by the winner of its cards.
                let cards: Vec<_> = after.cards.iter().map(|d| d.card).collect();
                if let Some(result) = Coup::replay(&cards).ok().and_then(|c| c.result()) {
                    board.push(result.winner());
                }
                out.push(Outgoing::public(
                    &round_id,
                    Wire::RoadsUpdated(pb::RoadsUpdated {
                        roads: Some(pb::Roads::from(&*board)),
                        last_results: winners(board),
                    }),
                ));
                for (player, settlements) in players {
                    out.push(Outgoing::private(
                        player,
                        &round_id,
                        Wire::Settled(pb::Settled {
                            total_stake_minor: settlements.iter().map(|s| s.stake).sum(),
                            total_returned_minor: settlements.iter().map(|s| s.returned).sum(),
                            settlements: settlements
                                .iter()
                                .copied()
                                .map(pb::Settlement::from)
                                .collect(),
                        }),
                    ));
                }
            }
            Event::RoundVoided { round_id, void, .. } => out.push(Outgoing::public(
                &round_id.to_string(),
                Wire::RoundVoided(pb::RoundVoided {
                    reason: void.reason.clone(),
                    refunds: Vec::new(),
                    refunded_minor: 0,
                }),
            )),
            Event::BetsAccepted {
                player,
                round_id,
                key,
                bets,
                raised,
                stakes,
            } => out.push(Outgoing::private(
                player,
                &round_id.to_string(),
                Wire::BetAccepted(pb::BetAccepted {
                    idempotency_key: key.clone(),
                    bets: bets
                        .iter()
                        .map(|&(kind, added)| pb::AcceptedBet {
                            kind: pb::BetKind::from(kind).into(),
                            requested_minor: raised
                                .iter()
                                .find(|r| r.kind == kind)
                                .map_or(added, |r| r.asked),
                            accepted_minor: added,
                            position_total_minor: stakes.get(&kind).copied().unwrap_or(0),
                        })
                        .collect(),
                }),
            )),
            Event::BetsRefused {
                player,
                round_id,
                key,
                bets,
                why,
            } => {
                let refusal = convert::bet_refusal(why, currency);
                for &(kind, stake) in bets {
                    out.push(Outgoing::private(
                        player,
                        &round_id.to_string(),
                        Wire::BetRefused(pb::BetRefused {
                            idempotency_key: key.clone(),
                            bet: Some(pb::Bet {
                                kind: pb::BetKind::from(kind).into(),
                                stake_minor: stake,
                            }),
                            refusal: Some(refusal.clone()),
                        }),
                    ));
                }
            }
            Event::LastHand { shoe } => out.push(Outgoing::public(
                round,
                shoe_event(table, *shoe, pb::ShoeEventKind::LastHand, after, |_| {}),
            )),
            Event::ShoeEnded {
                shoe,
                reason,
                shuffle_key,
                ..
            } => out.push(Outgoing::public(
                "",
                shoe_event(table, *shoe, pb::ShoeEventKind::ShoeEnd, after, |e| {
                    e.reason = reason.clone().unwrap_or_default();
                    e.shuffle_key = shuffle_key.clone().unwrap_or_default();
                }),
            )),
            Event::BalanceChanged {
                player,
                balance,
                delta,
                in_play,
                pending,
                reason,
            } => out.push(Outgoing::private(
                player,
                round,
                Wire::BalanceChanged(pb::BalanceChanged {
                    balance: Some(pb::Balance {
                        available_minor: *balance,
                        in_play_minor: *in_play,
                        currency: currency.to_owned(),
                        pending_minor: *pending,
                    }),
                    delta_minor: *delta,
                    reason: convert::balance_reason(*reason).to_owned(),
                }),
            )),
            Event::SeatTaken { player, seat } => out.push(Outgoing::public(
                round,
                Wire::SeatChanged(pb::SeatChanged {
                    seat: u32::from(*seat),
                    player: player.clone(),
                }),
            )),
            Event::SeatLeft { seat, .. } => out.push(Outgoing::public(
                round,
                Wire::SeatChanged(pb::SeatChanged {
                    seat: u32::from(*seat),
                    player: String::new(),
                }),
            )),
            Event::HandPassed {
                player,
                round_id,
                seat,
            } => out.push(Outgoing::public(
                &round_id.to_string(),
                Wire::HandPassed(pb::HandPassed {
                    seat: u32::from(*seat),
                    player: player.clone(),
                }),
            )),
            Event::Chat { player, text, .. } => out.push(Outgoing::public(
                round,
                Wire::ChatMessage(pb::ChatMessage {
                    sender: player.clone(),
                    from_croupier: false,
                    text: text.clone(),
                }),
            )),
            Event::PlayerMuted {
                player,
                until,
                reason,
                ..
            } => out.push(Outgoing::private(
                player,
                round,
                Wire::Muted(pb::Muted {
                    until: until.map(banco_wire::convert::timestamp_of_ms),
                    reason: reason.clone(),
                }),
            )),
            // Money records show through their BalanceChanged; the rest is the table's.
            Event::BetsCleared { .. }
            | Event::BetsPending { .. }
            | Event::WalletOwed { .. }
            | Event::WalletAcked { .. }
            | Event::Replayed { .. }
            | Event::RoundFinished(_) => {}
        }
    }
}

/// The shoe's latest results as players see them, oldest first.
pub(crate) fn winners(board: &Scoreboard) -> Vec<i32> {
    convert::winners(board.last_results(LAST_RESULTS_SHOWN))
}

fn shoe_event(
    table: &str,
    shoe: u32,
    kind: pb::ShoeEventKind,
    after: &TableSnapshot,
    fill: impl FnOnce(&mut pb::ShoeEvent),
) -> Wire {
    let mut event = pb::ShoeEvent {
        kind: kind.into(),
        shoe_id: ShoeId::new(table, shoe).to_string(),
        cards_left: after.cards_left.map_or(0, u32::from),
        ..pb::ShoeEvent::default()
    };
    fill(&mut event);
    Wire::ShoeEvent(event)
}
