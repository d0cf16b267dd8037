//! Typing a card: rank then suit (`K` `H`), `10` or `T` for ten, any case. The card goes as
//! soon as its suit is typed; until then the rank shows on screen and may be corrected
//! (typing another rank replaces it, Backspace removes it).

use banco_rules::Card;

/// The rank typed so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    rank: String,
}

/// What one typed character did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The rank so far changed; nothing to send yet.
    Rank,
    /// A whole card.
    Card(Card),
    /// Refused, with the reason; the entry is unchanged.
    Refused(String),
}

const SUITS: &str = "SHDC♠♥♦♣";
const RANKS: &str = "A23456789TJQK";

impl Entry {
    /// The text typed so far (`""`, `"K"`, `"1"`, `"10"`).
    pub fn text(&self) -> &str {
        &self.rank
    }

    pub fn is_empty(&self) -> bool {
        self.rank.is_empty()
    }

    pub fn clear(&mut self) {
        self.rank.clear();
    }

    /// Backspace.
    pub fn back(&mut self) {
        self.rank.pop();
    }

    /// Whether `c` is something the entry takes (a rank, a suit, `1`/`0` of ten).
    pub fn takes(c: char) -> bool {
        let c = c.to_ascii_uppercase();
        RANKS.contains(c) || SUITS.contains(c) || c == '1' || c == '0'
    }

    pub fn push(&mut self, c: char) -> Step {
        let c = c.to_ascii_uppercase();
        if c == '0' {
            if self.rank == "1" {
                self.rank.push('0');
                return Step::Rank;
            }
            return Step::Refused("0 is not a rank: ten is T or 1 then 0".to_owned());
        }
        if c == '1' || RANKS.contains(c) {
            // Another rank corrects the one typed before it: nothing was sent yet.
            self.rank = c.to_string();
            return Step::Rank;
        }
        if SUITS.contains(c) {
            return match self.rank.as_str() {
                "" => Step::Refused(format!(
                    "{c} is a suit: type the rank first, then the suit (K then H)"
                )),
                "1" => Step::Refused("1 is not a rank: ten is T or 1 then 0".to_owned()),
                rank => match Card::parse(&format!("{rank}{c}")) {
                    Ok(card) => {
                        self.rank.clear();
                        Step::Card(card)
                    }
                    Err(error) => Step::Refused(error.to_string()),
                },
            };
        }
        if !self.rank.is_empty() {
            return Step::Refused(self.not_a_suit(c));
        }
        Step::Refused(format!(
            "{c} is neither a rank (A 2-9 T J Q K) nor a suit (S H D C)"
        ))
    }

    /// Why `c` is refused while the rank waits for its suit: every other key, a command
    /// key too, would otherwise act behind a half-typed card.
    pub fn not_a_suit(&self, c: char) -> String {
        let shown = if c.is_control() {
            '?'
        } else {
            c.to_ascii_uppercase()
        };
        if self.rank == "1" {
            return format!(
                "{shown} is not a suit: 1 needs its 0 (ten is 1 then 0, or T; Esc drops it)"
            );
        }
        format!(
            "{shown} is not a suit: {} needs its suit S H D C (Backspace or Esc drops it)",
            self.rank
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(keys: &str) -> Vec<Step> {
        let mut entry = Entry::default();
        keys.chars().map(|c| entry.push(c)).collect()
    }

    fn card(text: &str) -> Step {
        Step::Card(Card::parse(text).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn rank_then_suit_in_any_case() {
        assert_eq!(typed("KH"), vec![Step::Rank, card("KH")]);
        assert_eq!(typed("kh"), vec![Step::Rank, card("KH")]);
        assert_eq!(typed("as"), vec![Step::Rank, card("AS")]);
    }

    #[test]
    fn ten_as_t_or_one_zero() {
        assert_eq!(typed("TD"), vec![Step::Rank, card("TD")]);
        assert_eq!(typed("10d"), vec![Step::Rank, Step::Rank, card("TD")]);
    }

    #[test]
    fn another_rank_corrects_the_first() {
        let mut entry = Entry::default();
        entry.push('K');
        entry.push('Q');
        assert_eq!(entry.text(), "Q");
        assert_eq!(entry.push('C'), card("QC"));
    }

    #[test]
    fn backspace_removes_the_rank() {
        let mut entry = Entry::default();
        entry.push('1');
        entry.push('0');
        entry.back();
        assert_eq!(entry.text(), "1");
        entry.back();
        assert!(entry.is_empty());
    }

    #[test]
    fn bad_keys_are_refused_with_a_reason_and_change_nothing() {
        let mut entry = Entry::default();
        assert!(matches!(entry.push('H'), Step::Refused(r) if r.contains("rank first")));
        assert!(entry.is_empty());
        assert!(matches!(entry.push('0'), Step::Refused(r) if r.contains("not a rank")));
        entry.push('1');
        assert!(matches!(entry.push('S'), Step::Refused(r) if r.contains("1 is not a rank")));
        assert_eq!(entry.text(), "1");
        assert!(matches!(entry.push('Z'), Step::Refused(r) if r.contains("not a suit")));
        assert_eq!(entry.text(), "1");
        entry.clear();
        assert!(matches!(entry.push('Z'), Step::Refused(r) if r.contains("neither")));
    }
}
