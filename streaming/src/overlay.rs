//! The text burnt into the picture: table, round, phase and countdown, the cards so far and
//! the last result, from the table's state as WatchTable streams it. Totals read Player
//! first, as on every screen of the table (`Player 0 – Banker 7`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_rules::{Score, Winner};
use banco_wire::pb;

/// What the overlay shows, kept across states (the last result outlives its round).
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    state: Option<pb::TableState>,
    /// The server's clock minus ours when the state arrived, in ms: the countdown is
    /// computed on the server's time so that a skewed studio clock does not shift it.
    skew_ms: i64,
    last_result: Option<(String, pb::HandResult)>,
}

impl Overlay {
    /// Takes a state as received at `now`.
    pub fn update(&mut self, state: pb::TableState, now: SystemTime) {
        if let Some(server) = state.server_time.as_ref() {
            self.skew_ms = timestamp_ms(server) - unix_ms(now);
        }
        if let Some(result) = &state.result {
            self.last_result = Some((state.round_id.clone(), result.clone()));
        }
        self.state = Some(state);
    }

    /// The overlay's text at `now` (lines separated by `\n`).
    pub fn text(&self, table_id: &str, now: SystemTime) -> String {
        let Some(state) = &self.state else {
            return format!("{table_id}  waiting for the table…");
        };
        let round = if state.round_id.is_empty() {
            "no round".to_owned()
        } else {
            format!("round {}", state.round_id)
        };
        let mut phase = phase_name(state.phase()).to_owned();
        if state.phase() == pb::TablePhase::BettingOpen
            && let Some(closes) = state.betting_closes_at.as_ref()
        {
            let left_ms = timestamp_ms(closes) - (unix_ms(now) + self.skew_ms);
            let left = Duration::from_millis(u64::try_from(left_ms.max(0)).unwrap_or(0));
            // Rounded up: "1 s" until the very end, as a countdown clock shows it.
            phase.push_str(&format!("  {} s", left.as_millis().div_ceil(1000)));
        }
        let mut lines = vec![format!("{}  {round}  {phase}", state.table_id)];
        if !state.cards.is_empty() {
            let hand = |side: pb::Side| -> String {
                let cards: Vec<&str> = state
                    .cards
                    .iter()
                    .filter(|c| c.side() == side)
                    .map(|c| c.card.as_str())
                    .collect();
                if cards.is_empty() {
                    "-".to_owned()
                } else {
                    cards.join(" ")
                }
            };
            lines.push(format!(
                "Player {} ({})   Banker {} ({})",
                hand(pb::Side::Player),
                state.player_total,
                hand(pb::Side::Banker),
                state.banker_total
            ));
        }
        if let Some((round_id, result)) = &self.last_result {
            let total = |t: u32| u8::try_from(t).unwrap_or(u8::MAX);
            let score = Score {
                player: total(result.player_total),
                banker: total(result.banker_total),
            };
            // The winner named from the score shown, so that the two cannot disagree.
            let winner = match score.winner() {
                Winner::Player => "Player wins",
                Winner::Banker => "Banker wins",
                Winner::Tie => "Tie",
            };
            lines.push(format!("last {round_id}: {winner}, {score}"));
        }
        lines.join("\n")
    }
}

fn phase_name(phase: pb::TablePhase) -> &'static str {
    match phase {
        pb::TablePhase::Unspecified => "—",
        pb::TablePhase::Idle => "IDLE",
        pb::TablePhase::BettingOpen => "PLACE YOUR BETS",
        pb::TablePhase::BettingClosed => "NO MORE BETS",
        pb::TablePhase::Dealing => "DEALING",
        pb::TablePhase::Result => "RESULT",
        pb::TablePhase::Settled => "SETTLED",
        pb::TablePhase::Voided => "VOID",
    }
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn timestamp_ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds.saturating_mul(1000) + i64::from(t.nanos / 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }

    fn ts(ms: i64) -> prost_types::Timestamp {
        prost_types::Timestamp {
            seconds: ms / 1000,
            nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
        }
    }

    fn card(card: &str, side: pb::Side) -> pb::DealtCard {
        pb::DealtCard {
            card: card.to_owned(),
            side: side.into(),
            ..Default::default()
        }
    }

    #[test]
    fn before_any_state_it_says_it_waits() {
        assert_eq!(
            Overlay::default().text("T01", at(0)),
            "T01  waiting for the table…"
        );
    }

    #[test]
    fn the_countdown_runs_on_the_servers_clock() {
        let mut overlay = Overlay::default();
        // The server is 2 s ahead of us; betting closes 10 s after its clock.
        overlay.update(
            pb::TableState {
                table_id: "T01".to_owned(),
                round_id: "T01-S0001-H001".to_owned(),
                phase: pb::TablePhase::BettingOpen.into(),
                server_time: Some(ts(1_000_000 + 2_000)),
                betting_closes_at: Some(ts(1_000_000 + 12_000)),
                ..Default::default()
            },
            at(1_000_000),
        );
        assert_eq!(
            overlay.text("T01", at(1_000_000 + 500)),
            "T01  round T01-S0001-H001  PLACE YOUR BETS  10 s"
        );
        assert_eq!(
            overlay.text("T01", at(1_000_000 + 30_000)),
            "T01  round T01-S0001-H001  PLACE YOUR BETS  0 s"
        );
    }

    #[test]
    fn cards_and_the_last_result_are_shown_and_the_result_outlives_its_round() {
        let mut overlay = Overlay::default();
        overlay.update(
            pb::TableState {
                table_id: "T01".to_owned(),
                round_id: "T01-S0001-H001".to_owned(),
                phase: pb::TablePhase::Result.into(),
                cards: vec![
                    card("9S", pb::Side::Player),
                    card("KH", pb::Side::Banker),
                    card("AD", pb::Side::Player),
                    card("7C", pb::Side::Banker),
                ],
                player_total: 0,
                banker_total: 7,
                result: Some(pb::HandResult {
                    player_total: 0,
                    banker_total: 7,
                    winner: pb::Winner::Banker.into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            at(0),
        );
        assert_eq!(
            overlay.text("T01", at(0)),
            "T01  round T01-S0001-H001  RESULT\n\
             Player 9S AD (0)   Banker KH 7C (7)\n\
             last T01-S0001-H001: Banker wins, Player 0 – Banker 7"
        );
        overlay.update(
            pb::TableState {
                table_id: "T01".to_owned(),
                round_id: "T01-S0001-H002".to_owned(),
                phase: pb::TablePhase::BettingClosed.into(),
                ..Default::default()
            },
            at(0),
        );
        assert_eq!(
            overlay.text("T01", at(0)),
            "T01  round T01-S0001-H002  NO MORE BETS\n\
             last T01-S0001-H001: Banker wins, Player 0 – Banker 7"
        );
    }

    #[test]
    fn the_last_result_names_the_winner_with_the_score_player_first() {
        for (player_total, banker_total, shown) in [
            (
                8,
                4,
                "last T01-S0001-H007: Player wins, Player 8 – Banker 4",
            ),
            (
                7,
                9,
                "last T01-S0001-H007: Banker wins, Player 7 – Banker 9",
            ),
            (5, 5, "last T01-S0001-H007: Tie, Player 5 – Banker 5"),
        ] {
            let mut overlay = Overlay::default();
            overlay.update(
                pb::TableState {
                    table_id: "T01".to_owned(),
                    round_id: "T01-S0001-H007".to_owned(),
                    phase: pb::TablePhase::Settled.into(),
                    result: Some(pb::HandResult {
                        player_total,
                        banker_total,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                at(0),
            );
            let text = overlay.text("T01", at(0));
            assert_eq!(text.lines().last(), Some(shown), "{text}");
        }
    }
}
