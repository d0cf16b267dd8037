//! Which round a bet is for. PlaceBets, ClearBets, Rebet and PassHand name the round open
//! for betting, so that a bet typed for one round never lands on the next. ListTables and
//! LastResults do not carry it; the first event of a subscription (the Snapshot) does.

use anyhow::{Context as _, bail};
use banco_wire::pb;
use banco_wire::pb::table_event::Event;

use super::connect::{Client, status_error};
use super::render::phase_name;
use crate::exit::Refused;

/// `--round`, or the round the table has open for betting now.
pub(crate) async fn round_for_bets(
    client: &mut Client,
    table: &str,
    given: Option<&str>,
) -> anyhow::Result<String> {
    if let Some(round) = given {
        return Ok(round.to_owned());
    }
    let snapshot = first_event(client, table).await?;
    open_round_of(&snapshot, table)
}

/// The round open for betting, from a subscription's first event.
pub(crate) fn open_round_of(event: &pb::TableEvent, table: &str) -> anyhow::Result<String> {
    let Some(Event::Snapshot(snapshot)) = &event.event else {
        bail!(
            "table {table}: the subscription did not start with a snapshot, so the open round is unknown; pass --round"
        );
    };
    if snapshot.phase() == pb::TablePhase::BettingOpen && event.round_id.is_empty() {
        bail!(
            "table {table}: betting is open but the table's snapshot does not name the round; pass --round"
        );
    }
    if snapshot.phase() != pb::TablePhase::BettingOpen {
        // The table's own state says no, as PlaceBets would: a refusal, not bad input.
        return Err(Refused(format!(
            "REFUSED: table {table}: betting is not open (phase: {}{})",
            phase_name(snapshot.phase),
            if event.round_id.is_empty() {
                String::new()
            } else {
                format!(", round {}", event.round_id)
            }
        ))
        .into());
    }
    Ok(event.round_id.clone())
}

async fn first_event(client: &mut Client, table: &str) -> anyhow::Result<pb::TableEvent> {
    let request = pb::SubscribeRequest {
        table_id: table.to_owned(),
        resume_from_seq: 0,
    };
    let mut stream = match client.subscribe(request).await {
        Ok(response) => response.into_inner(),
        Err(status) if status.code() == tonic::Code::Unimplemented => bail!(
            "this broadcaster does not serve Subscribe yet, so the round open for betting cannot be looked up: pass --round (e.g. --round {table}-S0001-H001; `banco croupier state` shows it)"
        ),
        Err(status) => {
            return Err(status_error(&status).context(format!("Subscribe to table {table}")));
        }
    };
    stream
        .message()
        .await
        .map_err(|s| status_error(&s))
        .with_context(|| format!("reading the first event of table {table}"))?
        .with_context(|| format!("table {table}: the subscription ended before its snapshot"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(phase: pb::TablePhase, round: &str) -> pb::TableEvent {
        pb::TableEvent {
            seq: 3,
            round_id: round.to_owned(),
            event: Some(Event::Snapshot(pb::Snapshot {
                phase: phase.into(),
                ..pb::Snapshot::default()
            })),
            ..pb::TableEvent::default()
        }
    }

    #[test]
    fn the_open_round_comes_from_the_snapshot() {
        let open = snapshot(pb::TablePhase::BettingOpen, "T01-S0001-H004");
        assert_eq!(
            open_round_of(&open, "T01").ok().as_deref(),
            Some("T01-S0001-H004")
        );
        let dealing = snapshot(pb::TablePhase::Dealing, "T01-S0001-H004");
        let err = open_round_of(&dealing, "T01")
            .expect_err("dealing")
            .to_string();
        assert!(err.contains("not open") && err.contains("dealing"), "{err}");
        let err = open_round_of(&dealing, "T01").expect_err("dealing");
        assert_eq!(crate::exit::status_of(&err), crate::exit::REFUSED, "{err}");
        let idle = snapshot(pb::TablePhase::Idle, "");
        assert!(open_round_of(&idle, "T01").is_err());
        let unnamed = snapshot(pb::TablePhase::BettingOpen, "");
        let err = open_round_of(&unnamed, "T01")
            .expect_err("unnamed")
            .to_string();
        assert!(err.contains("--round"), "{err}");
        let not_snapshot = pb::TableEvent::default();
        let err = open_round_of(&not_snapshot, "T01")
            .expect_err("no snapshot")
            .to_string();
        assert!(err.contains("--round"), "{err}");
    }
}
