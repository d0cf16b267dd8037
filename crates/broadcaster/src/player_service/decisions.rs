//! What the player is told of a bet request: a decision per requested bet, taken from the
//! table's events or its refusal, and the refusals told on the player's event stream too.

use banco_rules::BetKind;
use banco_table::actor::ActorError;
use banco_table::book::{PositionRefusal, Raise, Stakes};
use banco_table::convert;
use banco_table::{BetRefusal, Event, Refusal};
use banco_wire::pb;
use tonic::Status;

use crate::hosted::HostedTable;

/// The events of an answer; for a retried request, those of the original answer.
pub(super) fn original(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .flat_map(|e| match e {
            Event::Replayed { original, .. } => original,
            other => vec![other],
        })
        .collect()
}

/// What the table took of a bet request.
pub(super) struct Taken<'a> {
    /// The amount added to each position, after raises.
    pub(super) added: &'a [(BetKind, i64)],
    pub(super) raised: &'a [Raise],
    /// The player's stakes in the round after the request.
    pub(super) stakes: &'a Stakes,
}

/// The wallet's refusal of a bet request the table had taken to it.
pub(super) fn wallet_refused(events: &[Event]) -> Option<&BetRefusal> {
    events.iter().find_map(|e| match e {
        Event::BetsRefused { why, .. } => Some(why),
        _ => None,
    })
}

pub(super) fn accepted(events: &[Event]) -> Option<Taken<'_>> {
    events.iter().find_map(|e| match e {
        Event::BetsAccepted {
            bets,
            raised,
            stakes,
            ..
        } => Some(Taken {
            added: bets,
            raised,
            stakes,
        }),
        _ => None,
    })
}

pub(super) fn accepted_bet(
    kind: BetKind,
    requested: i64,
    added: i64,
    stakes: &Stakes,
) -> pb::BetDecision {
    pb::BetDecision {
        decision: Some(pb::bet_decision::Decision::Accepted(pb::AcceptedBet {
            kind: pb::BetKind::from(kind).into(),
            requested_minor: requested,
            accepted_minor: added,
            position_total_minor: stakes.get(&kind).copied().unwrap_or(0),
        })),
    }
}

pub(super) fn refused_bet(refusal: pb::Refusal) -> pb::BetDecision {
    pb::BetDecision {
        decision: Some(pb::bet_decision::Decision::Refusal(refusal)),
    }
}

/// The decision on each requested bet of a refused request. The table takes a request
/// all or nothing: a bet with its own reason gets it; the others say why they were not
/// placed either.
pub(super) fn refused_decisions(
    requested: &[(BetKind, i64)],
    refusal: &Refusal,
) -> Vec<pb::BetDecision> {
    let whole = pb::Refusal::from(refusal);
    let reasons: &[PositionRefusal] = match refusal {
        Refusal::Bets { reasons, .. } => &reasons.0,
        _ => &[],
    };
    requested
        .iter()
        .enumerate()
        .map(|(i, &(kind, _))| {
            let own = reasons.iter().find(|r| convert::position_kind(r) == kind);
            refused_bet(match (own, reasons.is_empty()) {
                (Some(reason), _) => pb::Refusal {
                    code: pb::RefusalCode::from(reason).into(),
                    message: reason.to_string(),
                    field: format!("bets[{i}].stake_minor"),
                },
                (None, false) => pb::Refusal {
                    code: pb::RefusalCode::NotAllowed.into(),
                    message: format!(
                        "{kind} not placed: a request is taken all or nothing, and {whole_message}",
                        whole_message = whole.message
                    ),
                    field: format!("bets[{i}]"),
                },
                (None, true) => whole.clone(),
            })
        })
        .collect()
}

/// The table's refusal of a command, as the reply carries it; other failures are errors.
pub(super) fn refusal_of(
    table: &HostedTable,
    result: Result<banco_table::Applied, ActorError>,
) -> Result<Option<pb::Refusal>, Status> {
    match result {
        Ok(_) => Ok(None),
        Err(ActorError::Refused(refusal)) => Ok(Some(pb::Refusal::from(&refusal))),
        Err(e) => Err(table.actor_error(e).into()),
    }
}

/// A refused bet request also reaches the player's event stream (BetRefused), one event
/// per requested bet, so that every screen of the player shows it.
pub(super) fn tell_refused(
    table: &HostedTable,
    player: &str,
    round_id: &str,
    key: &str,
    requested: &[(BetKind, i64)],
    decisions: &[pb::BetDecision],
) {
    let Ok(hub) = table.hub() else {
        return;
    };
    for (&(kind, stake), decision) in requested.iter().zip(decisions) {
        if let Some(pb::bet_decision::Decision::Refusal(refusal)) = &decision.decision {
            hub.tell(
                player,
                round_id,
                pb::table_event::Event::BetRefused(pb::BetRefused {
                    idempotency_key: key.to_owned(),
                    bet: Some(pb::Bet {
                        kind: pb::BetKind::from(kind).into(),
                        stake_minor: stake,
                    }),
                    refusal: Some(refusal.clone()),
                }),
            );
        }
    }
}
