//! The headless demo's croupier: drives the table through TableService as a croupier at
//! the console would (open a shoe, burn, open betting, let it close by itself, deal each
//! card as it is due from a seeded shuffled shoe, confirm the result), with the commands of
//! `banco croupier` and the shoe of `banco-sim shoe-sim`.

use std::time::Duration;

use anyhow::{Context as _, bail};
use banco_wire::pb;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use tokio::sync::watch;

use crate::shoe_sim::Cards;
use banco::clients::croupier::{Client, CroupierCommand, apply, fresh_command_id, render_refusal};

/// Longest the dealer waits for the table to close betting by itself beyond its window.
const CLOSE_GRACE: Duration = Duration::from_secs(30);

/// What the dealer played.
#[derive(Debug, Default)]
pub(crate) struct Played {
    /// Round ids, in play order.
    pub(crate) rounds: Vec<String>,
    /// Shoes opened.
    pub(crate) shoes: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Dealer {
    client: Client,
    table: String,
    decks: u8,
    betting: Duration,
    rng: ChaCha20Rng,
    cards: Option<Cards>,
    states: watch::Receiver<Option<pb::TableState>>,
}

impl Dealer {
    pub(crate) fn new(
        client: Client,
        table: &str,
        decks: u8,
        betting: Duration,
        seed: u64,
        states: watch::Receiver<Option<pb::TableState>>,
    ) -> Dealer {
        Dealer {
            client,
            table: table.to_owned(),
            decks,
            betting,
            rng: ChaCha20Rng::seed_from_u64(seed),
            cards: None,
            states,
        }
    }

    async fn send(&mut self, command: CroupierCommand) -> anyhow::Result<pb::TableState> {
        let reply = apply(&mut self.client, &self.table, fresh_command_id()?, &command).await?;
        if let Some(refusal) = &reply.refusal {
            bail!("the table refused {command:?}: {}", render_refusal(refusal));
        }
        reply
            .state
            .with_context(|| format!("the table answered {command:?} without its state"))
    }

    /// The table's state as WatchTable last showed it (waiting for the first one).
    async fn current(&mut self) -> anyhow::Result<pb::TableState> {
        let state = self
            .states
            .wait_for(Option::is_some)
            .await
            .context("the table's state stream ended")?;
        state.clone().context("no table state")
    }

    /// Plays `rounds` rounds, opening a new shoe whenever the last one ends.
    pub(crate) async fn play(&mut self, rounds: u64) -> anyhow::Result<Played> {
        let mut played = Played::default();
        let mut state = self.current().await?;
        while (played.rounds.len() as u64) < rounds {
            let shoe = pb::ShoeState::try_from(state.shoe_state).unwrap_or_default();
            if matches!(
                shoe,
                pb::ShoeState::Unspecified | pb::ShoeState::NoShoe | pb::ShoeState::Ended
            ) {
                state = self
                    .send(CroupierCommand::OpenShoe {
                        decks: None,
                        cut_card_from_end: 16,
                        no_burn: false,
                    })
                    .await?;
                continue;
            }
            if shoe == pb::ShoeState::AwaitingBurn {
                let mut cards = Cards::shuffle(&state.shoe_id, self.decks, &mut self.rng)?;
                let (burn, face_down) = cards.burn().context("an empty shoe")?;
                self.cards = Some(cards);
                println!(
                    "dealer: shoe {} opened; burn {burn} ({face_down} face down)",
                    state.shoe_id
                );
                played.shoes.push(state.shoe_id.clone());
                state = self
                    .send(CroupierCommand::Burn {
                        card: burn.to_string(),
                        manual: false,
                    })
                    .await?;
                continue;
            }
            let round = self.round().await?;
            println!("dealer: {}", describe(&round));
            played.rounds.push(round.round_id.clone());
            state = round;
        }
        Ok(played)
    }

    /// One round: betting opened and closed by the table's timer, the cards, the result
    /// confirmed. The state after it.
    async fn round(&mut self) -> anyhow::Result<pb::TableState> {
        let opened = self
            .send(CroupierCommand::OpenBetting { duration_ms: 0 })
            .await?;
        let round_id = opened.round_id.clone();
        let closed = tokio::time::timeout(
            self.betting + CLOSE_GRACE,
            self.states.wait_for(|s| {
                s.as_ref().is_some_and(|s| {
                    s.round_id == round_id && s.phase != pb::TablePhase::BettingOpen as i32
                })
            }),
        )
        .await
        .map(|waited| waited.is_ok());
        match closed {
            Ok(true) => {}
            Ok(false) => bail!("the table's state stream ended while betting was open"),
            Err(_) => bail!("betting on {round_id} did not close by itself"),
        }
        let mut state = self.current().await?;
        while matches!(
            pb::Due::try_from(state.due),
            Ok(pb::Due::PlayerCard | pb::Due::BankerCard)
        ) {
            let card = self
                .cards
                .as_mut()
                .and_then(Cards::next_card)
                .with_context(|| format!("the dealer's shoe ran out of cards in {round_id}"))?;
            state = self
                .send(CroupierCommand::Deal {
                    card: card.to_string(),
                    manual: false,
                })
                .await?;
        }
        self.send(CroupierCommand::Confirm {
            round_id: Some(round_id),
        })
        .await
    }
}

/// `T01-S0001-H004: Banker wins, Player 5 – Banker 7; 12 bettors`.
fn describe(state: &pb::TableState) -> String {
    let result = state.result.as_ref().map_or_else(
        || "no result".to_owned(),
        banco::clients::player::hand_result,
    );
    format!(
        "{}: {result}; {} bettor{}",
        state.round_id,
        state.bettors,
        if state.bettors == 1 { "" } else { "s" }
    )
}
