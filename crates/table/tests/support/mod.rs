//! Helpers shared by the table's integration tests: command builders, a checked `apply`
//! that also plays the wallet's part, and a dealer that takes cards from a seeded shuffled
//! shoe.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use banco_rules::shoe::{BurnRule, Procedure, ShoeConfig, ShuffledShoe, burn_count};
use banco_rules::{BetKind, Card, Shoe};
pub use banco_table::instant_wallet::funding;
use banco_table::{CardSource, Command, Event, Pacing, Refusal, RoundId, Table, TableConfig};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub const CROUPIER: &str = "croupier-1";

pub fn card(text: &str) -> Card {
    Card::parse(text).unwrap()
}

pub fn config(pacing: Pacing) -> TableConfig {
    TableConfig::new("T01", pacing)
}

pub fn table(pacing: Pacing) -> Table {
    Table::new(config(pacing)).unwrap()
}

pub fn shoe_config(decks: u8, burn: BurnRule) -> ShoeConfig {
    ShoeConfig {
        decks,
        cut_card_from_end: 16,
        burn,
        procedure: Procedure::CutCard,
    }
}

/// Applies a command that must be accepted, and checks the books after it. The wallet's
/// part is played at once ([`banco_table::instant_wallet`]), as the actor would once the
/// wallet answers. The events are the command's, then the answers'.
pub fn ok(table: &mut Table, cmd: Command) -> Vec<Event> {
    let events = try_apply(table, &cmd).unwrap_or_else(|r| panic!("{cmd:?} refused: {r}"));
    table.check_books().unwrap();
    events
}

/// Applies a command that must be refused, and checks that nothing changed.
pub fn refused(table: &mut Table, cmd: Command) -> Refusal {
    let before = table.clone();
    let refusal = match table.apply(&cmd) {
        Ok(events) => panic!("{cmd:?} accepted: {events:?}"),
        Err(r) => r,
    };
    assert_eq!(*table, before, "a refused command changed the table");
    refusal
}

pub fn open_shoe(config: ShoeConfig, now_ms: u64) -> Command {
    Command::OpenShoe {
        config,
        by: CROUPIER.into(),
        now_ms,
        commitment: None,
    }
}

pub fn open_betting(now_ms: u64) -> Command {
    Command::OpenBetting {
        by: CROUPIER.into(),
        now_ms,
    }
}

pub fn close_betting(now_ms: u64) -> Command {
    Command::CloseBetting {
        by: CROUPIER.into(),
        now_ms,
    }
}

pub fn deal(text: &str, now_ms: u64) -> Command {
    Command::DealCard {
        card: card(text),
        source: CardSource::Scanner,
        now_ms,
    }
}

/// The table's current round (`none` before the first): what a croupier's confirm or void
/// names.
pub fn current(t: &Table) -> RoundId {
    t.round_id().cloned().unwrap_or_else(|| "none".into())
}

/// Confirms the table's current round.
pub fn confirm(t: &Table, now_ms: u64) -> Command {
    Command::ConfirmResult {
        round_id: current(t),
        by: CROUPIER.into(),
        now_ms,
    }
}

/// Voids the table's current round.
pub fn void(t: &Table, reason: &str, now_ms: u64) -> Command {
    Command::VoidRound {
        round_id: current(t),
        reason: reason.into(),
        by: CROUPIER.into(),
        now_ms,
    }
}

/// Applies a command with the wallet's answers as [`ok`] does, the command being allowed
/// to be refused.
pub fn try_apply(table: &mut Table, cmd: &Command) -> Result<Vec<Event>, Refusal> {
    table.apply_with_instant_wallet(cmd)
}

/// Money reaches the player's wallet from outside the table (the cashier), and the table
/// hears of the new balance.
pub fn fund(table: &mut Table, player: &str, amount: i64) -> Vec<Event> {
    let cmd = funding(table, player, amount);
    ok(table, cmd)
}

pub fn bets(
    player: &str,
    round: &RoundId,
    bets: &[(BetKind, i64)],
    key: &str,
    now_ms: u64,
) -> Command {
    Command::PlaceBets {
        player: player.into(),
        round_id: round.clone(),
        bets: bets.to_vec(),
        key: key.into(),
        now_ms,
    }
}

/// A live table with a no-burn 8-deck shoe in play and the given players funded.
pub fn live_table_with(players: &[(&str, i64)]) -> Table {
    let mut t = table(Pacing::Live);
    ready(&mut t, players);
    t
}

pub fn ready(t: &mut Table, players: &[(&str, i64)]) {
    for (p, amount) in players {
        fund(t, p, *amount);
    }
    ok(t, open_shoe(shoe_config(8, BurnRule::None), 0));
}

/// Opens betting at `now_ms` and returns the round id.
pub fn open(t: &mut Table, now_ms: u64) -> RoundId {
    ok(t, open_betting(now_ms));
    t.round_id().unwrap().clone()
}

/// A Banker natural: Player 2♠ 3♠ (5), Banker 4♥ 5♥ (9).
pub const BANKER_NATURAL: [&str; 4] = ["2S", "4H", "3S", "5H"];

/// Closes betting, deals `cards`, confirms. Returns the confirm events.
pub fn finish(t: &mut Table, now_ms: u64, cards: &[&str]) -> Vec<Event> {
    ok(t, close_betting(now_ms));
    for c in cards {
        ok(t, deal(c, now_ms + 1));
    }
    let confirm = confirm(t, now_ms + 2);
    ok(t, confirm)
}

/// Cards from a seeded shuffled shoe, in order, as an automated table's actor takes them.
#[derive(Debug)]
pub struct Dealer {
    pub shuffled: ShuffledShoe,
    pub next: usize,
}

impl Dealer {
    pub fn new(config: ShoeConfig, seed: u64) -> Dealer {
        let shuffled = Shoe::shuffled(config, &mut ChaCha20Rng::seed_from_u64(seed)).unwrap();
        Dealer { shuffled, next: 0 }
    }

    /// The burn command, when the config burns.
    pub fn burn(&mut self, now_ms: u64) -> Command {
        let exposed = self.shuffled.order()[0];
        self.next = 1 + usize::from(burn_count(exposed));
        Command::Burn {
            exposed,
            by: CROUPIER.into(),
            now_ms,
        }
    }

    pub fn peek(&self) -> Card {
        self.shuffled.order()[self.next]
    }

    pub fn next_card(&mut self, now_ms: u64) -> Command {
        let card = self.peek();
        self.next += 1;
        Command::DealCard {
            card,
            source: CardSource::Shuffler,
            now_ms,
        }
    }

    /// Deals until no card is due.
    pub fn deal_coup(&mut self, t: &mut Table, now_ms: u64) -> Vec<Event> {
        let mut events = Vec::new();
        while t.due().is_some_and(|d| d.side().is_some()) {
            events.extend(ok(t, self.next_card(now_ms)));
        }
        events
    }
}

/// [`BANKER_NATURAL`] in the `n`-th suit rotation, so that up to 32 rounds of an 8-deck
/// shoe can be played with it.
pub fn banker_natural(n: u64) -> Vec<String> {
    let suits = ['S', 'H', 'D', 'C'];
    let s = |k: u64| suits[((n + k) % 4) as usize];
    vec![
        format!("2{}", s(0)),
        format!("4{}", s(1)),
        format!("3{}", s(0)),
        format!("5{}", s(1)),
    ]
}

/// Like [`finish`], with the `n`-th rotation of the Banker natural.
pub fn finish_nth(t: &mut Table, now_ms: u64, n: u64) -> Vec<Event> {
    let cards = banker_natural(n);
    let cards: Vec<&str> = cards.iter().map(String::as_str).collect();
    finish(t, now_ms, &cards)
}

/// `command` as the journal stores it: the JSON of its stored form.
pub fn journaled(command: &Command) -> String {
    serde_json::to_string(&banco_records::journal::Command::from(command.clone())).unwrap()
}

/// The command a journaled JSON holds.
pub fn from_journal(json: &str) -> Command {
    serde_json::from_str::<banco_records::journal::Command>(json)
        .unwrap()
        .into()
}
