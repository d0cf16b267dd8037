//! PlayerService, first calls: ListTables, PlaceBets, ClearBets, Rebet, GetBalance,
//! LastResults. The player is always the token's subject. The other calls come with the
//! player fan-out and answer UNIMPLEMENTED until then.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use banco_auth::caller;
use banco_rules::roads::LAST_RESULTS_SHOWN;
use banco_rules::{BetKind, Winner};
use banco_table::actor::ActorError;
use banco_table::book::{PositionRefusal, Raise, Stakes};
use banco_table::{Command, Event, Pacing, Refusal, RoundId, TableSnapshot};
use banco_wire::{ConversionError, pb};
use futures::Stream;
use tonic::{Request, Response, Status};

use crate::error::BroadcasterError;
use crate::history;
use crate::hosted::{HostedTable, Tables};
use crate::wire;

/// The PlayerService implementation over the hosted tables.
#[derive(Debug)]
pub struct PlayerServer {
    tables: Arc<Tables>,
    welcome_credit: i64,
    currency: String,
    /// (table, player) pairs whose welcome credit was settled in this process, so the
    /// check costs one actor round trip per player, not one per bet.
    welcomed: Mutex<BTreeSet<(String, String)>>,
}

impl PlayerServer {
    pub(crate) fn new(tables: Arc<Tables>, welcome_credit: i64, currency: String) -> PlayerServer {
        PlayerServer {
            tables,
            welcome_credit,
            currency,
            welcomed: Mutex::new(BTreeSet::new()),
        }
    }

    /// The player and the table of a request.
    fn begin<T>(
        &self,
        request: &Request<T>,
        table_id: &str,
    ) -> Result<(String, Arc<HostedTable>), Status> {
        let player = caller(request)?.sub.clone();
        let table = Arc::clone(self.tables.get(table_id)?);
        Ok((player, table))
    }

    /// With `--welcome-credit`, a player without money at a table gets one journaled
    /// deposit there (key `welcome:{player}`, so at most once per player and table, ever),
    /// so that demos and tests can play without a cashier.
    async fn welcome(&self, table: &HostedTable, player: &str) -> Result<(), Status> {
        if self.welcome_credit <= 0 {
            return Ok(());
        }
        let pair = (table.id().to_owned(), player.to_owned());
        if self.lock_welcomed().contains(&pair) {
            return Ok(());
        }
        let handle = table.handle();
        let balance = handle
            .balance(player)
            .await
            .map_err(|e| table.actor_error(e))?;
        if balance == 0 {
            let deposit = Command::Deposit {
                player: player.to_owned(),
                amount: self.welcome_credit,
                key: format!("welcome:{player}"),
                now_ms: 0,
            };
            match handle.submit(None, deposit).await {
                // A refusal (the key already used for another amount) leaves the player
                // without the credit, as a real cashier would.
                Ok(_) | Err(ActorError::Refused(_)) => {}
                Err(e) => return Err(table.actor_error(e).into()),
            }
        }
        self.lock_welcomed().insert(pair);
        Ok(())
    }

    fn lock_welcomed(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.welcomed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The table `table_id` names.
    pub(crate) fn table(&self, table_id: &str) -> Result<Arc<HostedTable>, Status> {
        Ok(Arc::clone(self.tables.get(table_id)?))
    }

    pub(crate) fn balance(&self, available: i64, in_play: i64) -> pb::Balance {
        pb::Balance {
            available_minor: available,
            in_play_minor: in_play,
            currency: self.currency.clone(),
        }
    }

    /// The caller's seat after a seat command, with the table's refusal if any.
    async fn seat_response(
        &self,
        table: &HostedTable,
        player: &str,
        refusal: Option<pb::Refusal>,
    ) -> Result<Response<pb::SeatResponse>, Status> {
        let joined = table
            .handle()
            .join(player)
            .await
            .map_err(|e| table.actor_error(e))?;
        Ok(Response::new(pb::SeatResponse {
            seat: joined.seat.map_or(0, u32::from),
            refusal,
        }))
    }

    /// The balance an accepted command's events told `player` (the last BalanceChanged).
    fn told_balance(&self, events: &[Event], player: &str) -> Option<pb::Balance> {
        events.iter().rev().find_map(|e| match e {
            Event::BalanceChanged {
                player: who,
                balance,
                in_play,
                ..
            } if who == player => Some(self.balance(*balance, *in_play)),
            _ => None,
        })
    }

    /// The player's money at the table: available, and exactly what is staked on the round
    /// under way, read together from the actor.
    async fn money(&self, table: &HostedTable, player: &str) -> Result<pb::Balance, Status> {
        let position = table
            .handle()
            .player(player)
            .await
            .map_err(|e| table.actor_error(e))?;
        Ok(self.balance(position.balance, position.in_play()))
    }

    /// The lobby's entry for `table`, as `snapshot` shows it.
    pub(crate) fn info(
        &self,
        table: &HostedTable,
        snapshot: &TableSnapshot,
        last_results: &[Winner],
    ) -> pb::TableInfo {
        let policy = &table.config().policy;
        let state = table.decorate(pb::TableState::default());
        let seats_taken = state.seats.iter().filter(|s| !s.is_empty()).count();
        pb::TableInfo {
            table_id: table.id().to_owned(),
            name: table.id().to_owned(),
            currency: self.currency.clone(),
            limits: BetKind::ALL
                .into_iter()
                .map(|kind| {
                    let limits = policy.limits_of(kind);
                    pb::PositionLimit {
                        kind: pb::BetKind::from(kind).into(),
                        min_minor: limits.min,
                        max_minor: limits.max,
                    }
                })
                .collect(),
            paytable: Some(pb::Paytable::from(&policy.paytable)),
            decks: u32::from(table.shoe_config().decks),
            seats: u32::from(policy.seats),
            seats_taken: u32::try_from(seats_taken).unwrap_or(u32::MAX),
            pacing: pacing_to_pb(table.config().pacing).into(),
            phase: wire::phase_to_pb(snapshot.phase).into(),
            players: state.players,
            last_results: winners_to_pb(last_results),
            croupier: state.croupier,
        }
    }
}

pub(crate) fn winners_to_pb(results: &[Winner]) -> Vec<i32> {
    results
        .iter()
        .map(|&w| pb::Winner::from(w).into())
        .collect()
}

fn pacing_to_pb(pacing: Pacing) -> pb::Pacing {
    match pacing {
        Pacing::Live => pb::Pacing::Live,
        Pacing::AutomatedMultiplayer => pb::Pacing::AutomatedMultiplayer,
        Pacing::SinglePlayer => pb::Pacing::SinglePlayer,
    }
}

/// The events of an answer; for a retried request, those of the original answer.
fn original(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .flat_map(|e| match e {
            Event::Replayed { original, .. } => original,
            other => vec![other],
        })
        .collect()
}

/// What the table took of a bet request.
struct Taken<'a> {
    /// The amount added to each position, after raises.
    added: &'a [(BetKind, i64)],
    raised: &'a [Raise],
    /// The player's stakes in the round after the request.
    stakes: &'a Stakes,
}

fn accepted(events: &[Event]) -> Option<Taken<'_>> {
    events.iter().find_map(|e| match e {
        Event::BetsAccepted {
            bets,
            raised,
            stakes,
            ..
        } => Some(Taken {
            added: bets,
            raised,
            stakes,
        }),
        _ => None,
    })
}

fn accepted_bet(kind: BetKind, requested: i64, added: i64, stakes: &Stakes) -> pb::BetDecision {
    pb::BetDecision {
        decision: Some(pb::bet_decision::Decision::Accepted(pb::AcceptedBet {
            kind: pb::BetKind::from(kind).into(),
            requested_minor: requested,
            accepted_minor: added,
            position_total_minor: stakes.get(&kind).copied().unwrap_or(0),
        })),
    }
}

fn refused_bet(refusal: pb::Refusal) -> pb::BetDecision {
    pb::BetDecision {
        decision: Some(pb::bet_decision::Decision::Refusal(refusal)),
    }
}

/// The decision on each requested bet of a refused request. The table takes a request
/// all or nothing: a bet with its own reason gets it; the others say why they were not
/// placed either.
fn refused_decisions(requested: &[(BetKind, i64)], refusal: &Refusal) -> Vec<pb::BetDecision> {
    let whole = wire::refusal_to_pb(refusal);
    let reasons: &[PositionRefusal] = match refusal {
        Refusal::Bets { reasons, .. } => &reasons.0,
        _ => &[],
    };
    requested
        .iter()
        .enumerate()
        .map(|(i, &(kind, _))| {
            let own = reasons.iter().find(|r| wire::position_kind(r) == kind);
            refused_bet(match (own, reasons.is_empty()) {
                (Some(reason), _) => pb::Refusal {
                    code: wire::position_code(reason).into(),
                    message: reason.to_string(),
                    field: format!("bets[{i}].stake_minor"),
                },
                (None, false) => pb::Refusal {
                    code: pb::RefusalCode::NotAllowed.into(),
                    message: format!(
                        "{kind} not placed: a request is taken all or nothing, and {whole_message}",
                        whole_message = whole.message
                    ),
                    field: format!("bets[{i}]"),
                },
                (None, true) => whole.clone(),
            })
        })
        .collect()
}

/// The table's refusal of a command, as the reply carries it; other failures are errors.
fn refusal_of(
    table: &HostedTable,
    result: Result<banco_table::Applied, ActorError>,
) -> Result<Option<pb::Refusal>, Status> {
    match result {
        Ok(_) => Ok(None),
        Err(ActorError::Refused(refusal)) => Ok(Some(wire::refusal_to_pb(&refusal))),
        Err(e) => Err(table.actor_error(e).into()),
    }
}

/// A refused bet request also reaches the player's event stream (BetRefused), one event
/// per requested bet, so that every screen of the player shows it.
fn tell_refused(
    table: &HostedTable,
    player: &str,
    round_id: &str,
    key: &str,
    requested: &[(BetKind, i64)],
    decisions: &[pb::BetDecision],
) {
    let Ok(hub) = table.hub() else {
        return;
    };
    for (&(kind, stake), decision) in requested.iter().zip(decisions) {
        if let Some(pb::bet_decision::Decision::Refusal(refusal)) = &decision.decision {
            hub.tell(
                player,
                round_id,
                pb::table_event::Event::BetRefused(pb::BetRefused {
                    idempotency_key: key.to_owned(),
                    bet: Some(pb::Bet {
                        kind: pb::BetKind::from(kind).into(),
                        stake_minor: stake,
                    }),
                    refusal: Some(refusal.clone()),
                }),
            );
        }
    }
}

fn bad(error: ConversionError) -> Status {
    BroadcasterError::from(error).into()
}

type EventStream = Pin<Box<dyn Stream<Item = Result<pb::TableEvent, Status>> + Send>>;
type VideoStream = Pin<Box<dyn Stream<Item = Result<pb::VideoAccessUnit, Status>> + Send>>;

#[tonic::async_trait]
impl pb::player_service_server::PlayerService for PlayerServer {
    async fn list_tables(
        &self,
        request: Request<pb::ListTablesRequest>,
    ) -> Result<Response<pb::ListTablesResponse>, Status> {
        caller(&request)?;
        let mut tables = Vec::new();
        for table in self.tables.all() {
            let (_, snapshot) = table.snapshot().await?;
            tables.push(self.info(table, &snapshot, snapshot.last_results()));
        }
        Ok(Response::new(pb::ListTablesResponse { tables }))
    }

    type SubscribeStream = EventStream;

    /// Served by [`crate::subscribe::PlayerRoutes`], which sends the hub's bytes as they
    /// are; this decoding form is for callers of the service object in the same process.
    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<EventStream>, Status> {
        use futures::StreamExt as _;
        use prost::Message as _;
        let player = caller(&request)?.sub.clone();
        let bytes = crate::subscribe::open(self, &player, request.into_inner()).await?;
        let events = bytes.map(|item| {
            item.and_then(|bytes| {
                pb::TableEvent::decode(bytes.slice(crate::subscribe::GRPC_HEADER..))
                    .map_err(|e| Status::internal(format!("an encoded event did not decode: {e}")))
            })
        });
        Ok(Response::new(Box::pin(events)))
    }

    async fn place_bets(
        &self,
        request: Request<pb::PlaceBetsRequest>,
    ) -> Result<Response<pb::PlaceBetsResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let r = request.into_inner();
        let key = wire::key("idempotency_key", &r.idempotency_key).map_err(bad)?;
        if r.round_id.is_empty() {
            return Err(bad(ConversionError::missing("round_id")));
        }
        let requested = banco_wire::convert::requested_bets(r.bets).map_err(bad)?;
        self.welcome(&table, &player).await?;
        let command = Command::PlaceBets {
            player: player.clone(),
            round_id: RoundId::from(r.round_id.as_str()),
            bets: requested.clone(),
            key,
            now_ms: 0,
        };
        let mut told = None;
        let decisions = match table.handle().submit(None, command).await {
            Ok(applied) => {
                let events = original(applied.events);
                told = self.told_balance(&events, &player);
                let Some(Taken { added, stakes, .. }) = accepted(&events) else {
                    return Err(Status::internal(
                        "the table accepted bets without saying which",
                    ));
                };
                requested
                    .iter()
                    .map(|&(kind, asked)| {
                        let add = added.iter().find(|(k, _)| *k == kind).map_or(0, |b| b.1);
                        accepted_bet(kind, asked, add, stakes)
                    })
                    .collect()
            }
            Err(ActorError::Refused(refusal)) => {
                let decisions = refused_decisions(&requested, &refusal);
                tell_refused(
                    &table,
                    &player,
                    &r.round_id,
                    &r.idempotency_key,
                    &requested,
                    &decisions,
                );
                decisions
            }
            Err(e) => return Err(table.actor_error(e).into()),
        };
        // The accepted bet's own BalanceChanged says the balance (one actor round trip,
        // not two: this is the hottest call); a refusal changed nothing, so ask.
        let balance = match told {
            Some(balance) => balance,
            None => self.money(&table, &player).await?,
        };
        Ok(Response::new(pb::PlaceBetsResponse {
            round_id: r.round_id,
            decisions,
            balance: Some(balance),
        }))
    }

    async fn clear_bets(
        &self,
        request: Request<pb::ClearBetsRequest>,
    ) -> Result<Response<pb::ClearBetsResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let r = request.into_inner();
        let key = wire::key("idempotency_key", &r.idempotency_key).map_err(bad)?;
        // The table refuses another round than the one open for bets (FAILED_PRECONDITION
        // here: the reply has no room for a refusal), deciding it as it applies the command.
        let round_id = wire::round_id("round_id", &r.round_id).map_err(bad)?;
        let command = Command::ClearBets {
            player: player.clone(),
            round_id: Some(round_id),
            key,
            now_ms: 0,
        };
        let applied = match table.handle().submit(None, command).await {
            Ok(applied) => applied,
            Err(e) => return Err(table.actor_error(e).into()),
        };
        let cleared = original(applied.events)
            .into_iter()
            .find_map(|e| match e {
                Event::BetsCleared { refunded, .. } => Some(refunded),
                _ => None,
            })
            .unwrap_or_default();
        Ok(Response::new(pb::ClearBetsResponse {
            cleared: cleared
                .into_iter()
                .map(|(kind, stake)| pb::Bet {
                    kind: pb::BetKind::from(kind).into(),
                    stake_minor: stake,
                })
                .collect(),
            balance: Some(self.money(&table, &player).await?),
        }))
    }

    async fn rebet(
        &self,
        request: Request<pb::RebetRequest>,
    ) -> Result<Response<pb::PlaceBetsResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let r = request.into_inner();
        let key = wire::key("idempotency_key", &r.idempotency_key).map_err(bad)?;
        // The table refuses another round than the one open for bets (WRONG_ROUND).
        let round_id = wire::round_id("round_id", &r.round_id).map_err(bad)?;
        let command = Command::Rebet {
            player: player.clone(),
            round_id: Some(round_id),
            key,
            now_ms: 0,
        };
        let decisions = match table.handle().submit(None, command).await {
            Ok(applied) => {
                let events = original(applied.events);
                let Some(Taken {
                    added,
                    raised,
                    stakes,
                }) = accepted(&events)
                else {
                    return Err(Status::internal(
                        "the table accepted bets without saying which",
                    ));
                };
                added
                    .iter()
                    .map(|&(kind, add)| {
                        let asked = raised
                            .iter()
                            .find(|r| r.kind == kind)
                            .map_or(add, |r| r.asked);
                        accepted_bet(kind, asked, add, stakes)
                    })
                    .collect()
            }
            Err(ActorError::Refused(refusal)) => {
                match &refusal {
                    // One decision per refused position of the previous round's bets.
                    Refusal::Bets { reasons, .. } => reasons
                        .0
                        .iter()
                        .map(|reason| {
                            refused_bet(pb::Refusal {
                                code: wire::position_code(reason).into(),
                                message: reason.to_string(),
                                field: String::new(),
                            })
                        })
                        .collect(),
                    other => vec![refused_bet(wire::refusal_to_pb(other))],
                }
            }
            Err(e) => return Err(table.actor_error(e).into()),
        };
        Ok(Response::new(pb::PlaceBetsResponse {
            round_id: r.round_id,
            decisions,
            balance: Some(self.money(&table, &player).await?),
        }))
    }

    async fn pass_hand(
        &self,
        request: Request<pb::PassHandRequest>,
    ) -> Result<Response<pb::PassHandResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let round_id = wire::round_id("round_id", &request.get_ref().round_id).map_err(bad)?;
        let command = Command::PassHand {
            player,
            round_id,
            now_ms: 0,
        };
        let refusal = refusal_of(&table, table.handle().submit(None, command).await)?;
        Ok(Response::new(pb::PassHandResponse { refusal }))
    }

    async fn take_seat(
        &self,
        request: Request<pb::TakeSeatRequest>,
    ) -> Result<Response<pb::SeatResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let seat = u8::try_from(request.get_ref().seat).map_err(|_| {
            bad(ConversionError::invalid(
                "seat",
                request.get_ref().seat.to_string(),
                "a seat number from 1 to the table's seats, or 0 for any free seat",
            ))
        })?;
        let command = Command::TakeSeat {
            player: player.clone(),
            seat,
            now_ms: 0,
        };
        let refusal = refusal_of(&table, table.handle().submit(None, command).await)?;
        self.seat_response(&table, &player, refusal).await
    }

    async fn leave_seat(
        &self,
        request: Request<pb::LeaveSeatRequest>,
    ) -> Result<Response<pb::SeatResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let command = Command::LeaveSeat {
            player: player.clone(),
            now_ms: 0,
        };
        let refusal = refusal_of(&table, table.handle().submit(None, command).await)?;
        self.seat_response(&table, &player, refusal).await
    }

    /// The caller's bets, newest first, over one table or every table, paged. The page
    /// token holds where each table's list stopped.
    async fn my_bets(
        &self,
        request: Request<pb::MyBetsRequest>,
    ) -> Result<Response<pb::MyBetsResponse>, Status> {
        let player = caller(&request)?.sub.clone();
        let r = request.into_inner();
        let size = match r.page_size {
            0 => 20,
            n @ 1..=100 => n as usize,
            n => {
                return Err(bad(ConversionError::invalid(
                    "page_size",
                    n.to_string(),
                    "1 to 100 (0 means 20)",
                )));
            }
        };
        let tables: Vec<Arc<HostedTable>> = if r.table_id.is_empty() {
            self.tables.all().cloned().collect()
        } else {
            vec![self.table(&r.table_id)?]
        };
        let cursors = history::parse_token(&r.page_token).map_err(bad)?;
        let mut lists = Vec::new();
        for table in &tables {
            let before = cursors.get(table.id()).cloned();
            if before.as_ref().is_some_and(|c| c.is_none()) {
                // This table's list was exhausted on an earlier page.
                continue;
            }
            let entries = table
                .handle()
                .history(&player, before.flatten(), size + 1)
                .await
                .map_err(|e| table.actor_error(e))?;
            lists.push((table.id().to_owned(), entries));
        }
        let page = history::merge(lists, &cursors, size);
        Ok(Response::new(pb::MyBetsResponse {
            entries: page
                .entries
                .iter()
                .map(|(table, entry)| history::entry_to_pb(table, entry))
                .collect(),
            next_page_token: page.next_token,
        }))
    }

    /// The caller's money over every table hosted here: available, and staked on rounds
    /// under way (each table's exact stakes of the caller).
    async fn get_balance(
        &self,
        request: Request<pb::GetBalanceRequest>,
    ) -> Result<Response<pb::Balance>, Status> {
        let player = caller(&request)?.sub.clone();
        let (mut available, mut in_play) = (0i64, 0i64);
        let overflow = || Status::internal("balances over the tables overflow");
        for table in self.tables.all() {
            // A welcome credit due is the player's already: deposited now (once, as a
            // first bet would), so the balance a player reads before betting is true.
            self.welcome(table, &player).await?;
            let here = self.money(table, &player).await?;
            available = available
                .checked_add(here.available_minor)
                .ok_or_else(overflow)?;
            in_play = in_play
                .checked_add(here.in_play_minor)
                .ok_or_else(overflow)?;
        }
        Ok(Response::new(self.balance(available, in_play)))
    }

    /// Lowers the caller's own limit on every table hosted here (RULES.md: it applies on
    /// every table). Raising or removing it is refused with the reason: a player's limit
    /// only goes down, at most once a week.
    async fn set_self_limit(
        &self,
        request: Request<pb::SetSelfLimitRequest>,
    ) -> Result<Response<pb::SetSelfLimitResponse>, Status> {
        let player = caller(&request)?.sub.clone();
        let asked = request.get_ref().max_bet_minor;
        let mut in_force = None;
        for table in self.tables.all() {
            let command = Command::SetSelfLimit {
                player: player.clone(),
                max_bet_minor: asked,
                now_ms: 0,
            };
            match table.handle().submit(None, command).await {
                Ok(_) => {}
                Err(ActorError::Refused(refusal)) => {
                    return Err(Status::failed_precondition(refusal.to_string()));
                }
                Err(e) => return Err(table.actor_error(e).into()),
            }
            let position = table
                .handle()
                .player(&player)
                .await
                .map_err(|e| table.actor_error(e))?;
            in_force = in_force.or(position.self_limit);
        }
        Ok(Response::new(pb::SetSelfLimitResponse {
            max_bet_minor: in_force.unwrap_or(0),
            pending_effective_at: None,
            pending_max_bet_minor: 0,
        }))
    }

    /// The shoe's last results (up to 59, oldest first) and its roads; voided rounds have
    /// no result. After a shoe ends, its results stay until the next shoe opens.
    async fn last_results(
        &self,
        request: Request<pb::LastResultsRequest>,
    ) -> Result<Response<pb::LastResultsResponse>, Status> {
        let (_, table) = self.begin(&request, &request.get_ref().table_id)?;
        let board = table
            .handle()
            .scoreboard()
            .await
            .map_err(|e| table.actor_error(e))?;
        Ok(Response::new(pb::LastResultsResponse {
            last_results: winners_to_pb(board.last_results(LAST_RESULTS_SHOWN)),
            roads: Some(pb::Roads::from(&board)),
        }))
    }

    async fn send_chat(
        &self,
        request: Request<pb::SendChatRequest>,
    ) -> Result<Response<pb::SendChatResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let command = Command::Chat {
            player,
            text: request.into_inner().text,
            now_ms: 0,
        };
        let refusal = refusal_of(&table, table.handle().submit(None, command).await)?;
        Ok(Response::new(pb::SendChatResponse { refusal }))
    }

    type WatchVideoStream = VideoStream;

    /// Served by [`crate::subscribe::PlayerRoutes`], which sends the relay's bytes as they
    /// are; this decoding form is for callers of the service object in the same process.
    async fn watch_video(
        &self,
        request: Request<pb::WatchVideoRequest>,
    ) -> Result<Response<VideoStream>, Status> {
        use futures::StreamExt as _;
        use prost::Message as _;
        caller(&request)?;
        let table = self.table(&request.get_ref().table_id)?;
        let units = table.video().watch().map(|item| {
            item.and_then(|bytes| {
                pb::VideoAccessUnit::decode(bytes)
                    .map_err(|e| Status::internal(format!("a relayed unit did not decode: {e}")))
            })
        });
        Ok(Response::new(Box::pin(units)))
    }
}
