//! `banco player history`: the caller's bets, newest first (seed 004's list): round,
//! bets, result, payout, net.

use banco_wire::pb;

use super::amount::{money, signed_money};
use super::bets::kind_name;
use super::render::hand_result;
use crate::times::Times;

/// One line per round, with the date and time the first bet was placed (the history
/// spans days).
pub(crate) fn entry_line(e: &pb::MyBetEntry, times: &Times) -> String {
    let bets: Vec<String> = e
        .bets
        .iter()
        .map(|b| format!("{} {}", kind_name(b.kind), money(b.stake_minor)))
        .collect();
    let when = e
        .placed_at
        .as_ref()
        .map_or_else(String::new, |t| format!("{}  ", times.of(t)));
    let outcome = if e.voided {
        "void, stakes returned".to_owned()
    } else if e.settlements.is_empty() {
        "not settled yet".to_owned()
    } else {
        let payout: i64 = e
            .settlements
            .iter()
            .fold(0i64, |sum, s| sum.saturating_add(s.returned_minor));
        let result = e
            .result
            .as_ref()
            .map_or_else(|| "result ?".to_owned(), hand_result);
        format!("{result}  payout {}", money(payout))
    };
    format!(
        "{when}{}  {}  {outcome}  net {}",
        e.round_id,
        if bets.is_empty() {
            "no bets".to_owned()
        } else {
            bets.join(", ")
        },
        signed_money(e.net_minor)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries() {
        let settled = pb::MyBetEntry {
            round_id: "T01-S0001-H003".to_owned(),
            table_id: "T01".to_owned(),
            placed_at: Some(banco_wire::Timestamp {
                seconds: 3600 * 12 + 3 * 60 + 4,
                nanos: 0,
            }),
            bets: vec![
                pb::Bet {
                    kind: pb::BetKind::Banker.into(),
                    stake_minor: 2_000,
                },
                pb::Bet {
                    kind: pb::BetKind::Tie.into(),
                    stake_minor: 500,
                },
            ],
            settlements: super::super::banker_won_tie_lost(),
            result: Some(pb::HandResult {
                player_total: 5,
                banker_total: 8,
                winner: pb::Winner::Banker.into(),
                natural: true,
                ..pb::HandResult::default()
            }),
            voided: false,
            net_minor: 1_400,
        };
        assert_eq!(
            entry_line(&settled, &Times::utc()),
            "1970-01-01T12:03:04.000Z  T01-S0001-H003  banker 20.00, tie 5.00  Banker wins, Player 5 – Banker 8 (natural)  payout 39.00  net +14.00"
        );
        let voided = pb::MyBetEntry {
            round_id: "T01-S0001-H004".to_owned(),
            bets: vec![pb::Bet {
                kind: pb::BetKind::Player.into(),
                stake_minor: 500,
            }],
            voided: true,
            ..pb::MyBetEntry::default()
        };
        assert_eq!(
            entry_line(&voided, &Times::utc()),
            "T01-S0001-H004  player 5.00  void, stakes returned  net +0.00"
        );
        let open = pb::MyBetEntry {
            round_id: "T01-S0001-H005".to_owned(),
            net_minor: -500,
            ..voided
        };
        let open = pb::MyBetEntry {
            voided: false,
            ..open
        };
        assert!(entry_line(&open, &Times::utc()).contains("not settled yet  net -5.00"));
    }
}
