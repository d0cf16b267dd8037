//! The shoe as the system sees it: which cards can still come out of it, the burn, the
//! cut card, and the shuffle of automated tables.
//!
//! A live shoe is shuffled by hand, so the system never knows its order; it knows only
//! what it has seen. [`Shoe`] therefore counts every card that leaves the shoe face up and
//! refuses one that would exceed its count: a ninth A♠ from eight decks is a misread, and
//! accepting it would settle bets on a card that was never dealt. Refusals change nothing,
//! so the croupier can simply scan again.
//!
//! # The cut card, precisely
//! The cut card sits `cut_card_from_end` cards from the end: exactly that many cards lie
//! behind it. It therefore **comes out with the first card drawn while exactly
//! `cut_card_from_end` cards are left** (the card after which fewer than
//! `cut_card_from_end` are left). That is always a card of some hand, so the state goes
//! [`ShoeState::InPlay`] → [`ShoeState::CutCardOut`] inside [`Shoe::deal`]; the hand in
//! progress is finished; [`Shoe::hand_finished`] then moves to [`ShoeState::LastHand`],
//! one more hand is dealt, and the next [`Shoe::hand_finished`] ends the shoe. A hand that
//! ends exactly as the count reaches `cut_card_from_end` does not bring the cut card out:
//! it comes out with the first card of the next hand.
//!
//! # The shuffle of automated tables
//! See [`shuffle`] and [`random_below`]: both are spelled out so that an auditor can
//! replay a seeded shoe card for card without trusting any library's internals.

use std::fmt;
use std::num::NonZeroU64;

use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::card::Card;
use crate::composition::{Composition, MAX_DECKS, NotInShoe};

/// Decks in a shoe unless configured otherwise (docs/src/rules/cards-and-shoe.md; seeds 000 and
/// 003).
pub const DEFAULT_DECKS: u8 = 8;
/// Where the cut card sits unless configured otherwise (docs/src/rules/cards-and-shoe.md).
pub const DEFAULT_CUT_CARD_FROM_END: u16 = 16;
/// The most cards one coup takes: three to each hand.
pub const MAX_CARDS_PER_HAND: u16 = 6;
/// The most cards a burn takes: the exposed card and up to ten face down.
pub const MAX_BURN: u16 = 11;
/// The shallowest cut card the cut-card procedure allows. When the cut card comes out
/// with the first card of a hand, that hand may need five more cards and the last hand
/// six: eleven cards must be left after the card that brought it out, so the cut card
/// must sit at least twelve from the end or the shoe could run dry in the middle of a
/// coup.
pub const MIN_CUT_CARD_FROM_END: u16 = 2 * MAX_CARDS_PER_HAND;

/// What happens after the shuffle, before the first hand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BurnRule {
    /// The first card is exposed and as many more are burned face down as it counts
    /// (A 1, 2–9 face value, T J Q K 10). See [`burn_count`].
    #[default]
    ExposeAndBurn,
    /// No burn: the first card out is the first card of the first hand.
    None,
}

/// How a shoe ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Procedure {
    /// Live tables: the cut card comes out, the hand is finished, one more hand is played.
    #[default]
    CutCard,
    /// Automated tables (seeds 000–002): a fresh shoe for every hand.
    ReshuffleEveryHand,
}

/// How a table runs its shoe. Deserializing checks it like [`ShoeConfig::validate`], so a
/// bad config file is refused when it is read, naming the bad value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "ShoeConfigFile")]
pub struct ShoeConfig {
    /// 1 to 8.
    pub decks: u8,
    /// Cards lying behind the cut card (ignored by [`Procedure::ReshuffleEveryHand`],
    /// but still checked: it must fit in the shoe).
    pub cut_card_from_end: u16,
    pub burn: BurnRule,
    pub procedure: Procedure,
}

impl Default for ShoeConfig {
    fn default() -> ShoeConfig {
        ShoeConfig {
            decks: DEFAULT_DECKS,
            cut_card_from_end: DEFAULT_CUT_CARD_FROM_END,
            burn: BurnRule::ExposeAndBurn,
            procedure: Procedure::CutCard,
        }
    }
}

/// The shape of a config file: every field optional, unknown fields refused.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ShoeConfigFile {
    decks: u8,
    cut_card_from_end: u16,
    burn: BurnRule,
    procedure: Procedure,
}

impl Default for ShoeConfigFile {
    fn default() -> ShoeConfigFile {
        let d = ShoeConfig::default();
        ShoeConfigFile {
            decks: d.decks,
            cut_card_from_end: d.cut_card_from_end,
            burn: d.burn,
            procedure: d.procedure,
        }
    }
}

impl TryFrom<ShoeConfigFile> for ShoeConfig {
    type Error = ShoeConfigError;

    fn try_from(file: ShoeConfigFile) -> Result<ShoeConfig, ShoeConfigError> {
        let config = ShoeConfig {
            decks: file.decks,
            cut_card_from_end: file.cut_card_from_end,
            burn: file.burn,
            procedure: file.procedure,
        };
        config.validate()?;
        Ok(config)
    }
}

/// A shoe configuration that cannot be run. Each names the offending value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShoeConfigError {
    #[error("decks = {0}: a shoe holds 1 to 8 decks")]
    Decks(u8),
    #[error(
        "cut_card_from_end = {cut}: deeper than this shoe allows; {decks} deck(s) hold {cards} cards, \
         the burn may take {burn}, and at least one card must come out before the cut card, \
         so it can sit at most {max} from the end"
    )]
    CutCardTooDeep {
        cut: u16,
        decks: u8,
        cards: u16,
        burn: u16,
        max: u16,
    },
    #[error(
        "cut_card_from_end = {cut}: too shallow; at least {min} cards must lie behind the cut card \
         to finish the hand under way and deal one more"
    )]
    CutCardTooShallow { cut: u16, min: u16 },
}

impl ShoeConfig {
    /// Checks that this shoe can be run to its end without ever running dry mid-coup.
    pub fn validate(&self) -> Result<(), ShoeConfigError> {
        if self.decks == 0 || self.decks > MAX_DECKS {
            return Err(ShoeConfigError::Decks(self.decks));
        }
        let cards = self.total_cards();
        let burn = match self.burn {
            BurnRule::ExposeAndBurn => MAX_BURN,
            BurnRule::None => 0,
        };
        let max = cards - burn - 1;
        if self.cut_card_from_end > max {
            return Err(ShoeConfigError::CutCardTooDeep {
                cut: self.cut_card_from_end,
                decks: self.decks,
                cards,
                burn,
                max,
            });
        }
        if self.procedure == Procedure::CutCard && self.cut_card_from_end < MIN_CUT_CARD_FROM_END {
            return Err(ShoeConfigError::CutCardTooShallow {
                cut: self.cut_card_from_end,
                min: MIN_CUT_CARD_FROM_END,
            });
        }
        Ok(())
    }

    /// Cards in the full shoe (52 × decks).
    pub fn total_cards(&self) -> u16 {
        52 * u16::from(self.decks)
    }
}

/// Where a shoe is in its life. Transitions, and nothing else:
///
/// | from | event | to |
/// |---|---|---|
/// | `AwaitingBurn` | [`Shoe::burn`] | `InPlay` |
/// | `InPlay` | [`Shoe::deal`] of the card that brings the cut card out | `CutCardOut` |
/// | `CutCardOut` | [`Shoe::undo`] of that card | `InPlay` |
/// | `InPlay` | [`Shoe::hand_finished`] | `InPlay`, or `Ended` when reshuffling every hand |
/// | `CutCardOut` | [`Shoe::hand_finished`] | `LastHand` |
/// | `LastHand` | [`Shoe::hand_finished`] | `Ended` |
///
/// A shoe with [`BurnRule::None`] starts `InPlay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShoeState {
    /// Shuffled; the burn is due before any hand.
    AwaitingBurn,
    /// Hands are being dealt; the cut card has not come out.
    InPlay,
    /// The cut card came out during the hand being dealt; finish it.
    CutCardOut,
    /// The one more hand after the cut card.
    LastHand,
    /// No more cards from this shoe.
    Ended,
}

impl fmt::Display for ShoeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShoeState::AwaitingBurn => "awaiting the burn",
            ShoeState::InPlay => "in play",
            ShoeState::CutCardOut => "cut card out during this hand",
            ShoeState::LastHand => "on its last hand",
            ShoeState::Ended => "ended",
        })
    }
}

/// The burn of one shoe: the exposed card (seen, so counted) and how many went face down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Burn {
    pub exposed: Card,
    pub face_down: u8,
}

/// How many cards are burned face down after `exposed`: A 1, 2–9 face value, T J Q K 10.
pub const fn burn_count(exposed: Card) -> u8 {
    let n = exposed.rank().number();
    if n > 10 { 10 } else { n }
}

/// Why the shoe refused something. A refusal never changes the shoe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShoeError {
    /// Every copy of the card has already been seen.
    #[error(transparent)]
    Misread(#[from] NotInShoe),
    #[error("{}no card is left: all {total} cards of this shoe are out", refused(*.card))]
    Empty { card: Option<Card>, total: u16 },
    #[error("{}this shoe has ended; a new shoe must be shuffled", refused(*.card))]
    Ended { card: Option<Card> },
    #[error(
        "{card} refused: the burn comes first (expose one card, then burn as many as it counts)"
    )]
    BurnPending { card: Card },
    #[error("{card} cannot be exposed for a burn: this table does not burn")]
    BurnNotInUse { card: Card },
    #[error(
        "{card} cannot be exposed for a burn: this shoe already burned ({} exposed, {} face down); \
         a shoe burns once, before its first hand",
        .burn.exposed, .burn.face_down
    )]
    AlreadyBurned { card: Card, burn: Burn },
    #[error("cannot take back {card}: no card of the hand in progress has been dealt")]
    NothingToUndo { card: Card },
    #[error(
        "cannot take back {card}: the last card dealt is {last}, and cards come back last first"
    )]
    NotLastCard { card: Card, last: Card },
    #[error("no hand in progress to finish: the shoe is {state} and no card has been dealt since")]
    NoHandInProgress { state: ShoeState },
}

fn refused(card: Option<Card>) -> String {
    card.map(|c| format!("{c} refused: ")).unwrap_or_default()
}

/// A live shoe: counts every card seen and refuses the impossible ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shoe {
    config: ShoeConfig,
    /// Cards not seen yet: those still in the shoe and those burned face down.
    unseen: Composition,
    burn: Option<Burn>,
    /// Cards dealt to hands (the exposed burn card is not one).
    dealt: u16,
    /// The hand in progress, in order, so that an undo can only take back its last card.
    hand: Vec<Card>,
    hands_finished: u32,
    state: ShoeState,
}

impl Shoe {
    /// A freshly shuffled shoe of unknown order.
    pub fn new(config: ShoeConfig) -> Result<Shoe, ShoeConfigError> {
        config.validate()?;
        let unseen =
            Composition::full(config.decks).map_err(|bad| ShoeConfigError::Decks(bad.0))?;
        let state = match config.burn {
            BurnRule::ExposeAndBurn => ShoeState::AwaitingBurn,
            BurnRule::None => ShoeState::InPlay,
        };
        Ok(Shoe {
            config,
            unseen,
            burn: None,
            dealt: 0,
            hand: Vec::new(),
            hands_finished: 0,
            state,
        })
    }

    /// A shuffled shoe of known order for an automated table; see [`shuffle`].
    pub fn shuffled<R: Rng + ?Sized>(
        config: ShoeConfig,
        rng: &mut R,
    ) -> Result<ShuffledShoe, ShoeConfigError> {
        let shoe = Shoe::new(config)?;
        let mut order: Vec<Card> = (0..config.decks).flat_map(|_| Card::ALL).collect();
        shuffle(&mut order, rng);
        Ok(ShuffledShoe {
            shoe,
            order,
            next: 0,
        })
    }

    pub const fn config(&self) -> &ShoeConfig {
        &self.config
    }

    pub const fn state(&self) -> ShoeState {
        self.state
    }

    pub const fn decks(&self) -> u8 {
        self.config.decks
    }

    /// Cards in the full shoe.
    pub fn total_cards(&self) -> u16 {
        self.config.total_cards()
    }

    /// Cards physically still in the shoe (burned ones are out, though unseen).
    pub fn cards_left(&self) -> u16 {
        self.total_cards() - self.cards_seen() - self.burned_face_down()
    }

    /// Cards dealt to hands, the exposed burn card not included.
    pub const fn cards_dealt(&self) -> u16 {
        self.dealt
    }

    /// Cards seen face up: those dealt and the exposed burn card.
    pub fn cards_seen(&self) -> u16 {
        self.dealt + u16::from(self.burn.is_some())
    }

    /// Cards burned face down: out of the shoe but never seen.
    pub fn burned_face_down(&self) -> u16 {
        self.burn.map_or(0, |b| u16::from(b.face_down))
    }

    pub const fn burn_done(&self) -> Option<Burn> {
        self.burn
    }

    /// What is left as far as is known: the cards not yet seen, which include the
    /// `burned_face_down` unseen ones. Its length is `cards_left + burned_face_down`.
    pub const fn composition(&self) -> &Composition {
        &self.unseen
    }

    /// How many copies of `card` have been seen (0 ..= decks).
    pub fn seen(&self, card: Card) -> u16 {
        u16::from(self.config.decks) - self.unseen.count(card)
    }

    /// Cards of the hand in progress, in the order dealt.
    pub fn hand_cards(&self) -> &[Card] {
        &self.hand
    }

    pub const fn hands_finished(&self) -> u32 {
        self.hands_finished
    }

    /// Whether [`Shoe::deal`] would accept `card` now (the validator's question).
    pub fn check(&self, card: Card) -> Result<(), ShoeError> {
        match self.state {
            ShoeState::Ended => return Err(ShoeError::Ended { card: Some(card) }),
            ShoeState::AwaitingBurn => return Err(ShoeError::BurnPending { card }),
            ShoeState::InPlay | ShoeState::CutCardOut | ShoeState::LastHand => {}
        }
        if self.cards_left() == 0 {
            return Err(ShoeError::Empty {
                card: Some(card),
                total: self.total_cards(),
            });
        }
        if self.unseen.count(card) == 0 {
            return Err(ShoeError::Misread(NotInShoe {
                card,
                decks_worth: u16::from(self.config.decks),
            }));
        }
        Ok(())
    }

    /// Counts `card` out of the shoe into the hand in progress, or refuses it and changes
    /// nothing. Returns the state after the card (see the module docs on the cut card).
    pub fn deal(&mut self, card: Card) -> Result<ShoeState, ShoeError> {
        self.check(card)?;
        self.unseen.remove(card, self.config.decks)?;
        self.dealt += 1;
        self.hand.push(card);
        if self.state == ShoeState::InPlay
            && self.config.procedure == Procedure::CutCard
            && self.cards_left() < self.config.cut_card_from_end
        {
            self.state = ShoeState::CutCardOut;
        }
        Ok(self.state)
    }

    /// Takes back the last card dealt to the hand in progress (a correction), exactly
    /// undoing its [`Shoe::deal`], cut card included. `card` must be that last card: the
    /// caller and the shoe must agree on what is being taken back.
    pub fn undo(&mut self, card: Card) -> Result<ShoeState, ShoeError> {
        let Some(&last) = self.hand.last() else {
            return Err(ShoeError::NothingToUndo { card });
        };
        if last != card {
            return Err(ShoeError::NotLastCard { card, last });
        }
        self.hand.pop();
        self.unseen.put_back(card);
        self.dealt -= 1;
        if self.state == ShoeState::CutCardOut && self.cards_left() >= self.config.cut_card_from_end
        {
            self.state = ShoeState::InPlay;
        }
        Ok(self.state)
    }

    /// The burn, in one step: counts the exposed card and takes [`burn_count`] unseen cards
    /// out. Returns the burn, whose `face_down` the croupier must now burn. Allowed once,
    /// before the first hand, on a table that burns. A misread exposed card cannot be taken
    /// back: the shoe is reshuffled.
    pub fn burn(&mut self, exposed: Card) -> Result<Burn, ShoeError> {
        if self.config.burn == BurnRule::None {
            return Err(ShoeError::BurnNotInUse { card: exposed });
        }
        if let Some(burn) = self.burn {
            return Err(ShoeError::AlreadyBurned {
                card: exposed,
                burn,
            });
        }
        // Only `burn` leaves `AwaitingBurn`, and a burning table starts there, so from here
        // on the state is `AwaitingBurn`.
        let face_down = burn_count(exposed);
        // Unreachable with a validated config (a shoe holds at least 52 cards), but the
        // shoe must never count more cards out than it holds.
        if self.cards_left() < 1 + u16::from(face_down) {
            return Err(ShoeError::Empty {
                card: Some(exposed),
                total: self.total_cards(),
            });
        }
        self.unseen.remove(exposed, self.config.decks)?;
        let burn = Burn { exposed, face_down };
        self.burn = Some(burn);
        self.state = ShoeState::InPlay;
        Ok(burn)
    }

    /// The hand in progress is over (settled): advances the cut-card state machine.
    /// Refused when no card has been dealt since the last call, so that a repeated call
    /// can never skip the last hand.
    pub fn hand_finished(&mut self) -> Result<ShoeState, ShoeError> {
        let no_hand = ShoeError::NoHandInProgress { state: self.state };
        self.state = match self.state {
            ShoeState::Ended => return Err(ShoeError::Ended { card: None }),
            ShoeState::AwaitingBurn => return Err(no_hand),
            _ if self.hand.is_empty() => return Err(no_hand),
            _ if self.config.procedure == Procedure::ReshuffleEveryHand => ShoeState::Ended,
            ShoeState::InPlay => ShoeState::InPlay,
            ShoeState::CutCardOut => ShoeState::LastHand,
            ShoeState::LastHand => ShoeState::Ended,
        };
        self.hand.clear();
        self.hands_finished += 1;
        Ok(self.state)
    }
}

/// A shoe whose order the system made and knows (automated tables). Every card still goes
/// through the counting [`Shoe`], so the same rules and refusals apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShuffledShoe {
    shoe: Shoe,
    order: Vec<Card>,
    next: usize,
}

impl ShuffledShoe {
    /// The whole order, first card out first, burn included: the audit record.
    pub fn order(&self) -> &[Card] {
        &self.order
    }

    /// Position in [`ShuffledShoe::order`] of the next card to come out.
    pub const fn position(&self) -> usize {
        self.next
    }

    pub const fn shoe(&self) -> &Shoe {
        &self.shoe
    }

    pub const fn state(&self) -> ShoeState {
        self.shoe.state
    }

    /// Exposes the next card and burns as many after it as it counts.
    pub fn burn(&mut self) -> Result<Burn, ShoeError> {
        let Some(&exposed) = self.order.get(self.next) else {
            return Err(ShoeError::Empty {
                card: None,
                total: self.shoe.total_cards(),
            });
        };
        let burn = self.shoe.burn(exposed)?;
        self.next += 1 + usize::from(burn.face_down);
        Ok(burn)
    }

    /// Deals the next card in order; on a refusal nothing moves.
    pub fn next_card(&mut self) -> Result<Card, ShoeError> {
        let Some(&card) = self.order.get(self.next) else {
            return Err(ShoeError::Empty {
                card: None,
                total: self.shoe.total_cards(),
            });
        };
        self.shoe.deal(card)?;
        self.next += 1;
        Ok(card)
    }

    pub fn hand_finished(&mut self) -> Result<ShoeState, ShoeError> {
        self.shoe.hand_finished()
    }
}

/// Fisher–Yates, written out for replay. For `i` from `len − 1` down to `1`:
/// `j = random_below(i + 1)`, then swap `items[i]` and `items[j]`. Every one of the `len!`
/// orders is equally likely when `random_below` is unbiased.
///
/// A [`ShuffledShoe`] starts from `decks` copies of the 52 cards in index order (deck after
/// deck, each `Card::ALL`, i.e. `AS 2S … KS AH … KC`) and shuffles them with this.
pub fn shuffle<T, R: Rng + ?Sized>(items: &mut [T], rng: &mut R) {
    for i in (1..items.len()).rev() {
        let bound = NonZeroU64::MIN.saturating_add(i as u64); // i + 1
        // `j <= i < items.len()`, so the cast back to usize cannot truncate.
        let j = random_below(rng, bound) as usize;
        items.swap(i, j);
    }
}

/// A uniform integer in `0..bound`, by Lemire's multiply-and-reject method (D. Lemire,
/// "Fast Random Integer Generation in an Interval", ACM TOMACS 2019), on `next_u64`:
///
/// ```text
/// x = next_u64();  m = x × bound  (as a 128-bit product);  low = m mod 2^64
/// if low < bound:
///     t = (2^64 − bound) mod bound
///     while low < t:  x = next_u64();  m = x × bound;  low = m mod 2^64
/// return m div 2^64
/// ```
///
/// Why unbiased: the 2^64 values of `x` map onto `0..bound` by `⌊x·bound / 2^64⌋`; each
/// output has either `⌊2^64/bound⌋` or one more preimage, and exactly `t` outputs have the
/// extra one. Rejecting the `x` whose `low` falls below `t` removes one preimage from each
/// of those, so every output keeps exactly `⌊2^64/bound⌋`.
pub fn random_below<R: Rng + ?Sized>(rng: &mut R, bound: NonZeroU64) -> u64 {
    let n = bound.get();
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    let mut low = m as u64;
    if low < n {
        let t = n.wrapping_neg() % n;
        while low < t {
            m = u128::from(rng.next_u64()) * u128::from(n);
            low = m as u64;
        }
    }
    (m >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::{Rank, Suit};

    #[test]
    fn burn_counts() {
        let counts: Vec<u8> = Rank::ALL
            .iter()
            .map(|&r| burn_count(Card::new(r, Suit::Clubs)))
            .collect();
        assert_eq!(counts, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10]);
    }

    #[test]
    fn default_config_is_valid() {
        assert_eq!(ShoeConfig::default().validate(), Ok(()));
        assert_eq!(MIN_CUT_CARD_FROM_END, 12);
    }
}
