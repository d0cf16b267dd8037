//! Shoe configuration and composition.

use banco_rules::shoe::{ShoeConfig, ShoeConfigError};
use banco_rules::{Card, Composition, MAX_DECKS};

use super::{ConversionError, at, enums};
use crate::pb;

impl From<ShoeConfig> for pb::ShoeConfig {
    fn from(config: ShoeConfig) -> pb::ShoeConfig {
        pb::ShoeConfig {
            decks: u32::from(config.decks),
            cut_card_from_end: u32::from(config.cut_card_from_end),
            burn: pb::BurnRule::from(config.burn).into(),
            procedure: pb::ShoeProcedure::from(config.procedure).into(),
        }
    }
}

/// Checks the config as [`ShoeConfig::validate`] does, naming the bad field.
impl TryFrom<pb::ShoeConfig> for ShoeConfig {
    type Error = ConversionError;

    fn try_from(config: pb::ShoeConfig) -> Result<ShoeConfig, ConversionError> {
        // The range itself is checked once, by `validate`.
        let decks = u8::try_from(config.decks).map_err(|_| {
            ConversionError::invalid(
                "decks",
                config.decks.to_string(),
                format!("a shoe holds 1 to {MAX_DECKS} decks"),
            )
        })?;
        let cut_card_from_end = u16::try_from(config.cut_card_from_end).map_err(|_| {
            ConversionError::invalid(
                "cut_card_from_end",
                config.cut_card_from_end.to_string(),
                "deeper than any shoe",
            )
        })?;
        let shoe = ShoeConfig {
            decks,
            cut_card_from_end,
            burn: enums::burn_rule("burn", config.burn)?,
            procedure: enums::shoe_procedure("procedure", config.procedure)?,
        };
        shoe.validate().map_err(|err| {
            let (field, value) = match err {
                ShoeConfigError::Decks(decks) => ("decks", decks.to_string()),
                ShoeConfigError::CutCardTooDeep { cut, .. }
                | ShoeConfigError::CutCardTooShallow { cut, .. } => {
                    ("cut_card_from_end", cut.to_string())
                }
            };
            ConversionError::invalid(field, value, err.to_string())
        })?;
        Ok(shoe)
    }
}

impl From<&Composition> for pb::ShoeComposition {
    fn from(composition: &Composition) -> pb::ShoeComposition {
        pb::ShoeComposition {
            counts: composition.counts().iter().map(|&c| u32::from(c)).collect(),
        }
    }
}

/// Exactly 52 counts, none above 8 (a shoe holds at most 8 decks).
impl TryFrom<pb::ShoeComposition> for Composition {
    type Error = ConversionError;

    fn try_from(composition: pb::ShoeComposition) -> Result<Composition, ConversionError> {
        let mut counts = [0u16; 52];
        if composition.counts.len() != counts.len() {
            return Err(ConversionError::invalid(
                "counts",
                format!("{} counts", composition.counts.len()),
                "exactly 52 counts, one per card in shoe-reader index order",
            ));
        }
        let cards = counts.iter_mut().zip(&composition.counts).zip(Card::ALL);
        for (i, ((slot, &count), card)) in cards.enumerate() {
            *slot = u16::try_from(count)
                .ok()
                .filter(|&c| c <= u16::from(MAX_DECKS))
                .ok_or_else(|| {
                    ConversionError::invalid(
                        at("counts", i),
                        count.to_string(),
                        format!("a shoe holds at most {MAX_DECKS} of {card}"),
                    )
                })?;
        }
        Ok(Composition::from_counts(counts))
    }
}
