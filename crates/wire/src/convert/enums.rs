//! Enums: every domain enum maps to a wire enum whose `*_UNSPECIFIED = 0` is refused on
//! input as a missing field, and whose unknown numbers (from a newer peer) are invalid.

use banco_rules::settle::BetOutcome;
use banco_rules::shoe::{BurnRule, Procedure, ShoeState};
use banco_rules::{BetKind, Due, Side, Winner};

use super::ConversionError;
use crate::pb;

/// Reads a bare enum field: unspecified is missing, an unknown number is invalid.
fn known<E>(field: &str, raw: i32) -> Result<E, ConversionError>
where
    E: TryFrom<i32> + Default + PartialEq,
{
    match E::try_from(raw) {
        Ok(value) if value == E::default() => Err(ConversionError::missing(field)),
        Ok(value) => Ok(value),
        Err(_) => Err(ConversionError::invalid(
            field,
            raw.to_string(),
            "not a known value of this enum",
        )),
    }
}

/// Both directions for a domain enum and its wire enum, plus the bare-field reader.
macro_rules! wire_enum {
    ($(#[$doc:meta])* $reader:ident: $domain:ident => pb::$wire:ident as $name:literal {
        $($d:ident => $w:ident),+ $(,)?
    }) => {
        impl From<$domain> for pb::$wire {
            fn from(value: $domain) -> pb::$wire {
                match value {
                    $($domain::$d => pb::$wire::$w,)+
                }
            }
        }

        /// Refuses `*_UNSPECIFIED` as missing.
        impl TryFrom<pb::$wire> for $domain {
            type Error = ConversionError;

            fn try_from(value: pb::$wire) -> Result<$domain, ConversionError> {
                match value {
                    $(pb::$wire::$w => Ok($domain::$d),)+
                    pb::$wire::Unspecified => Err(ConversionError::missing($name)),
                }
            }
        }

        $(#[$doc])*
        pub fn $reader(field: &str, raw: i32) -> Result<$domain, ConversionError> {
            known::<pb::$wire>(field, raw)?
                .try_into()
                .map_err(|_| ConversionError::missing(field))
        }
    };
}

wire_enum! {
    /// Reads a `BetKind` field.
    bet_kind: BetKind => pb::BetKind as "bet_kind" {
        Player => Player,
        Banker => Banker,
        Tie => Tie,
        PlayerPair => PlayerPair,
        BankerPair => BankerPair,
        EitherPair => EitherPair,
        PerfectPair => PerfectPair,
        Big => Big,
        Small => Small,
    }
}

wire_enum! {
    /// Reads a `Winner` field.
    winner: Winner => pb::Winner as "winner" {
        Player => Player,
        Banker => Banker,
        Tie => Tie,
    }
}

wire_enum! {
    /// Reads a `Side` field.
    side: Side => pb::Side as "side" {
        Player => Player,
        Banker => Banker,
    }
}

wire_enum! {
    /// Reads a `Due` field.
    due: Due => pb::Due as "due" {
        PlayerCard => PlayerCard,
        BankerCard => BankerCard,
        Complete => Complete,
    }
}

wire_enum! {
    /// Reads a `BetOutcome` field.
    bet_outcome: BetOutcome => pb::BetOutcome as "bet_outcome" {
        Win => Win,
        Lose => Lose,
        Push => Push,
    }
}

wire_enum! {
    /// Reads a `BurnRule` field.
    burn_rule: BurnRule => pb::BurnRule as "burn_rule" {
        ExposeAndBurn => ExposeAndBurn,
        None => None,
    }
}

wire_enum! {
    /// Reads a `ShoeProcedure` field.
    shoe_procedure: Procedure => pb::ShoeProcedure as "shoe_procedure" {
        CutCard => CutCard,
        ReshuffleEveryHand => ReshuffleEveryHand,
    }
}

impl From<ShoeState> for pb::ShoeState {
    fn from(state: ShoeState) -> pb::ShoeState {
        match state {
            ShoeState::AwaitingBurn => pb::ShoeState::AwaitingBurn,
            ShoeState::InPlay => pb::ShoeState::InPlay,
            ShoeState::CutCardOut => pb::ShoeState::CutCardOut,
            ShoeState::LastHand => pb::ShoeState::LastHand,
            ShoeState::Ended => pb::ShoeState::Ended,
        }
    }
}

/// The wire shoe state of a table with (`Some`) or without (`None`) an open shoe.
pub fn shoe_state_to_pb(state: Option<ShoeState>) -> pb::ShoeState {
    state.map_or(pb::ShoeState::NoShoe, pb::ShoeState::from)
}

/// Reads a `ShoeState` field: `None` for `SHOE_STATE_NO_SHOE`.
pub fn shoe_state(field: &str, raw: i32) -> Result<Option<ShoeState>, ConversionError> {
    Ok(match known::<pb::ShoeState>(field, raw)? {
        pb::ShoeState::NoShoe => None,
        pb::ShoeState::AwaitingBurn => Some(ShoeState::AwaitingBurn),
        pb::ShoeState::InPlay => Some(ShoeState::InPlay),
        pb::ShoeState::CutCardOut => Some(ShoeState::CutCardOut),
        pb::ShoeState::LastHand => Some(ShoeState::LastHand),
        pb::ShoeState::Ended => Some(ShoeState::Ended),
        pb::ShoeState::Unspecified => return Err(ConversionError::missing(field)),
    })
}
