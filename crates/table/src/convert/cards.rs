//! Dealt cards and the totals staked on each position.

use banco_rules::BetKind;
use banco_wire::convert::{card_to_pb, timestamp_of_ms};
use banco_wire::pb;

use super::phase::card_source_to_pb;
use crate::book::PositionTotal;
use crate::phase::DealtCard;

/// A function: the dealt card is a record type, of neither this crate nor the wire's.
pub fn dealt_card_to_pb(dealt: &DealtCard) -> pb::DealtCard {
    pb::DealtCard {
        card: card_to_pb(dealt.card),
        side: pb::Side::from(dealt.to).into(),
        source: card_source_to_pb(dealt.source).into(),
        dealt_at: Some(timestamp_of_ms(dealt.at)),
    }
}

/// The totals of each position. A function, as the wire's total names its position,
/// which the table keeps as the key of its map.
pub fn position_totals<'a>(
    totals: impl IntoIterator<Item = (&'a BetKind, &'a PositionTotal)>,
) -> Vec<pb::PositionTotal> {
    totals
        .into_iter()
        .map(|(&kind, total)| pb::PositionTotal {
            kind: pb::BetKind::from(kind).into(),
            total_minor: total.amount,
            bettors: total.bettors,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use banco_rules::{Card, Side};

    use super::*;
    use crate::command::CardSource;

    #[test]
    fn a_dealt_card_keeps_its_side_source_and_time() {
        let card: Card = "9H".parse().expect("a card");
        let dealt = DealtCard {
            card,
            to: Side::Banker,
            source: CardSource::Manual,
            at: 1_500,
        };
        let wire = dealt_card_to_pb(&dealt);
        assert_eq!(wire.card, card_to_pb(card));
        assert_eq!(wire.side, i32::from(pb::Side::Banker));
        assert_eq!(wire.source, i32::from(pb::CardSource::Manual));
        assert_eq!(wire.dealt_at, Some(timestamp_of_ms(1_500)));
    }

    #[test]
    fn position_totals_name_their_position() {
        let totals = BTreeMap::from([(
            BetKind::Tie,
            PositionTotal {
                amount: 700,
                bettors: 2,
            },
        )]);
        let wire = position_totals(&totals);
        assert_eq!(
            wire,
            vec![pb::PositionTotal {
                kind: pb::BetKind::Tie.into(),
                total_minor: 700,
                bettors: 2,
            }]
        );
    }
}
