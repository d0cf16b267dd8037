//! Seats: taking and leaving them, passing a hand, the seat a bet needs, and the early
//! close of betting once every seated player has decided.
//!
//! docs/src/rules/pacing.md: tables may have 5 seats or none (everyone bets behind); a seated
//! player may pass a hand within 15 s of their turn (here: of betting opening).

use crate::event::Event;
use crate::phase::Phase;
use crate::policy::Pacing;
use crate::refusal::Refusal;
use crate::round_id::RoundId;

use super::{Handled, Round, Table, required};

impl Table {
    /// Who sits at each seat: index 0 is seat 1. Empty on a table without seats.
    pub fn seats(&self) -> Vec<Option<String>> {
        self.seats.clone()
    }

    /// The player's seat (1-based), if seated.
    pub fn seat_of(&self, player: &str) -> Option<u8> {
        self.seats
            .iter()
            .position(|p| p.as_deref() == Some(player))
            .and_then(|i| u8::try_from(i + 1).ok())
    }

    fn seat_count(&self) -> u8 {
        self.config.policy.seats
    }

    /// The player's seat, or why the command `action` needs one.
    fn seated(&self, player: &str, action: &'static str) -> Result<u8, Refusal> {
        if self.seats.is_empty() {
            return Err(Refusal::NoSeats { action });
        }
        self.seat_of(player).ok_or_else(|| Refusal::NotSeated {
            player: player.to_owned(),
        })
    }

    pub(super) fn take_seat(&mut self, player: &str, asked: u8) -> Handled {
        required("player", player)?;
        let seats = self.seat_count();
        if seats == 0 {
            return Err(Refusal::NoSeats {
                action: "take a seat",
            });
        }
        if let Some(seat) = self.seat_of(player) {
            return Err(Refusal::AlreadySeated {
                player: player.to_owned(),
                seat,
            });
        }
        let index = if asked == 0 {
            self.seats
                .iter()
                .position(Option::is_none)
                .ok_or(Refusal::TableFull { seats })?
        } else {
            let index = usize::from(asked - 1);
            match self.seats.get(index) {
                None => return Err(Refusal::NoSuchSeat { seat: asked, seats }),
                Some(Some(_)) => return Err(Refusal::SeatTaken { seat: asked }),
                Some(None) => index,
            }
        };
        let seat = u8::try_from(index + 1).map_err(|_| Refusal::TableFull { seats })?;
        self.seats[index] = Some(player.to_owned());
        Ok(vec![Event::SeatTaken {
            player: player.to_owned(),
            seat,
        }])
    }

    pub(super) fn leave_seat(&mut self, player: &str, now: u64) -> Handled {
        required("player", player)?;
        let seat = self.seated(player, "leave a seat")?;
        let stakes = self
            .round
            .as_ref()
            .filter(|_| self.phase.round_in_progress());
        if let Some(round) = stakes.filter(|r| r.book.of(player).is_some()) {
            return Err(Refusal::LeavingWithStakes {
                player: player.to_owned(),
                seat,
                round_id: round.id.clone(),
            });
        }
        self.seats[usize::from(seat - 1)] = None;
        let mut events = vec![Event::SeatLeft {
            player: player.to_owned(),
            seat,
        }];
        // The one who had not decided yet may have left.
        events.extend(self.close_if_all_seats_decided(now));
        Ok(events)
    }

    pub(super) fn pass_hand(&mut self, player: &str, asked: &RoundId, now: u64) -> Handled {
        required("player", player)?;
        let seat = self.seated(player, "pass a hand")?;
        let Phase::BettingOpen { opened_at, .. } = self.phase else {
            return Err(Refusal::PassNotNow {
                player: player.to_owned(),
                phase: self.phase,
            });
        };
        let round = self.open_round(now)?;
        if *asked != round.id {
            return Err(Refusal::WrongRound {
                action: "pass the hand",
                asked: asked.clone(),
                current: Some(round.id.clone()),
            });
        }
        let window_ms = self.config.policy.pass_window_ms;
        if now >= opened_at.saturating_add(window_ms) {
            return Err(Refusal::PassTooLate {
                player: player.to_owned(),
                round_id: round.id.clone(),
                window_ms,
                opened_at,
                now_ms: now,
            });
        }
        if round.book.of(player).is_some() {
            return Err(Refusal::PassAfterBet {
                player: player.to_owned(),
                round_id: round.id.clone(),
            });
        }
        if round.passed.contains(player) {
            return Err(Refusal::AlreadyPassed {
                player: player.to_owned(),
                round_id: round.id.clone(),
            });
        }
        let round_id = round.id.clone();
        if let Some(round) = self.round.as_mut() {
            round.passed.insert(player.to_owned());
        }
        let mut events = vec![Event::HandPassed {
            player: player.to_owned(),
            round_id,
            seat,
        }];
        events.extend(self.close_if_all_seats_decided(now));
        Ok(events)
    }

    /// On a table with seats: only a seated player who has not passed the round may bet.
    pub(super) fn check_may_bet(&self, player: &str, round: &Round) -> Result<(), Refusal> {
        if self.seats.is_empty() {
            return Ok(());
        }
        if self.seat_of(player).is_none() {
            return Err(Refusal::SeatNeeded {
                player: player.to_owned(),
                seats: self.seat_count(),
            });
        }
        if round.passed.contains(player) {
            return Err(Refusal::BetAfterPass {
                player: player.to_owned(),
                round_id: round.id.clone(),
            });
        }
        Ok(())
    }

    /// On an automated or single-player table with seats, closes betting at `now` (as a
    /// `CloseBetting` would) once at least one seat is taken, every seated player has bet
    /// or passed, and someone bet. Otherwise nothing.
    pub(super) fn close_if_all_seats_decided(&mut self, now: u64) -> Vec<Event> {
        if self.config.pacing == Pacing::Live || !matches!(self.phase, Phase::BettingOpen { .. }) {
            return Vec::new();
        }
        let Some(round) = self.round.as_ref() else {
            return Vec::new();
        };
        let mut seated = self.seats.iter().flatten().peekable();
        let decided = seated.peek().is_some()
            && round.book.bettors() > 0
            && seated.all(|p| round.book.of(p).is_some() || round.passed.contains(p));
        if decided {
            self.close_betting(now)
        } else {
            Vec::new()
        }
    }
}
