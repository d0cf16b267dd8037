//! PlayerService on an edge, but for Subscribe and WatchVideo (served from the streams and
//! the video relays): the lobby from the tables' records, and every other call forwarded
//! to the broadcaster that owns the table, in the caller's name (their own bearer token),
//! with the request as the player sent it (idempotency keys and all). What the broadcaster
//! answers is the answer.

use std::sync::Arc;
use std::time::Instant;

use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use super::upstream::as_caller;
use super::{Edge, EdgeError};
use crate::limits::CallerToken;
use crate::player_service::{subscribe_decoded, watch_decoded};
use crate::subscribe::EventStream;
use crate::video::VideoStream;

/// The edge's PlayerService.
#[derive(Debug)]
pub(crate) struct EdgePlayer {
    edge: Arc<Edge>,
}

impl EdgePlayer {
    pub(super) fn new(edge: Arc<Edge>) -> EdgePlayer {
        EdgePlayer { edge }
    }

    /// The broadcaster of the table `table_id` names, and `request` to send it.
    fn to_table<T>(
        &self,
        request: Request<T>,
        table_id: impl FnOnce(&T) -> &str,
    ) -> Result<(PlayerServiceClient<Channel>, Request<T>), Status> {
        let token = caller_token(&request)?;
        let message = request.into_inner();
        let record = self.edge.record(table_id(&message))?;
        let client = self.edge.upstreams.client(&record.owner)?;
        Ok((client, as_caller(message, &token)))
    }

    /// A broadcaster for a call about no one table (they share the players' wallet).
    fn to_any<T>(
        &self,
        request: Request<T>,
    ) -> Result<(PlayerServiceClient<Channel>, Request<T>), Status> {
        let token = caller_token(&request)?;
        let owner = self
            .edge
            .directory
            .owners()
            .into_iter()
            .next()
            .ok_or(EdgeError::NoBroadcaster)?;
        let client = self.edge.upstreams.client(&owner)?;
        Ok((client, as_caller(request.into_inner(), &token)))
    }

    /// Counts a forwarded call by its result.
    fn counted<T>(
        &self,
        rpc: &'static str,
        started: Instant,
        result: Result<T, Status>,
    ) -> Result<T, Status> {
        self.edge
            .metrics
            .forwarded
            .observe_status(rpc, &result, started.elapsed());
        result
    }
}

fn caller_token<T>(
    request: &Request<T>,
) -> Result<tonic::metadata::MetadataValue<tonic::metadata::Ascii>, Status> {
    Ok(request
        .extensions()
        .get::<CallerToken>()
        .ok_or(EdgeError::NoToken)?
        .0
        .clone())
}

/// Forwards `$request` to its table's broadcaster's `$rpc`.
macro_rules! to_table {
    ($self:ident, $rpc:ident, $request:ident) => {{
        let started = Instant::now();
        let (mut client, request) = $self.to_table($request, |r| r.table_id.as_str())?;
        let result = client.$rpc(request).await;
        $self.counted(stringify!($rpc), started, result)
    }};
}

#[tonic::async_trait]
impl pb::player_service_server::PlayerService for EdgePlayer {
    /// Every table of every broadcaster, from their records.
    async fn list_tables(
        &self,
        _request: Request<pb::ListTablesRequest>,
    ) -> Result<Response<pb::ListTablesResponse>, Status> {
        let tables = self
            .edge
            .directory
            .all()
            .into_iter()
            .filter_map(|record| record.info)
            .collect();
        Ok(Response::new(pb::ListTablesResponse { tables }))
    }

    type SubscribeStream = EventStream;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<EventStream>, Status> {
        subscribe_decoded(request, |player, request| async move {
            let token = caller_token(&request)?;
            self.edge
                .subscribe(player, token, request.into_inner())
                .await
        })
        .await
    }

    async fn place_bets(
        &self,
        request: Request<pb::PlaceBetsRequest>,
    ) -> Result<Response<pb::PlaceBetsResponse>, Status> {
        to_table!(self, place_bets, request)
    }

    async fn clear_bets(
        &self,
        request: Request<pb::ClearBetsRequest>,
    ) -> Result<Response<pb::ClearBetsResponse>, Status> {
        to_table!(self, clear_bets, request)
    }

    async fn rebet(
        &self,
        request: Request<pb::RebetRequest>,
    ) -> Result<Response<pb::PlaceBetsResponse>, Status> {
        to_table!(self, rebet, request)
    }

    async fn pass_hand(
        &self,
        request: Request<pb::PassHandRequest>,
    ) -> Result<Response<pb::PassHandResponse>, Status> {
        to_table!(self, pass_hand, request)
    }

    async fn take_seat(
        &self,
        request: Request<pb::TakeSeatRequest>,
    ) -> Result<Response<pb::SeatResponse>, Status> {
        to_table!(self, take_seat, request)
    }

    async fn leave_seat(
        &self,
        request: Request<pb::LeaveSeatRequest>,
    ) -> Result<Response<pb::SeatResponse>, Status> {
        to_table!(self, leave_seat, request)
    }

    /// One table's bets from its broadcaster; every table's when one broadcaster serves
    /// them all (a page token is one broadcaster's to read).
    async fn my_bets(
        &self,
        request: Request<pb::MyBetsRequest>,
    ) -> Result<Response<pb::MyBetsResponse>, Status> {
        if !request.get_ref().table_id.is_empty() {
            return to_table!(self, my_bets, request);
        }
        let owners = self.edge.directory.owners().len();
        if owners > 1 {
            return Err(EdgeError::ManyBroadcasters(owners).into());
        }
        let started = Instant::now();
        let (mut client, request) = self.to_any(request)?;
        let result = client.my_bets(request).await;
        self.counted("my_bets", started, result)
    }

    /// The caller's money over every broadcaster: available is the wallet's (the same at
    /// each), what is staked and owed adds up.
    async fn get_balance(
        &self,
        request: Request<pb::GetBalanceRequest>,
    ) -> Result<Response<pb::Balance>, Status> {
        let started = Instant::now();
        let token = caller_token(&request)?;
        let owners = self.edge.directory.owners();
        if owners.is_empty() {
            return Err(EdgeError::NoBroadcaster.into());
        }
        let mut total: Option<pb::Balance> = None;
        for owner in owners {
            let mut client = self.edge.upstreams.client(&owner)?;
            let result = client
                .get_balance(as_caller(pb::GetBalanceRequest {}, &token))
                .await;
            let balance = self.counted("get_balance", started, result)?.into_inner();
            total = Some(match total {
                None => balance,
                Some(sum) => pb::Balance {
                    // While one broadcaster's tables owe the player, its pair is the one
                    // that agrees with what it owes.
                    available_minor: if balance.pending_minor > 0 && sum.pending_minor == 0 {
                        balance.available_minor
                    } else {
                        sum.available_minor
                    },
                    in_play_minor: sum.in_play_minor.saturating_add(balance.in_play_minor),
                    pending_minor: sum.pending_minor.saturating_add(balance.pending_minor),
                    currency: sum.currency,
                },
            });
        }
        total
            .map(Response::new)
            .ok_or_else(|| EdgeError::NoBroadcaster.into())
    }

    /// Kept by the wallet the broadcasters share: any of them sets it.
    async fn set_self_limit(
        &self,
        request: Request<pb::SetSelfLimitRequest>,
    ) -> Result<Response<pb::SetSelfLimitResponse>, Status> {
        let started = Instant::now();
        let (mut client, request) = self.to_any(request)?;
        let result = client.set_self_limit(request).await;
        self.counted("set_self_limit", started, result)
    }

    async fn last_results(
        &self,
        request: Request<pb::LastResultsRequest>,
    ) -> Result<Response<pb::LastResultsResponse>, Status> {
        to_table!(self, last_results, request)
    }

    async fn send_chat(
        &self,
        request: Request<pb::SendChatRequest>,
    ) -> Result<Response<pb::SendChatResponse>, Status> {
        to_table!(self, send_chat, request)
    }

    type WatchVideoStream = VideoStream;

    /// Served by the WatchVideo route, which sends the relay's bytes as they are; this
    /// decoding form is for callers of the service object in the same process.
    async fn watch_video(
        &self,
        request: Request<pb::WatchVideoRequest>,
    ) -> Result<Response<VideoStream>, Status> {
        watch_decoded(&*self.edge, &request)
    }
}
