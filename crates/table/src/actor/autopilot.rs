//! The croupier of automated and single-player tables: a shoe's order from a seed, and
//! the commands the actor plays by itself (burn, open betting, deal, confirm, a new shoe).
//!
//! The table itself stays free of randomness: the actor draws a seed from the OS when a
//! shoe is opened on a table without a croupier, journals it with the `OpenShoe` record
//! ([`banco_records::journal::Entry::shuffle_seed`]), and rebuilds the very same order
//! from it on a restart, so that an auditor can replay the shoe card by card. Every card
//! still goes through the table as an ordinary `DealCard { source: Shuffler }`.
//!
//! Where the next card comes from needs no extra state: every card taken from the order
//! is counted by the table's shoe (the exposed burn card, the ones burned face down, and
//! the cards dealt), so the position in the order is `total - cards_left`.

use banco_rules::Card;
use banco_rules::shoe::{Shoe, ShoeConfig, ShoeConfigError, ShoeState};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::ActorError;
use super::task::Actor;
use crate::command::{CardSource, Command};
use crate::event::{Event, RevealedShuffle};
use crate::fairness::ShuffleKey;
use crate::phase::Phase;
use crate::policy::Pacing;
use crate::refusal::Refusal;

/// Who the actor's own commands are by.
pub(super) const AUTO: &str = "auto";

/// What a shoe's order was drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seed {
    /// A seed chosen by the caller ([`super::TableHandle::submit_seeded`]: tests, a known
    /// shoe replayed), or journaled before shoes were committed to: `seed_from_u64`, and
    /// nothing published.
    Chosen(u64),
    /// A key the actor drew: committed to at the opening, revealed at the end (see
    /// [`crate::fairness`]).
    Committed(ShuffleKey),
}

/// The order of the shoe in play on a table the actor deals itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ShuffledOrder {
    pub(super) config: ShoeConfig,
    pub(super) seed: Seed,
    order: Vec<Card>,
}

impl ShuffledOrder {
    /// The order an auditor rebuilds from the journaled seed or the revealed key.
    pub(super) fn new(config: ShoeConfig, seed: Seed) -> Result<ShuffledOrder, ShoeConfigError> {
        let order = match seed {
            Seed::Chosen(seed) => Shoe::shuffled(config, &mut ChaCha20Rng::seed_from_u64(seed))?
                .order()
                .to_vec(),
            Seed::Committed(key) => key.order(config)?,
        };
        Ok(ShuffledOrder {
            config,
            seed,
            order,
        })
    }

    /// The next card out of `shoe` (which must be the shoe this order was made for):
    /// `None` once the order is exhausted.
    pub(super) fn next_card(&self, shoe: &Shoe) -> Option<Card> {
        let taken = shoe.total_cards().saturating_sub(shoe.cards_left());
        self.order.get(usize::from(taken)).copied()
    }

    /// The journal's fields for this seed: the chosen seed, or the key in hex.
    pub(super) fn journaled(&self) -> (Option<u64>, Option<String>) {
        match self.seed {
            Seed::Chosen(seed) => (Some(seed), None),
            Seed::Committed(key) => (None, Some(key.to_hex())),
        }
    }
}

/// Reveals the key of a committed shoe once it has ended (a `ShoeEnded` among `events`):
/// in that event, and in the signed record of the round that ended it. A shoe ended
/// between rounds (a croupier's EndShoe) has no such round: its key is `owed` to the next
/// round the table seals, whatever its shoe, so that every revealed key reaches the
/// archive. Done the same way live and on replay, so the sealed records are the same.
pub(super) fn reveal(
    events: &mut [Event],
    order: Option<&ShuffledOrder>,
    owed: &mut Option<RevealedShuffle>,
) {
    let ended = events.iter().find_map(|e| match e {
        Event::ShoeEnded { shoe, .. } => Some(*shoe),
        _ => None,
    });
    if let (Some(ended), Some(Seed::Committed(key))) = (ended, order.map(|o| o.seed)) {
        for event in events.iter_mut() {
            if let Event::ShoeEnded { shuffle_key, .. } = event {
                *shuffle_key = Some(key.to_hex());
            }
        }
        let sealed_here = events
            .iter()
            .any(|e| matches!(e, Event::RoundFinished(round) if round.shoe == ended));
        if !sealed_here {
            *owed = Some(RevealedShuffle {
                shoe: ended,
                key: key.to_hex(),
            });
        }
        for event in events.iter_mut() {
            if let Event::RoundFinished(round) = event
                && round.shoe == ended
            {
                round.revealed = Some(RevealedShuffle {
                    shoe: ended,
                    key: key.to_hex(),
                });
            }
        }
    }
    if owed.is_some()
        && let Some(Event::RoundFinished(round)) = events
            .iter_mut()
            .find(|e| matches!(e, Event::RoundFinished(round) if round.revealed.is_none()))
    {
        round.revealed = owed.take();
    }
}

/// What the journal keeps of a shoe's shuffle: the chosen seed, or the drawn key in hex.
pub(super) type Journaled = (Option<u64>, Option<String>);

impl Actor {
    /// The order of the shoe an `OpenShoe` opens, on a table the actor deals itself: from
    /// `seed`, or a seed drawn from the OS. `None` for any other command or a live table;
    /// a config the shoe refuses is left to the table's refusal.
    /// A drawn key is committed to in the command itself, so the table records the
    /// commitment with the shoe and a replay of the journal opens it the same way.
    pub(super) fn shuffle_for(
        &self,
        command: &mut Command,
        seed: Option<u64>,
    ) -> Result<Option<ShuffledOrder>, ActorError> {
        let Command::OpenShoe {
            config, commitment, ..
        } = command
        else {
            return Ok(None);
        };
        if self.table.config().pacing == Pacing::Live {
            return Ok(None);
        }
        let seed = match seed {
            Some(seed) => Seed::Chosen(seed),
            None => {
                let key = ShuffleKey::from_os().map_err(ActorError::Startup)?;
                let shoe = self.table.next_shoe_number();
                *commitment = Some(key.commitment(&self.table.config().table_id, shoe));
                Seed::Committed(key)
            }
        };
        Ok(ShuffledOrder::new(*config, seed).ok())
    }

    /// Puts an accepted `OpenShoe`'s order in play; its seed or key, for the journal.
    pub(super) fn take_order(&mut self, order: Option<ShuffledOrder>) -> Journaled {
        let Some(order) = order else {
            return (None, None);
        };
        let journaled = order.journaled();
        self.order = Some(order);
        journaled
    }

    /// On a table without a croupier: plays the croupier's part as far as it is due now
    /// (see the module docs). Stops at the first command that fails, marking the actor
    /// stalled so that it tries again at its next wake-up.
    pub(super) async fn drive(&mut self) {
        if self.table.config().pacing == Pacing::Live {
            return;
        }
        self.stalled = false;
        while !self.failed.is_set() {
            let Some(command) = self.next_auto_command() else {
                return;
            };
            if let Err(error) = self.auto(command).await {
                tracing::error!(%error, "the table cannot go on by itself; retrying");
                self.stalled = true;
                return;
            }
        }
    }

    /// The croupier's next step, if one is due now.
    fn next_auto_command(&self) -> Option<Command> {
        let order = self.order.as_ref()?;
        let by = AUTO.to_owned();
        let now_ms = self.clock.now_ms();
        let phase = self.table.phase();
        let Some(shoe) = self.table.shoe() else {
            // The shoe ran out at the end of a round: a new one. (A croupier or operator who
            // ended a shoe leaves the table without one until they open the next.)
            return matches!(phase, Phase::Settled | Phase::Voided).then(|| Command::OpenShoe {
                config: order.config,
                by,
                now_ms,
                commitment: None,
            });
        };
        match phase {
            Phase::Idle | Phase::Settled | Phase::Voided => match shoe.state() {
                ShoeState::AwaitingBurn => Some(Command::Burn {
                    exposed: order.next_card(shoe)?,
                    by,
                    now_ms,
                }),
                ShoeState::Ended => None,
                ShoeState::InPlay | ShoeState::CutCardOut | ShoeState::LastHand => {
                    Some(Command::OpenBetting { by, now_ms })
                }
            },
            Phase::BettingClosed { draw_at, .. } if draw_at.is_none_or(|at| now_ms >= at) => {
                self.deal_next(order, shoe, now_ms)
            }
            Phase::Dealing => self.deal_next(order, shoe, now_ms),
            Phase::Result => Some(Command::ConfirmResult {
                round_id: self.table.round_id()?.clone(),
                by,
                now_ms,
            }),
            Phase::NoShoe | Phase::BettingOpen { .. } | Phase::BettingClosed { .. } => None,
        }
    }

    fn deal_next(&self, order: &ShuffledOrder, shoe: &Shoe, now_ms: u64) -> Option<Command> {
        self.table.due()?;
        Some(Command::DealCard {
            card: order.next_card(shoe)?,
            source: CardSource::Shuffler,
            now_ms,
        })
    }

    /// Applies and journals one of the actor's own commands, checked like any other.
    async fn auto(&mut self, mut command: Command) -> Result<(), ActorError> {
        command.stamp(self.clock.now_ms());
        self.ask_authority(&command).await?;
        let order = self.shuffle_for(&mut command, None)?;
        let events = self.table.apply(&command).map_err(ActorError::Refused);
        self.metrics.command(events.is_ok());
        let events = events?;
        if events.is_empty() {
            return Err(ActorError::Refused(Refusal::NotNow {
                action: "go on by itself",
                phase: self.table.phase(),
            }));
        }
        self.idle_deadline = None;
        let shuffle_seed = self.take_order(order);
        self.journal(None, command, events, Vec::new(), shuffle_seed)
            .await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;
    use crate::RoundId;
    use crate::event::FinishedRound;

    fn finished(shoe: u32, hand: u32) -> Event {
        Event::RoundFinished(Box::new(FinishedRound {
            round_id: RoundId::new("T01", shoe, hand),
            table: "T01".to_owned(),
            shoe,
            hand,
            betting_opened_at: 1,
            betting_closed_at: None,
            cards: Vec::new(),
            corrections: Vec::new(),
            void: None,
            result: None,
            bets: BTreeMap::new(),
            settlements: BTreeMap::new(),
            entries: Vec::new(),
            finished_at: 2,
            opened_by: None,
            confirmed_by: None,
            cut_card: false,
            shoe_opening: None,
            revealed: None,
            placements: BTreeMap::new(),
        }))
    }

    fn ended(shoe: u32) -> Event {
        Event::ShoeEnded {
            shoe,
            by: Some("pit boss".to_owned()),
            reason: Some("cards marked".to_owned()),
            at: 3,
            shuffle_key: None,
        }
    }

    fn revealed(event: &Event) -> Option<&RevealedShuffle> {
        match event {
            Event::RoundFinished(round) => round.revealed.as_ref(),
            _ => None,
        }
    }

    /// Only reachable when a shoe is ended while no round is open, which an automated
    /// table leaves no time for today; the key must still reach a signed record.
    #[test]
    fn a_shoe_ended_between_rounds_is_revealed_by_the_next_round_sealed() {
        let key = ShuffleKey::new([9; 32]);
        let order = ShuffledOrder::new(ShoeConfig::default(), Seed::Committed(key)).unwrap();
        let mut owed = None;

        let mut end = vec![ended(1)];
        reveal(&mut end, Some(&order), &mut owed);
        let Event::ShoeEnded { shuffle_key, .. } = &end[0] else {
            unreachable!()
        };
        assert_eq!(shuffle_key.as_deref(), Some(key.to_hex().as_str()));
        assert_eq!(owed.as_ref().map(|r| r.shoe), Some(1));

        // Records without a round keep it owed; the next round sealed carries it.
        let mut nothing = Vec::new();
        reveal(&mut nothing, Some(&order), &mut owed);
        assert!(owed.is_some());
        let mut next = vec![finished(2, 1)];
        reveal(&mut next, None, &mut owed);
        let carried = revealed(&next[0]).unwrap();
        assert_eq!(
            (carried.shoe, carried.key.as_str()),
            (1, key.to_hex().as_str())
        );
        assert!(owed.is_none());

        // A shoe ended by its last round is revealed there, and nothing is owed.
        let mut last = vec![finished(1, 9), ended(1)];
        reveal(&mut last, Some(&order), &mut owed);
        assert_eq!(revealed(&last[0]).map(|r| r.shoe), Some(1));
        assert!(owed.is_none());

        // A shoe the caller seeded (not committed to) reveals nothing.
        let chosen = ShuffledOrder::new(ShoeConfig::default(), Seed::Chosen(7)).unwrap();
        let mut last = vec![finished(1, 9), ended(1)];
        reveal(&mut last, Some(&chosen), &mut owed);
        assert!(revealed(&last[0]).is_none() && owed.is_none());
    }
}
