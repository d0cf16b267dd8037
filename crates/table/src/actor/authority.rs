//! The rules authority's word on a card or a settlement, asked before the table applies
//! a `DealCard` or a `ConfirmResult` (see [`super::rules`]).

use banco_rules::{Bet, Card};

use super::ActorError;
use super::rules::{CardCheck, RulesError};
use super::task::Actor;
use crate::command::Command;
use crate::phase::Phase;
use crate::refusal::Refusal;

impl Actor {
    /// The rules authority's word on a card or a settlement, before the table applies it.
    pub(super) async fn ask_authority(&self, command: &Command) -> Result<(), ActorError> {
        match command {
            Command::DealCard { card, .. } => self.check_card(*card).await,
            Command::ConfirmResult { .. } => self.check_settlement().await,
            _ => Ok(()),
        }
    }

    async fn check_card(&self, card: Card) -> Result<(), ActorError> {
        let dealing = matches!(
            self.table.phase(),
            Phase::BettingClosed { .. } | Phase::Dealing | Phase::Result
        );
        // Outside dealing the table refuses the card itself, with the better reason.
        let Some(shoe) = self.table.shoe().filter(|_| dealing) else {
            return Ok(());
        };
        let hand = shoe.hand_cards();
        let mut before_hand = shoe.composition().clone();
        for &dealt in hand {
            before_hand.put_back(dealt);
        }
        match self
            .rules
            .check_card(&before_hand, shoe.decks(), hand, card)
            .await
        {
            Ok(CardCheck::Accepted) => Ok(()),
            Ok(CardCheck::Refused { code, message }) => {
                Err(ActorError::Refused(Refusal::CardRefused {
                    card,
                    code,
                    message,
                }))
            }
            Err(RulesError::Unreachable(reason)) => Err(ActorError::ValidatorUnreachable(format!(
                "validator unreachable: {reason}; {card} was not dealt, send it again"
            ))),
            Err(RulesError::BadAnswer(reason)) => {
                tracing::error!(%card, %reason, "ALERT: the rules authority refused a card check");
                Err(ActorError::RulesDisagree(format!("about {card}: {reason}")))
            }
        }
    }

    async fn check_settlement(&self) -> Result<(), ActorError> {
        // No result showing, or the table refuses to settle: the table's refusal says why.
        let Some(Ok((cards, settled))) = self.table.pending_settlement() else {
            return Ok(());
        };
        let round = self
            .table
            .round_id()
            .map(ToString::to_string)
            .unwrap_or_default();
        let ours: Vec<(&String, &banco_rules::Settlement)> = settled
            .iter()
            .flat_map(|(player, list)| list.iter().map(move |s| (player, s)))
            .collect();
        if ours.is_empty() {
            return Ok(());
        }
        let bets: Vec<Bet> = ours
            .iter()
            .map(|(_, s)| Bet::new(s.kind, s.stake))
            .collect();
        let paytable = &self.table.config().policy.paytable;
        let theirs = match self.rules.settle(paytable, &cards, &bets).await {
            Ok(theirs) => theirs,
            Err(RulesError::Unreachable(reason)) => {
                return Err(ActorError::ValidatorUnreachable(format!(
                    "validator unreachable: {reason}; round {round} was not settled, confirm again"
                )));
            }
            Err(RulesError::BadAnswer(reason)) => {
                tracing::error!(%round, %reason, "ALERT: the rules authority refused the settlement");
                return Err(ActorError::RulesDisagree(format!(
                    "round {round}: {reason}"
                )));
            }
        };
        if theirs.len() != ours.len() {
            return Err(ActorError::RulesDisagree(format!(
                "round {round}: {} settlements for {} bets",
                theirs.len(),
                ours.len()
            )));
        }
        for ((player, mine), certified) in ours.iter().zip(&theirs) {
            if *mine != certified {
                let text = format!(
                    "round {round}: {player}'s {} bet of {}: the table would return {} \
                     (winnings {}), the rules authority {} (winnings {})",
                    mine.kind,
                    mine.stake,
                    mine.returned,
                    mine.winnings,
                    certified.returned,
                    certified.winnings
                );
                tracing::error!(%text, "ALERT: settlement differs from the certified rules");
                return Err(ActorError::RulesDisagree(text));
            }
        }
        Ok(())
    }
}
