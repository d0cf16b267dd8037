//! gRPC clients as the croupier console and a player app use them: a croupier that numbers
//! its commands (so that a resend after a lost reply carries the same `command_id`), and
//! players that are the subject of their own token.

use std::time::{Duration, SystemTime};

use banco_auth::{BearerToken, Role};
use banco_rules::shoe::{ShoeConfig, ShuffledShoe, burn_count};
use banco_rules::{Card, Coup, Shoe, ShoeState};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::table_service_client::TableServiceClient;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use tonic::Status;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::procs::{Keys, bearer};

/// A channel that sends a bearer token with every call.
pub type Authed = InterceptedService<Channel, BearerToken>;

pub fn table_client(channel: Channel, token: &str) -> TableServiceClient<Authed> {
    TableServiceClient::with_interceptor(channel, bearer(token))
}

pub fn player_client(channel: Channel, token: &str) -> PlayerServiceClient<Authed> {
    PlayerServiceClient::with_interceptor(channel, bearer(token))
}

/// A betting player; its token stays at hand to connect again after a server restarts.
#[derive(Debug)]
pub struct Player {
    pub name: String,
    pub token: String,
    pub client: PlayerServiceClient<Authed>,
}

impl Player {
    pub fn new(channel: Channel, name: &str, token: String) -> Player {
        Player {
            client: player_client(channel, &token),
            name: name.to_owned(),
            token,
        }
    }
}

/// Players `p00`, `p01`, … on `channel`, each the subject of an hour's token.
pub fn numbered_players(keys: &Keys, channel: &Channel, n: usize) -> Vec<Player> {
    (0..n)
        .map(|i| {
            let name = format!("p{i:02}");
            let token = keys.issue_at(
                Role::Player,
                &name,
                Duration::from_secs(3600),
                SystemTime::now(),
            );
            Player::new(channel.clone(), &name, token)
        })
        .collect()
}

/// The first table ListTables shows: the tests' services run one.
pub async fn first_table(mut client: PlayerServiceClient<Authed>) -> pb::TableInfo {
    client
        .list_tables(pb::ListTablesRequest {})
        .await
        .unwrap_or_else(|status| panic!("ListTables: {status}"))
        .into_inner()
        .tables
        .remove(0)
}

/// The player's available balance once no table owes them anything: between a settlement
/// (or a clear, a void) and the wallet's acknowledgement of its credits, they show as
/// pending for a moment.
pub async fn settled_balance(client: &mut PlayerServiceClient<Authed>) -> i64 {
    let balance = crate::poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || {
            client
                .get_balance(pb::GetBalanceRequest {})
                .await
                .unwrap_or_else(|status| panic!("GetBalance: {status}"))
                .into_inner()
        },
        |b| b.pending_minor == 0,
    )
    .await;
    assert_eq!(balance.pending_minor, 0, "still owed: {balance:?}");
    balance.available_minor
}

/// Whether every bet of `reply` was accepted (and there was one).
pub fn all_accepted(reply: &pb::PlaceBetsResponse) -> bool {
    !reply.decisions.is_empty()
        && reply
            .decisions
            .iter()
            .all(|d| matches!(d.decision, Some(pb::bet_decision::Decision::Accepted(_))))
}

/// The refusals among `reply`'s decisions.
pub fn refusals(reply: &pb::PlaceBetsResponse) -> Vec<pb::Refusal> {
    reply
        .decisions
        .iter()
        .filter_map(|d| match &d.decision {
            Some(pb::bet_decision::Decision::Refusal(r)) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// One croupier command, without its ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cmd {
    OpenShoe,
    Burn(String),
    OpenBetting,
    CloseBetting,
    Deal(String),
    Confirm(String),
    Void { round_id: String, reason: String },
    EndShoe(String),
}

/// The croupier's console: TableService with numbered command ids.
#[derive(Debug)]
pub struct Croupier {
    client: TableServiceClient<Authed>,
    token: String,
    table: String,
    prefix: String,
    counter: u64,
}

impl Croupier {
    pub fn new(channel: Channel, token: &str, table: &str, prefix: &str) -> Croupier {
        Croupier {
            client: table_client(channel, token),
            token: token.to_owned(),
            table: table.to_owned(),
            prefix: prefix.to_owned(),
            counter: 0,
        }
    }

    /// Talks to a restarted broadcaster from now on; the command numbering goes on.
    pub fn reconnect(&mut self, channel: Channel) {
        self.client = table_client(channel, &self.token);
    }

    /// A fresh command id.
    pub fn next_id(&mut self) -> String {
        self.counter += 1;
        format!("{}-{}", self.prefix, self.counter)
    }

    /// Sends `cmd` under `command_id` (a resend uses the id of the first send).
    pub async fn send(&mut self, command_id: &str, cmd: &Cmd) -> Result<pb::CommandReply, Status> {
        let table_id = self.table.clone();
        let command_id = command_id.to_owned();
        let scanner = pb::CardSource::Scanner as i32;
        let reply = match cmd.clone() {
            Cmd::OpenShoe => {
                self.client
                    .open_shoe(pb::OpenShoeRequest {
                        table_id,
                        command_id,
                        config: None,
                    })
                    .await
            }
            Cmd::Burn(card) => {
                self.client
                    .burn(pb::BurnRequest {
                        table_id,
                        command_id,
                        exposed_card: card,
                        source: scanner,
                    })
                    .await
            }
            Cmd::OpenBetting => {
                self.client
                    .open_betting(pb::OpenBettingRequest {
                        table_id,
                        command_id,
                        duration_ms: 0,
                    })
                    .await
            }
            Cmd::CloseBetting => {
                self.client
                    .close_betting(pb::CloseBettingRequest {
                        table_id,
                        command_id,
                    })
                    .await
            }
            Cmd::Deal(card) => {
                self.client
                    .deal_card(pb::DealCardRequest {
                        table_id,
                        command_id,
                        card,
                        source: scanner,
                    })
                    .await
            }
            Cmd::Confirm(round_id) => {
                self.client
                    .confirm_result(pb::ConfirmResultRequest {
                        table_id,
                        command_id,
                        round_id,
                    })
                    .await
            }
            Cmd::Void { round_id, reason } => {
                self.client
                    .void_round(pb::VoidRoundRequest {
                        table_id,
                        command_id,
                        round_id,
                        reason,
                    })
                    .await
            }
            Cmd::EndShoe(reason) => {
                self.client
                    .end_shoe(pb::EndShoeRequest {
                        table_id,
                        command_id,
                        reason,
                    })
                    .await
            }
        };
        reply.map(tonic::Response::into_inner)
    }

    /// The table now (GetTable: reading it changes nothing).
    pub async fn state(&mut self) -> Result<pb::TableState, Status> {
        let request = pb::GetTableRequest {
            table_id: self.table.clone(),
        };
        Ok(self.client.get_table(request).await?.into_inner())
    }

    /// Sends `cmd` with a fresh id; the reply, refused or not.
    pub async fn command(&mut self, cmd: Cmd) -> pb::CommandReply {
        let id = self.next_id();
        self.send(&id, &cmd)
            .await
            .unwrap_or_else(|status| panic!("{cmd:?} ({id}): {status}"))
    }

    /// Sends `cmd` with a fresh id; it must be applied. The table after it.
    pub async fn ok(&mut self, cmd: Cmd) -> pb::TableState {
        let reply = self.command(cmd.clone()).await;
        if let Some(refusal) = reply.refusal {
            panic!("{cmd:?} refused: {refusal:?}");
        }
        reply
            .state
            .unwrap_or_else(|| panic!("{cmd:?}: reply without a state"))
    }

    /// Sends `cmd` with a fresh id; it must be refused. The refusal and the table.
    pub async fn refused(&mut self, cmd: Cmd) -> (pb::Refusal, pb::TableState) {
        let reply = self.command(cmd.clone()).await;
        let Some(refusal) = reply.refusal else {
            panic!("{cmd:?} was applied, but it should have been refused");
        };
        let state = reply
            .state
            .unwrap_or_else(|| panic!("{cmd:?}: reply without a state"));
        (refusal, state)
    }
}

/// A seeded shoe dealt by the croupier, round after round.
#[derive(Debug)]
pub struct Dealer {
    rng: ChaCha20Rng,
    shoe: Option<ShuffledShoe>,
    /// The hand being dealt.
    coup: Coup,
}

impl Dealer {
    pub fn new(seed: u64) -> Dealer {
        Dealer {
            rng: ChaCha20Rng::seed_from_u64(seed),
            shoe: None,
            coup: Coup::default(),
        }
    }

    /// Opens a shoe (and burns) when none is in play, then opens betting: the round id.
    pub async fn open(&mut self, croupier: &mut Croupier) -> String {
        if self.shoe.is_none() {
            croupier.ok(Cmd::OpenShoe).await;
            let mut shoe = Shoe::shuffled(ShoeConfig::default(), &mut self.rng)
                .unwrap_or_else(|e| panic!("a shoe: {e}"));
            let burn = shoe.burn().unwrap_or_else(|e| panic!("the burn: {e}"));
            croupier.ok(Cmd::Burn(burn.exposed.to_string())).await;
            self.shoe = Some(shoe);
        }
        croupier.ok(Cmd::OpenBetting).await.round_id
    }

    /// The next card out of the shoe.
    pub fn card(&mut self) -> Card {
        self.shoe
            .as_mut()
            .and_then(|shoe| shoe.next_card().ok())
            .unwrap_or_else(|| panic!("no card: open a shoe first, or it ran out"))
    }

    /// After the last card of a hand: the shoe moves on (and ends after its last hand).
    pub fn hand_done(&mut self) {
        let state = self.shoe.as_mut().map(ShuffledShoe::hand_finished);
        if matches!(state, Some(Ok(ShoeState::Ended))) {
            self.shoe = None;
        }
    }

    /// Closes betting on the round open: the table after it.
    pub async fn close(&mut self, croupier: &mut Croupier) -> pb::TableState {
        self.coup = Coup::default();
        croupier.ok(Cmd::CloseBetting).await
    }

    /// Deals the next card if the hand (as `state` shows it) is due one; whether it did.
    pub async fn deal(&mut self, croupier: &mut Croupier, state: &mut pb::TableState) -> bool {
        if state.due() == pb::Due::Complete {
            return false;
        }
        let card = self.card();
        self.coup
            .deal(card)
            .unwrap_or_else(|e| panic!("{card}: {e}"));
        *state = croupier.ok(Cmd::Deal(card.to_string())).await;
        true
    }

    /// Deals what the hand is still due, confirms the result: the hand's cards.
    pub async fn settle(
        &mut self,
        croupier: &mut Croupier,
        round_id: &str,
        mut state: pb::TableState,
    ) -> Vec<Card> {
        while self.deal(croupier, &mut state).await {}
        self.hand_done();
        let state = croupier.ok(Cmd::Confirm(round_id.to_owned())).await;
        assert_eq!(state.phase(), pb::TablePhase::Settled, "{round_id}");
        self.coup.cards().to_vec()
    }

    /// Closes betting, deals the hand and confirms it: the cards.
    pub async fn finish(&mut self, croupier: &mut Croupier, round_id: &str) -> Vec<Card> {
        let state = self.close(croupier).await;
        self.settle(croupier, round_id, state).await
    }
}

/// The table's journal record a seq falls in (`TableState.seq`, `TableEvent.seq`): its high
/// bits, as player.proto and table.proto document, so tests count records.
pub fn record_of(seq: u64) -> u64 {
    seq >> 20
}

/// A table state without what changes on every read (clocks, the last refusal shown), to
/// compare "before" and "after" a refused request.
pub fn stable(state: &pb::TableState) -> pb::TableState {
    let mut state = state.clone();
    state.server_time = None;
    state.last_refusal = None;
    state
}

/// A private event of a subscription: sent only to the player it concerns.
pub fn is_private(event: &pb::TableEvent) -> bool {
    use pb::table_event::Event as E;
    matches!(
        event.event,
        Some(
            E::BetAccepted(_)
                | E::BetRefused(_)
                | E::Settled(_)
                | E::BalanceChanged(_)
                | E::Muted(_)
        )
    )
}

/// A subscription's own control event: a snapshot, a gap, a cut-off.
pub fn is_control(event: &pb::TableEvent) -> bool {
    use pb::table_event::Event as E;
    matches!(
        event.event,
        Some(E::Snapshot(_) | E::ResumeGap(_) | E::CutOff(_))
    )
}

/// One round as the croupier dealt it.
#[derive(Debug)]
pub struct Dealt {
    pub round_id: String,
    pub cards: Vec<Card>,
}

/// Plays the shoe to its end: open, burn, then rounds (betting closes itself; each card
/// dealt as it is due; the result confirmed) until the table ends the shoe.
pub async fn play_the_shoe(croupier: &mut Croupier, order: &[Card]) -> Vec<Dealt> {
    let state = croupier.ok(Cmd::OpenShoe).await;
    assert_eq!(state.shoe_state, pb::ShoeState::AwaitingBurn as i32);
    let burn = order[0];
    let mut next = 1 + usize::from(burn_count(burn));
    croupier.ok(Cmd::Burn(burn.to_string())).await;
    let mut played = Vec::new();
    loop {
        assert!(played.len() < 200, "the shoe never ended");
        let opened = croupier.ok(Cmd::OpenBetting).await;
        let round_id = opened.round_id.clone();
        let mut state = loop {
            let state = croupier
                .state()
                .await
                .unwrap_or_else(|status| panic!("the table's state: {status}"));
            if state.phase != pb::TablePhase::BettingOpen as i32 {
                break state;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(state.round_id, round_id, "betting closed on {round_id}");
        let mut cards = Vec::new();
        while matches!(
            pb::Due::try_from(state.due),
            Ok(pb::Due::PlayerCard | pb::Due::BankerCard)
        ) {
            let card = order[next];
            next += 1;
            cards.push(card);
            state = croupier.ok(Cmd::Deal(card.to_string())).await;
        }
        let confirmed = croupier.ok(Cmd::Confirm(round_id.clone())).await;
        assert_eq!(
            confirmed.phase,
            pb::TablePhase::Settled as i32,
            "{round_id}"
        );
        played.push(Dealt { round_id, cards });
        if matches!(
            pb::ShoeState::try_from(confirmed.shoe_state),
            Ok(pb::ShoeState::Ended | pb::ShoeState::NoShoe)
        ) {
            return played;
        }
    }
}
