//! Conversions between wire ([`crate::pb`]) and domain ([`banco_rules`]) types.
//!
//! - Outward (domain → wire): infallible `From` impls. Enums go through the generated
//!   enum type; store them in a message with `i32::from(pb::BetKind::from(kind))`.
//! - Inward (wire → domain): `TryFrom` impls for messages, and functions taking the field's
//!   path for the values proto3 stores bare (`card("card", &text)`, `bet_kind("kind", raw)`).
//!   Every refusal is a [`ConversionError`] naming the field path; [`ConversionError::within`]
//!   prefixes the enclosing field, so a nested error reads `settle.bets[2].kind`.
//!
//! Inward conversions are strict: an unspecified enum is missing, an unknown enum number,
//! a non-canonical card, a zero denominator or a non-positive stake is invalid. Nothing the
//! domain could not hold gets through.

mod cards;
mod enums;
mod money;
mod odds;
mod roads;
mod shoe;
mod time;

pub use cards::{card, card_to_pb, cards, cards_to_pb};
pub use enums::{
    bet_kind, bet_outcome, burn_rule, due, shoe_procedure, shoe_state, shoe_state_to_pb, side,
    winner,
};
pub use money::{bets, payout, requested_bets, settlements};
pub use time::{ms_of_timestamp, timestamp_of_ms};

/// A wire message the domain cannot accept, naming the field path at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// A required field is unset (an unset message, an empty string, an enum left
    /// `*_UNSPECIFIED`).
    #[error("`{0}` is missing")]
    Missing(String),
    /// A field is set to something the domain refuses.
    #[error("`{field}` = {value} is invalid: {why}")]
    Invalid {
        field: String,
        /// The value as received (strings quoted).
        value: String,
        why: String,
    },
}

impl ConversionError {
    pub fn missing(field: impl Into<String>) -> ConversionError {
        ConversionError::Missing(field.into())
    }

    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<String>,
        why: impl Into<String>,
    ) -> ConversionError {
        ConversionError::Invalid {
            field: field.into(),
            value: value.into(),
            why: why.into(),
        }
    }

    /// The path of the field at fault, e.g. `bets[2].stake_minor`.
    pub fn field(&self) -> &str {
        match self {
            ConversionError::Missing(field) | ConversionError::Invalid { field, .. } => field,
        }
    }

    /// The same error seen from the enclosing message: `kind` within `bets[2]` becomes
    /// `bets[2].kind`.
    #[must_use]
    pub fn within(self, parent: &str) -> ConversionError {
        let join = |field: String| {
            if parent.is_empty() {
                field
            } else if field.is_empty() {
                parent.to_owned()
            } else {
                format!("{parent}.{field}")
            }
        };
        match self {
            ConversionError::Missing(field) => ConversionError::Missing(join(field)),
            ConversionError::Invalid { field, value, why } => ConversionError::Invalid {
                field: join(field),
                value,
                why,
            },
        }
    }
}

/// A conversion error is always the caller's bad argument: INVALID_ARGUMENT, with the
/// message naming the field.
impl From<ConversionError> for tonic::Status {
    fn from(err: ConversionError) -> tonic::Status {
        tonic::Status::invalid_argument(err.to_string())
    }
}

/// `field[index]`, the path of one element of a repeated field.
pub(crate) fn at(field: &str, index: usize) -> String {
    format!("{field}[{index}]")
}

/// A required message field in its domain type: `Missing(field)` when unset, and any error
/// of the inner conversion prefixed with `field`.
pub(crate) fn required<W, D>(field: &str, value: Option<W>) -> Result<D, ConversionError>
where
    D: TryFrom<W, Error = ConversionError>,
{
    let value = value.ok_or_else(|| ConversionError::missing(field))?;
    D::try_from(value).map_err(|e| e.within(field))
}

/// An optional message field in its domain type; errors are prefixed with `field`.
pub(crate) fn optional<W, D>(field: &str, value: Option<W>) -> Result<Option<D>, ConversionError>
where
    D: TryFrom<W, Error = ConversionError>,
{
    value.map(|v| required(field, Some(v))).transpose()
}

/// A repeated message field in its domain type; an error names the element (`bets[2].kind`).
pub(crate) fn repeated<W, D>(field: &str, values: Vec<W>) -> Result<Vec<D>, ConversionError>
where
    D: TryFrom<W, Error = ConversionError>,
{
    values
        .into_iter()
        .enumerate()
        .map(|(i, value)| D::try_from(value).map_err(|e| e.within(&at(field, i))))
        .collect()
}
