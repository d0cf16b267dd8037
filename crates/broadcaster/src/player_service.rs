//! PlayerService, first calls: ListTables, PlaceBets, ClearBets, Rebet, GetBalance,
//! LastResults. The player is always the token's subject. The other calls come with the
//! player fan-out and answer UNIMPLEMENTED until then.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use banco_auth::caller;
use banco_rules::roads::LAST_RESULTS_SHOWN;
use banco_rules::{BetKind, Winner};
use banco_table::actor::{ActorError, PlayerPosition, Published};
use banco_table::convert;
use banco_table::{Command, Event, Refusal, RoundId, TableSnapshot};
use banco_wallet::{Cash, Cashier, LimitChange, TxId, Wallet, WalletError};
use banco_wire::{ConversionError, pb};
use tokio::sync::broadcast::{self, error::RecvError};
use tonic::{Request, Response, Status};

use crate::error::BroadcasterError;
use crate::history;
use crate::hosted::{HostedTable, Tables};
use crate::subscribe::{EventStream, Subscription, VideoSource};
use crate::video::VideoStream;
use crate::wire;

mod decisions;

use decisions::{
    Taken, accepted, accepted_bet, original, refusal_of, refused_bet, refused_decisions,
    tell_refused, wallet_refused,
};

/// A deposit into the wallet for every player seen for the first time (demos and tests
/// play without a cashier): at most once per player, ever, by its key `welcome:<player>`.
#[derive(Clone, Debug)]
pub struct WelcomeCredit {
    /// More than zero, in minor units.
    pub amount: i64,
    pub cashier: Arc<dyn Cashier>,
}

/// The PlayerService implementation over the hosted tables.
#[derive(Debug)]
pub struct PlayerServer {
    tables: Arc<Tables>,
    welcome: Option<WelcomeCredit>,
    currency: String,
    /// Players whose welcome credit was settled in this process, so the check costs one
    /// wallet call per player, not one per bet.
    welcomed: Mutex<BTreeSet<String>>,
}

/// How long a ClearBets reply waits for the wallet to take the refunds back, so that a
/// player with a healthy wallet sees them in the balance; past it they show as owed.
const REFUNDS_WAIT: Duration = Duration::from_secs(2);

/// Waits, at most [`REFUNDS_WAIT`], until the table has journaled the wallet's
/// acknowledgement of every owed movement `owed` numbers.
async fn acknowledged(mut published: broadcast::Receiver<Arc<Published>>, mut owed: BTreeSet<u64>) {
    let all = async {
        while !owed.is_empty() {
            match published.recv().await {
                Ok(p) => {
                    for event in &p.events {
                        if let Event::WalletAcked { numbers } = event {
                            for n in numbers {
                                owed.remove(n);
                            }
                        }
                    }
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    };
    let _ = tokio::time::timeout(REFUNDS_WAIT, all).await;
}

impl PlayerServer {
    pub(crate) fn new(
        tables: Arc<Tables>,
        welcome: Option<WelcomeCredit>,
        currency: String,
    ) -> PlayerServer {
        PlayerServer {
            tables,
            welcome,
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

    /// With a welcome credit, the player's first sight here deposits it (once ever: the
    /// wallet answers the same key with its first answer).
    pub(crate) async fn welcome(&self, player: &str) -> Result<(), Status> {
        let Some(welcome) = &self.welcome else {
            return Ok(());
        };
        if self.lock_welcomed().contains(player) {
            return Ok(());
        }
        let key = TxId::new(format!("welcome:{player}"))
            .map_err(|e| Status::internal(format!("welcome credit of {player}: {e}")))?;
        match welcome
            .cashier
            .deposit(&Cash::new(&key, player, &self.currency, welcome.amount))
            .await
        {
            // A refusal (a blocked account, say) leaves the player without it, as a real
            // cashier would.
            Ok(_) => {}
            Err(e) if e.is_transient() => return Err(wallet_status(&e)),
            Err(e) => tracing::warn!(%player, error = %e, "welcome credit refused"),
        }
        self.lock_welcomed().insert(player.to_owned());
        Ok(())
    }

    /// The wallet every table here spends through (they share one).
    fn wallet(&self) -> Result<&Arc<dyn Wallet>, Status> {
        self.tables
            .all()
            .next()
            .map(|t| t.handle().wallet())
            .ok_or_else(|| Status::unavailable("no table is hosted here"))
    }

    /// The player's available balance: the wallet's word.
    pub(crate) async fn available(&self, player: &str) -> Result<i64, Status> {
        self.welcome(player).await?;
        let account = self
            .wallet()?
            .account(player, &self.currency)
            .await
            .map_err(|e| wallet_status(&e))?;
        Ok(account.balance)
    }

    fn lock_welcomed(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.welcomed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The table `table_id` names.
    pub(crate) fn table(&self, table_id: &str) -> Result<Arc<HostedTable>, Status> {
        Ok(Arc::clone(self.tables.get(table_id)?))
    }

    pub(crate) fn balance(&self, available: i64, in_play: i64, pending: i64) -> pb::Balance {
        pb::Balance {
            available_minor: available,
            in_play_minor: in_play,
            currency: self.currency.clone(),
            pending_minor: pending,
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
                pending,
                ..
            } if who == player => Some(self.balance(*balance, *in_play, *pending)),
            _ => None,
        })
    }

    /// The player's money at `table`: available (the wallet's), exactly what is staked on
    /// the round under way and what the table owes them.
    async fn money(&self, table: &HostedTable, player: &str) -> Result<pb::Balance, Status> {
        let position = table
            .handle()
            .player(player)
            .await
            .map_err(|e| table.actor_error(e))?;
        self.consistent(player, &[position]).await
    }

    /// [`PlayerServer::money`] for a reply whose decisions are made already: a wallet that
    /// cannot be read just then (often why the bets were refused) leaves the balance out of
    /// the reply instead of turning the decisions into an error.
    async fn money_after(
        &self,
        table: &HostedTable,
        player: &str,
    ) -> Result<Option<pb::Balance>, Status> {
        match self.money(table, player).await {
            Ok(balance) => Ok(Some(balance)),
            Err(status) if status.code() == tonic::Code::Unavailable => {
                tracing::debug!(%player, error = %status.message(), "a reply without the balance");
                Ok(None)
            }
            Err(status) => Err(status),
        }
    }

    /// The player's money from tables' `positions`, read before this call. The wallet's
    /// balance alone cannot be paired with what a table owes: a payout may be in it
    /// already, or not yet. So: with nothing owed, the wallet's balance, read after every
    /// acknowledgement the positions saw (so it holds every payout); while one table owes
    /// the player, that table's own pair, the balance the wallet last told it beside what
    /// it has not acknowledged since. (Two tables owing at once: the wallet's balance beside
    /// both, which may count a payout twice for that moment.)
    async fn consistent(
        &self,
        player: &str,
        positions: &[PlayerPosition],
    ) -> Result<pb::Balance, Status> {
        let overflow = || Status::internal("stakes over the tables overflow");
        let (mut in_play, mut pending) = (0i64, 0i64);
        for position in positions {
            in_play = in_play
                .checked_add(position.in_play())
                .ok_or_else(overflow)?;
            pending = pending.checked_add(position.pending).ok_or_else(overflow)?;
        }
        let mut owing = positions.iter().filter(|p| p.pending > 0);
        let available = match (owing.next(), owing.next()) {
            (
                Some(PlayerPosition {
                    balance: Some(shown),
                    ..
                }),
                None,
            ) => *shown,
            _ => self.available(player).await?,
        };
        Ok(self.balance(available, in_play, pending))
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
            pacing: pb::Pacing::from(table.config().pacing).into(),
            phase: pb::TablePhase::from(snapshot.phase).into(),
            players: state.players,
            last_results: convert::winners(last_results),
            croupier: state.croupier,
        }
    }
}

/// Subscribe for callers of a service object in the same process: the Subscribe route of
/// [`crate::subscribe::PlayerRoutes`] sends the hub's bytes as they are, this decodes them.
/// `open` opens the caller's subscription.
pub(crate) async fn subscribe_decoded<F, Fut>(
    request: Request<pb::SubscribeRequest>,
    open: F,
) -> Result<Response<EventStream>, Status>
where
    F: FnOnce(String, Request<pb::SubscribeRequest>) -> Fut,
    Fut: Future<Output = Result<Subscription, Status>>,
{
    let player = caller(&request)?.sub.clone();
    let subscription = open(player, request).await?;
    Ok(Response::new(crate::subscribe::decoded(subscription)))
}

/// WatchVideo for callers of a service object in the same process, as
/// [`subscribe_decoded`] is Subscribe: the table's video from `source`, decoded.
pub(crate) fn watch_decoded(
    source: &dyn VideoSource,
    request: &Request<pb::WatchVideoRequest>,
) -> Result<Response<VideoStream>, Status> {
    let units = source.watch(&request.get_ref().table_id)?;
    Ok(Response::new(crate::video::decoded(units)))
}

fn bad(error: ConversionError) -> Status {
    BroadcasterError::from(error).into()
}

/// A wallet that could not answer a read is unavailable; a refusal of one is a precondition
/// the message names.
pub(crate) fn wallet_status(error: &WalletError) -> Status {
    if error.is_transient() {
        Status::unavailable(format!("{error}; try again"))
    } else {
        Status::failed_precondition(error.to_string())
    }
}

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

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<EventStream>, Status> {
        subscribe_decoded(request, |player, request| async move {
            crate::subscribe::open(self, &player, request.into_inner()).await
        })
        .await
    }

    async fn place_bets(
        &self,
        request: Request<pb::PlaceBetsRequest>,
    ) -> Result<Response<pb::PlaceBetsResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let r = request.into_inner();
        let key = convert::key("idempotency_key", &r.idempotency_key).map_err(bad)?;
        if r.round_id.is_empty() {
            return Err(bad(ConversionError::missing("round_id")));
        }
        let requested = banco_wire::convert::requested_bets(r.bets).map_err(bad)?;
        self.welcome(&player).await?;
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
                if let Some(why) = wallet_refused(&events) {
                    // Its debits are being cancelled: the wallet may hold less until they
                    // are, but nothing was taken, so the answer is the balance the table
                    // showed before the request.
                    let position = table
                        .handle()
                        .player(&player)
                        .await
                        .map_err(|e| table.actor_error(e))?;
                    if let Some(shown) = position.balance {
                        told = Some(self.balance(shown, position.in_play(), position.pending));
                    }
                    // Its BetRefused events are the player's through the table's stream.
                    let refusal = convert::bet_refusal(why, &self.currency);
                    requested
                        .iter()
                        .map(|_| refused_bet(refusal.clone()))
                        .collect()
                } else {
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
            Some(balance) => Some(balance),
            None => self.money_after(&table, &player).await?,
        };
        Ok(Response::new(pb::PlaceBetsResponse {
            round_id: r.round_id,
            decisions,
            balance,
        }))
    }

    async fn clear_bets(
        &self,
        request: Request<pb::ClearBetsRequest>,
    ) -> Result<Response<pb::ClearBetsResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let r = request.into_inner();
        let key = convert::key("idempotency_key", &r.idempotency_key).map_err(bad)?;
        // The table refuses another round than the one open for bets (FAILED_PRECONDITION
        // here: the reply has no room for a refusal), deciding it as it applies the command.
        let round_id = convert::round_id("round_id", &r.round_id).map_err(bad)?;
        let command = Command::ClearBets {
            player: player.clone(),
            round_id: Some(round_id),
            key,
            now_ms: 0,
        };
        // Subscribed before the command, so the wallet's acknowledgement cannot slip by.
        let published = table.handle().subscribe();
        let applied = match table.handle().submit(None, command).await {
            Ok(applied) => applied,
            Err(e) => return Err(table.actor_error(e).into()),
        };
        // Its refunds (a retried clear's were acknowledged long ago).
        let owed: BTreeSet<u64> = if applied.replayed {
            BTreeSet::new()
        } else {
            applied
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::WalletOwed { owed } => Some(owed.iter().map(|o| o.number)),
                    _ => None,
                })
                .flatten()
                .collect()
        };
        acknowledged(published, owed).await;
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
            balance: self.money_after(&table, &player).await?,
        }))
    }

    async fn rebet(
        &self,
        request: Request<pb::RebetRequest>,
    ) -> Result<Response<pb::PlaceBetsResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let r = request.into_inner();
        let key = convert::key("idempotency_key", &r.idempotency_key).map_err(bad)?;
        // The table refuses another round than the one open for bets (WRONG_ROUND).
        let round_id = convert::round_id("round_id", &r.round_id).map_err(bad)?;
        let command = Command::Rebet {
            player: player.clone(),
            round_id: Some(round_id),
            key,
            now_ms: 0,
        };
        let decisions = match table.handle().submit(None, command).await {
            Ok(applied) => {
                let events = original(applied.events);
                if let Some(why) = wallet_refused(&events) {
                    let refusal = convert::bet_refusal(why, &self.currency);
                    return Ok(Response::new(pb::PlaceBetsResponse {
                        round_id: r.round_id,
                        decisions: vec![refused_bet(refusal)],
                        balance: self.money_after(&table, &player).await?,
                    }));
                }
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
                                code: pb::RefusalCode::from(reason).into(),
                                message: reason.to_string(),
                                field: String::new(),
                            })
                        })
                        .collect(),
                    other => vec![refused_bet(pb::Refusal::from(other))],
                }
            }
            Err(e) => return Err(table.actor_error(e).into()),
        };
        Ok(Response::new(pb::PlaceBetsResponse {
            round_id: r.round_id,
            decisions,
            balance: self.money_after(&table, &player).await?,
        }))
    }

    async fn pass_hand(
        &self,
        request: Request<pb::PassHandRequest>,
    ) -> Result<Response<pb::PassHandResponse>, Status> {
        let (player, table) = self.begin(&request, &request.get_ref().table_id)?;
        let round_id = convert::round_id("round_id", &request.get_ref().round_id).map_err(bad)?;
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

    /// The caller's money: available (the wallet's balance, the same at every table), and
    /// staked on rounds under way and owed by the tables hosted here.
    async fn get_balance(
        &self,
        request: Request<pb::GetBalanceRequest>,
    ) -> Result<Response<pb::Balance>, Status> {
        let player = caller(&request)?.sub.clone();
        // The positions first, then the wallet (see `consistent`).
        let mut positions = Vec::new();
        for table in self.tables.all() {
            let position = table
                .handle()
                .player(&player)
                .await
                .map_err(|e| table.actor_error(e))?;
            positions.push(position);
        }
        Ok(Response::new(self.consistent(&player, &positions).await?))
    }

    /// The caller's own limit per bet, kept by the wallet and in force at every table
    /// (seed 000: "all games"). A lowering takes effect at once; a raise or a removal (0)
    /// after the wallet's cooling-off, at most once a week: `pending_effective_at` says when.
    async fn set_self_limit(
        &self,
        request: Request<pb::SetSelfLimitRequest>,
    ) -> Result<Response<pb::SetSelfLimitResponse>, Status> {
        let player = caller(&request)?.sub.clone();
        let asked = request.get_ref().max_bet_minor;
        let max_bet = match asked {
            0 => None,
            n if n > 0 => Some(n),
            n => {
                return Err(bad(ConversionError::invalid(
                    "max_bet_minor",
                    n.to_string(),
                    "a positive amount in minor units, or 0 to remove the limit",
                )));
            }
        };
        let limit = self
            .wallet()?
            .set_self_limit(&LimitChange::new(
                &player,
                &self.currency,
                max_bet,
                wire::unix_ms(),
            ))
            .await
            .map_err(|e| wallet_status(&e))?;
        let (pending_max, pending_at) = match limit.pending {
            Some((max, at)) => (
                max.unwrap_or(0),
                Some(banco_wire::convert::timestamp_of_ms(at)),
            ),
            None => (0, None),
        };
        Ok(Response::new(pb::SetSelfLimitResponse {
            max_bet_minor: limit.max_bet.unwrap_or(0),
            pending_effective_at: pending_at,
            pending_max_bet_minor: pending_max,
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
            last_results: convert::winners(board.last_results(LAST_RESULTS_SHOWN)),
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
        caller(&request)?;
        watch_decoded(self, &request)
    }
}
