//! The shoe: opening it, the burn, ending it, and the end of each hand it deals.

use banco_rules::shoe::{Shoe, ShoeConfig, ShoeState};
use banco_rules::{Card, Scoreboard};

use crate::event::{BurnRecord, Event, ShoeOpening};
use crate::phase::Phase;
use crate::refusal::Refusal;

use super::{Handled, ShoeRun, Table, required};

impl Table {
    pub(super) fn open_shoe(
        &mut self,
        config: ShoeConfig,
        commitment: Option<String>,
        by: &str,
        now: u64,
    ) -> Handled {
        required("by", by)?;
        if self.phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action: "open a shoe",
                phase: self.phase,
            });
        }
        if let Some(run) = &self.shoe {
            return Err(Refusal::ShoeInPlay { shoe: run.number });
        }
        let shoe = Shoe::new(config)?;
        self.shoes_opened += 1;
        let number = self.shoes_opened;
        self.shoe = Some(ShoeRun {
            number,
            shoe,
            hands: 0,
            opening: ShoeOpening {
                config,
                paytable: self.config.policy.paytable.clone(),
                opened_by: by.to_owned(),
                opened_at: now,
                burn: None,
                commitment: commitment.clone(),
            },
        });
        self.phase = Phase::Idle;
        self.scoreboard = Scoreboard::new();
        // The last round of the shoe before is over and in its FinishedRound: nothing
        // (a croupier's command, a late bet, the console) is to find it now.
        self.round = None;
        Ok(vec![Event::ShoeOpened {
            shoe: number,
            config,
            by: by.to_owned(),
            at: now,
            commitment,
        }])
    }

    pub(super) fn burn(&mut self, exposed: Card, by: &str, now: u64) -> Handled {
        required("by", by)?;
        let phase = self.phase;
        let run = self
            .shoe
            .as_mut()
            .ok_or(Refusal::NoShoe { action: "burn" })?;
        if phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action: "burn",
                phase,
            });
        }
        let burn = run.shoe.burn(exposed)?;
        run.opening.burn = Some(BurnRecord {
            exposed: burn.exposed,
            face_down: burn.face_down,
            by: by.to_owned(),
            at: now,
        });
        Ok(vec![Event::Burned {
            shoe: run.number,
            burn,
            by: by.to_owned(),
            at: now,
        }])
    }

    pub(super) fn end_shoe(&mut self, reason: &str, by: &str, now: u64) -> Handled {
        required("reason", reason)?;
        required("by", by)?;
        let action = "end the shoe";
        if self.phase.round_in_progress() {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        let run = self.shoe.take().ok_or(Refusal::NoShoe { action })?;
        self.phase = Phase::NoShoe;
        Ok(vec![Event::ShoeEnded {
            shoe: run.number,
            by: Some(by.to_owned()),
            reason: Some(reason.to_owned()),
            at: now,
            shuffle_key: None,
        }])
    }

    /// After a round, the shoe's hand is over if any card of it was dealt: the shoe as it
    /// will be then, worked out on a copy so that the round's end can still be refused.
    /// `None`: no hand to finish.
    pub(super) fn finished_hand(&self) -> Result<Option<Shoe>, Refusal> {
        let Some(run) = self
            .shoe
            .as_ref()
            .filter(|r| !r.shoe.hand_cards().is_empty())
        else {
            return Ok(None);
        };
        let mut shoe = run.shoe.clone();
        shoe.hand_finished()?;
        Ok(Some(shoe))
    }

    /// Puts the shoe from [`Table::finished_hand`] in play (or out, once it has ended).
    pub(super) fn finish_hand(&mut self, finished: Option<Shoe>, now: u64) -> Vec<Event> {
        let (Some(shoe), Some(run)) = (finished, self.shoe.as_mut()) else {
            return Vec::new();
        };
        let number = run.number;
        match shoe.state() {
            ShoeState::LastHand => {
                run.shoe = shoe;
                vec![Event::LastHand { shoe: number }]
            }
            ShoeState::Ended => {
                self.shoe = None;
                vec![Event::ShoeEnded {
                    shoe: number,
                    by: None,
                    reason: None,
                    at: now,
                    shuffle_key: None,
                }]
            }
            _ => {
                run.shoe = shoe;
                Vec::new()
            }
        }
    }
}
