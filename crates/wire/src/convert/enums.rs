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

/// Both directions for a domain enum and its wire enum, whose variants bear the same names,
/// plus the bare-field reader `$reader` (whose name is also the field named when a
/// `TryFrom` of the wire enum meets `*_UNSPECIFIED`). The matches stay exhaustive both ways,
/// so a variant added on either side is a compile error here, not a silent default.
macro_rules! wire_enum {
    ($($reader:ident: $domain:ident => $wire:ident { $($variant:ident),+ $(,)? })+) => {$(
        impl From<$domain> for pb::$wire {
            fn from(value: $domain) -> pb::$wire {
                match value {
                    $($domain::$variant => pb::$wire::$variant,)+
                }
            }
        }

        /// Refuses `*_UNSPECIFIED` as missing.
        impl TryFrom<pb::$wire> for $domain {
            type Error = ConversionError;

            fn try_from(value: pb::$wire) -> Result<$domain, ConversionError> {
                match value {
                    $(pb::$wire::$variant => Ok($domain::$variant),)+
                    pb::$wire::Unspecified => Err(ConversionError::missing(stringify!($reader))),
                }
            }
        }

        #[doc = concat!("Reads a `", stringify!($wire), "` field.")]
        pub fn $reader(field: &str, raw: i32) -> Result<$domain, ConversionError> {
            known::<pb::$wire>(field, raw)?
                .try_into()
                .map_err(|_| ConversionError::missing(field))
        }
    )+};
}

wire_enum! {
    bet_kind: BetKind => BetKind {
        Player, Banker, Tie, PlayerPair, BankerPair, EitherPair, PerfectPair, Big, Small,
    }
    winner: Winner => Winner { Player, Banker, Tie }
    side: Side => Side { Player, Banker }
    due: Due => Due { PlayerCard, BankerCard, Complete }
    bet_outcome: BetOutcome => BetOutcome { Win, Lose, Push }
    burn_rule: BurnRule => BurnRule { ExposeAndBurn, None }
    shoe_procedure: Procedure => ShoeProcedure { CutCard, ReshuffleEveryHand }
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
