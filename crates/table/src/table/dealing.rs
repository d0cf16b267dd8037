//! Dealing: the single player's own deal, each card of the coup and taking one back.

use banco_rules::Card;
use banco_rules::shoe::ShoeState;

use crate::command::CardSource;
use crate::event::Event;
use crate::phase::{Correction, DealtCard, Phase};
use crate::policy::Pacing;
use crate::refusal::Refusal;

use super::{Handled, Table, required};

impl Table {
    pub(super) fn player_deal(&mut self, player: &str, now: u64) -> Handled {
        let action = "deal";
        if self.config.pacing != Pacing::SinglePlayer {
            return Err(Refusal::WrongPacing {
                action,
                pacing: self.config.pacing,
            });
        }
        if !matches!(self.phase, Phase::BettingOpen { .. }) {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        if self.stakes(player).is_none() {
            return Err(Refusal::NoBets {
                player: player.to_owned(),
            });
        }
        Ok(self.close_betting(now))
    }

    pub(super) fn deal_card(&mut self, card: Card, source: CardSource, now: u64) -> Handled {
        let phase = self.phase;
        match phase {
            Phase::BettingOpen { .. } => return Err(Refusal::BettingStillOpen { card }),
            Phase::BettingClosed {
                draw_at: Some(draw_at),
                ..
            } if now < draw_at => {
                return Err(Refusal::BeforeDraw {
                    card,
                    draw_at,
                    now_ms: now,
                });
            }
            Phase::BettingClosed { .. } | Phase::Dealing | Phase::Result => {}
            Phase::NoShoe | Phase::Idle | Phase::Settled | Phase::Voided => {
                return Err(Refusal::NotNow {
                    action: "deal a card",
                    phase,
                });
            }
        }
        let action = "deal a card";
        let (Some(round), Some(run)) = (self.round.as_mut(), self.shoe.as_mut()) else {
            return Err(Refusal::NoShoe { action });
        };
        let to = round.coup.due().side();
        let mut coup = round.coup;
        let due_next = coup.deal(card)?;
        let Some(to) = to else {
            // `coup.deal` refuses a card when none is due, so a side was due.
            return Err(Refusal::NotNow { action, phase });
        };
        let before = run.shoe.state();
        // The last check, and the first change: the shoe refuses a card without changing.
        let after = run.shoe.deal(card)?;
        round.coup = coup;
        round.cards.push(DealtCard {
            card,
            to,
            source,
            at: now,
        });
        let mut events = vec![Event::CardDealt {
            round_id: round.id.clone(),
            card,
            to,
            due_next,
            source,
            at: now,
        }];
        if before == ShoeState::InPlay && after == ShoeState::CutCardOut {
            round.cut_card = true;
            events.push(Event::CutCardOut {
                round_id: round.id.clone(),
            });
        }
        match coup.result() {
            Some(result) => {
                self.phase = Phase::Result;
                events.push(Event::Result {
                    round_id: round.id.clone(),
                    result,
                });
            }
            None => self.phase = Phase::Dealing,
        }
        Ok(events)
    }

    pub(super) fn undo(&mut self, reason: &str, by: &str, now: u64) -> Handled {
        match self.phase {
            Phase::Dealing | Phase::Result => {}
            Phase::BettingClosed { .. } => return Err(Refusal::NothingToUndo),
            phase => {
                return Err(Refusal::NotNow {
                    action: "take a card back",
                    phase,
                });
            }
        }
        required("reason", reason)?;
        required("by", by)?;
        let action = "take a card back";
        let (Some(round), Some(run)) = (self.round.as_mut(), self.shoe.as_mut()) else {
            return Err(Refusal::NoShoe { action });
        };
        let mut coup = round.coup;
        let card = coup.undo().ok_or(Refusal::NothingToUndo)?;
        // The last check, and the first change.
        run.shoe.undo(card)?;
        round.cut_card = run.shoe.state() == ShoeState::CutCardOut;
        round.coup = coup;
        round.cards.pop();
        round.corrections.push(Correction {
            card,
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
        });
        self.phase = if round.coup.cards_dealt() == 0 {
            Phase::BettingClosed {
                closed_at: round.closed_at.unwrap_or(now),
                draw_at: round.draw_at,
            }
        } else {
            Phase::Dealing
        };
        Ok(vec![Event::CardUndone {
            round_id: round.id.clone(),
            card,
            reason: reason.to_owned(),
            by: by.to_owned(),
            at: now,
            due_next: round.coup.due(),
        }])
    }
}
