//! The table's snapshot as the wire's table state, and the shoe's last results.

use banco_records::ShoeId;
use banco_rules::{Coup, Winner};
use banco_wire::convert::{card_to_pb, shoe_state_to_pb, timestamp_of_ms};
use banco_wire::pb;

use super::cards::{dealt_card_to_pb, position_totals};
use crate::event::TableSnapshot;
use crate::phase::Phase;

/// The table without what the broadcaster adds: its roads, croupier, chat, players and
/// seats, and the two numbers only it knows, `seq` (the event the state is at) and
/// `server_time`, left 0 and unset.
impl From<&TableSnapshot> for pb::TableState {
    fn from(snapshot: &TableSnapshot) -> pb::TableState {
        let betting_closes_at = match snapshot.phase {
            Phase::BettingOpen {
                closes_at: Some(at),
                ..
            } => Some(timestamp_of_ms(at)),
            _ => None,
        };
        // The judged result, for RESULT and SETTLED: the rules judge the cards shown.
        let result = matches!(snapshot.phase, Phase::Result | Phase::Settled)
            .then(|| {
                let cards: Vec<_> = snapshot.cards.iter().map(|d| d.card).collect();
                Coup::replay(&cards).ok().and_then(|coup| coup.result())
            })
            .flatten()
            .map(pb::HandResult::from);
        let due = snapshot.due.map_or(pb::Due::Unspecified, pb::Due::from);
        pb::TableState {
            table_id: snapshot.table.clone(),
            croupier: String::new(),
            phase: pb::TablePhase::from(snapshot.phase).into(),
            shoe_state: shoe_state_to_pb(snapshot.shoe_state).into(),
            shoe_id: snapshot
                .shoe
                .map(|n| ShoeId::new(&snapshot.table, n).to_string())
                .unwrap_or_default(),
            betting_closes_at,
            server_time: None,
            round_id: snapshot
                .round_id
                .as_ref()
                .map(|r| r.to_string())
                .unwrap_or_default(),
            cards: snapshot.cards.iter().map(dealt_card_to_pb).collect(),
            due: due.into(),
            player_total: u32::from(snapshot.player_total),
            banker_total: u32::from(snapshot.banker_total),
            result,
            bet_totals: position_totals(&snapshot.bet_totals),
            bettors: snapshot.bettors,
            last_refusal: None,
            alerts: Vec::new(),
            cards_left: snapshot.cards_left.map_or(0, u32::from),
            seq: 0,
            chat: Vec::new(),
            players: 0,
            seats: Vec::new(),
            last_results: winners(snapshot.last_results()),
            roads: None,
            burn: snapshot.burn.map(|burn| pb::ShoeBurn {
                exposed_card: card_to_pb(burn.exposed),
                burned_face_down: u32::from(burn.face_down),
            }),
            round_totals: snapshot.totals.map(|totals| pb::RoundTotals {
                staked_minor: totals.staked,
                returned_minor: totals.returned,
                house_result_minor: totals.house_result(),
            }),
            currency: String::new(),
        }
    }
}

/// Results as `last_results` fields carry them, in the order given.
pub fn winners(results: &[Winner]) -> Vec<i32> {
    results
        .iter()
        .map(|&w| pb::Winner::from(w).into())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Pacing, TableConfig};
    use crate::table::Table;

    fn snapshot() -> TableSnapshot {
        let config = TableConfig::new("T01", Pacing::Live);
        Table::new(config).expect("a valid config").snapshot()
    }

    #[test]
    fn a_table_without_a_shoe_has_no_shoe_id_and_no_cards() {
        let snapshot = snapshot();
        assert_eq!(snapshot.phase, Phase::NoShoe);
        let state = pb::TableState::from(&snapshot);
        assert_eq!(state.table_id, "T01");
        assert_eq!(state.phase, i32::from(pb::TablePhase::Idle));
        assert_eq!(state.shoe_id, "");
        assert!(state.cards.is_empty());
        assert_eq!((state.seq, state.server_time), (0, None));
    }

    #[test]
    fn an_open_betting_tells_when_it_closes() {
        let snapshot = TableSnapshot {
            phase: Phase::BettingOpen {
                opened_at: 1_000,
                closes_at: Some(16_000),
            },
            shoe: Some(3),
            ..snapshot()
        };
        let state = pb::TableState::from(&snapshot);
        assert_eq!(state.betting_closes_at, Some(timestamp_of_ms(16_000)));
        assert_eq!(state.shoe_id, "T01-S0003");
    }

    #[test]
    fn winners_keep_their_order() {
        let wire = winners(&[Winner::Banker, Winner::Tie]);
        assert_eq!(
            wire,
            vec![i32::from(pb::Winner::Banker), i32::from(pb::Winner::Tie)]
        );
    }
}
