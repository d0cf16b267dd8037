//! Phases, pacings, card sources and balance reasons.

use banco_wire::{ConversionError, pb};

use crate::command::CardSource;
use crate::event::BalanceReason;
use crate::phase::Phase;
use crate::policy::Pacing;

impl From<Phase> for pb::TablePhase {
    fn from(phase: Phase) -> pb::TablePhase {
        match phase {
            // Without a shoe the round is idle too; `shoe_state` says NO_SHOE.
            Phase::NoShoe | Phase::Idle => pb::TablePhase::Idle,
            Phase::BettingOpen { .. } => pb::TablePhase::BettingOpen,
            Phase::BettingClosed { .. } => pb::TablePhase::BettingClosed,
            Phase::Dealing => pb::TablePhase::Dealing,
            Phase::Result => pb::TablePhase::Result,
            Phase::Settled => pb::TablePhase::Settled,
            Phase::Voided => pb::TablePhase::Voided,
        }
    }
}

impl From<Pacing> for pb::Pacing {
    fn from(pacing: Pacing) -> pb::Pacing {
        match pacing {
            Pacing::Live => pb::Pacing::Live,
            Pacing::AutomatedMultiplayer => pb::Pacing::AutomatedMultiplayer,
            Pacing::SinglePlayer => pb::Pacing::SinglePlayer,
        }
    }
}

/// The wire has no value for the automated tables' shuffler: its cards go out unspecified.
/// A function: the card source is a record type, of neither this crate nor the wire's.
pub fn card_source_to_pb(source: CardSource) -> pb::CardSource {
    match source {
        CardSource::Scanner => pb::CardSource::Scanner,
        CardSource::Manual => pb::CardSource::Manual,
        CardSource::Shuffler => pb::CardSource::Unspecified,
    }
}

/// Reads a `CardSource` field: SCANNER or MANUAL.
pub fn card_source(field: &str, raw: i32) -> Result<CardSource, ConversionError> {
    match pb::CardSource::try_from(raw) {
        Ok(pb::CardSource::Scanner) => Ok(CardSource::Scanner),
        Ok(pb::CardSource::Manual) => Ok(CardSource::Manual),
        Ok(pb::CardSource::Unspecified) => Err(ConversionError::missing(field)),
        Err(_) => Err(ConversionError::invalid(
            field,
            raw.to_string(),
            "not a known value of this enum",
        )),
    }
}

/// The reason words of `BalanceChanged.reason` (player.proto).
pub const fn balance_reason(reason: BalanceReason) -> &'static str {
    match reason {
        BalanceReason::Bet => "bet",
        BalanceReason::Clear => "clear",
        BalanceReason::Settlement => "settlement",
        BalanceReason::VoidRefund => "void_refund",
        BalanceReason::Cancelled => "cancelled",
        BalanceReason::Elsewhere => "elsewhere",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_without_a_shoe_is_idle_on_the_wire() {
        assert_eq!(pb::TablePhase::from(Phase::NoShoe), pb::TablePhase::Idle);
        assert_eq!(pb::TablePhase::from(Phase::Voided), pb::TablePhase::Voided);
    }

    #[test]
    fn card_sources_read_back_and_the_shuffler_goes_out_unspecified() {
        for source in [CardSource::Scanner, CardSource::Manual] {
            let raw = i32::from(card_source_to_pb(source));
            assert_eq!(card_source("source", raw), Ok(source));
        }
        let shuffler = i32::from(card_source_to_pb(CardSource::Shuffler));
        assert_eq!(
            card_source("source", shuffler),
            Err(ConversionError::missing("source"))
        );
        let unknown = card_source("source", 99).map_err(|e| e.field().to_owned());
        assert_eq!(unknown, Err("source".to_owned()));
    }
}
