//! TableService: the croupier's commands, each read, submitted to the table's actor, and
//! answered with the table's state after it (or the table's refusal).

use std::pin::Pin;
use std::sync::Arc;

use banco_auth::caller;
use banco_table::actor::{ActorError, Published};
use banco_table::{Command, convert};
use banco_wire::{ConversionError, pb};
use futures::Stream;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tonic::{Request, Response, Status};

use crate::error::BroadcasterError;
use crate::hosted::{HostedTable, Tables};

/// The TableService implementation over the hosted tables.
#[derive(Clone, Debug)]
pub struct TableServer {
    tables: Arc<Tables>,
}

impl TableServer {
    pub(crate) fn new(tables: Arc<Tables>) -> TableServer {
        TableServer { tables }
    }

    /// The croupier (the token's subject), the table, and the command id of a request.
    fn begin<T>(
        &self,
        request: &Request<T>,
        table_id: &str,
        command_id: &str,
    ) -> Result<(String, &Arc<HostedTable>, String), Status> {
        let croupier = caller(request)?.sub.clone();
        let table = self.tables.get(table_id)?;
        let command_id = convert::key("command_id", command_id).map_err(BroadcasterError::from)?;
        table.note_croupier(&croupier);
        Ok((croupier, table, command_id))
    }

    /// Submits a command (or answers a refusal decided before it) and builds the reply.
    async fn submit(
        table: &HostedTable,
        command_id: String,
        built: Built,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let command = match built {
            Built::Command(command) => command,
            Built::Refused(refusal) => return Self::refused(table, refusal).await,
        };
        match table.handle().submit(Some(command_id), command).await {
            Ok(applied) => {
                table.clear_alerts();
                let state = table.table_state(&applied.snapshot, applied.seq);
                Ok(Response::new(pb::CommandReply {
                    refusal: None,
                    seq: state.seq,
                    state: Some(state),
                    replayed: applied.replayed,
                }))
            }
            Err(ActorError::Refused(refusal)) => {
                Self::refused(table, pb::Refusal::from(&refusal)).await
            }
            Err(error) => Err(table.actor_error(error).into()),
        }
    }

    /// An OK reply carrying the refusal and the (unchanged) table.
    async fn refused(
        table: &HostedTable,
        refusal: pb::Refusal,
    ) -> Result<Response<pb::CommandReply>, Status> {
        table.note_refusal(&refusal);
        let state = table.state().await?;
        Ok(Response::new(pb::CommandReply {
            refusal: Some(refusal),
            seq: state.seq,
            state: Some(state),
            replayed: false,
        }))
    }
}

/// What a request reads into: a command for the actor, or a refusal decided here (a stale
/// round id, a betting duration the table does not offer) without bothering the actor.
enum Built {
    Command(Command),
    Refused(pb::Refusal),
}

fn refusal(code: pb::RefusalCode, field: &str, message: String) -> pb::Refusal {
    pb::Refusal {
        code: code.into(),
        message,
        field: field.to_owned(),
    }
}

fn bad(error: ConversionError) -> Status {
    BroadcasterError::from(error).into()
}

type StateStream = Pin<Box<dyn Stream<Item = Result<pb::TableState, Status>> + Send>>;

#[tonic::async_trait]
impl pb::table_service_server::TableService for TableServer {
    async fn open_shoe(
        &self,
        request: Request<pb::OpenShoeRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let (by, table, id) = self.begin(
            &request,
            &request.get_ref().table_id,
            &request.get_ref().command_id,
        )?;
        let command = Command::try_from((request.get_ref(), table.shoe_config(), by.as_str()))
            .map_err(bad)?;
        Self::submit(table, id, Built::Command(command)).await
    }

    async fn burn(
        &self,
        request: Request<pb::BurnRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        let command = Command::try_from((r, by.as_str())).map_err(bad)?;
        Self::submit(table, id, Built::Command(command)).await
    }

    async fn open_betting(
        &self,
        request: Request<pb::OpenBettingRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        // The table's betting window is configured; a request may only restate it.
        let configured = table.config().policy.live_betting_ms;
        let asked = u64::from(r.duration_ms);
        let built = if asked != 0 && Some(asked) != configured {
            Built::Refused(refusal(
                pb::RefusalCode::NotAllowed,
                "duration_ms",
                match configured {
                    Some(ms) => format!(
                        "betting at this table stays open {ms} ms; {asked} ms is not offered (send 0)"
                    ),
                    None => format!(
                        "betting at this table stays open until the croupier closes it; \
                         a {asked} ms window is not offered (send 0)"
                    ),
                },
            ))
        } else {
            Built::Command(Command::OpenBetting { by, now_ms: 0 })
        };
        Self::submit(table, id, built).await
    }

    async fn close_betting(
        &self,
        request: Request<pb::CloseBettingRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        Self::submit(
            table,
            id,
            Built::Command(Command::CloseBetting { by, now_ms: 0 }),
        )
        .await
    }

    async fn deal_card(
        &self,
        request: Request<pb::DealCardRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (_, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        let command = Command::try_from(r).map_err(bad)?;
        Self::submit(table, id, Built::Command(command)).await
    }

    async fn undo_last_card(
        &self,
        request: Request<pb::UndoLastCardRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        let command = Command::try_from((r, by.as_str())).map_err(bad)?;
        // The safety check: the card named must be the last one dealt.
        let mut built = Built::Command(command);
        if !r.card.is_empty() {
            let (_, snapshot) = table.snapshot().await?;
            let last = snapshot.cards.last().map(|d| d.card.to_string());
            if last.as_deref() != Some(r.card.as_str()) {
                built = Built::Refused(refusal(
                    pb::RefusalCode::NothingToUndo,
                    "card",
                    match last {
                        Some(last) => {
                            format!("cannot take back {}: the last card dealt is {last}", r.card)
                        }
                        None => format!(
                            "cannot take back {}: no card of this round has been dealt",
                            r.card
                        ),
                    },
                ));
            }
        }
        Self::submit(table, id, built).await
    }

    async fn confirm_result(
        &self,
        request: Request<pb::ConfirmResultRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        // The table refuses any other round than the one in play (WRONG_ROUND), deciding it
        // as it applies the command, so the round cannot change in between.
        let command = Command::try_from((r, by.as_str())).map_err(bad)?;
        Self::submit(table, id, Built::Command(command)).await
    }

    async fn void_round(
        &self,
        request: Request<pb::VoidRoundRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        // As for ConfirmResult, the table checks the round.
        let command = Command::try_from((r, by.as_str())).map_err(bad)?;
        Self::submit(table, id, Built::Command(command)).await
    }

    async fn end_shoe(
        &self,
        request: Request<pb::EndShoeRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        // A shoe that runs out ends by itself, so a croupier ends one early: the contract
        // requires a reason then. The table journals it and puts it in its ShoeEnded event.
        let reason = convert::reason("reason", &r.reason).map_err(bad)?;
        tracing::info!(table = table.id(), croupier = %by, %reason, "croupier ends the shoe");
        let command = Command::EndShoe {
            reason,
            by,
            now_ms: 0,
        };
        Self::submit(table, id, Built::Command(command)).await
    }

    async fn mute_player(
        &self,
        request: Request<pb::MutePlayerRequest>,
    ) -> Result<Response<pb::CommandReply>, Status> {
        let r = request.get_ref();
        let (by, table, id) = self.begin(&request, &r.table_id, &r.command_id)?;
        if r.player_id.is_empty() {
            return Err(bad(ConversionError::missing("player_id")));
        }
        // Lifting a mute needs no reason; a mute does (it is journaled and told to the
        // player).
        let reason = if r.minutes == 0 {
            r.reason.trim().to_owned()
        } else {
            convert::reason("reason", &r.reason).map_err(bad)?
        };
        tracing::info!(table = table.id(), croupier = %by, player = %r.player_id, minutes = r.minutes, "croupier mutes a player");
        let command = Command::MutePlayer {
            player: r.player_id.clone(),
            minutes: r.minutes,
            reason,
            by,
            now_ms: 0,
        };
        Self::submit(table, id, Built::Command(command)).await
    }

    type WatchTableStream = StateStream;

    async fn get_table(
        &self,
        request: Request<pb::GetTableRequest>,
    ) -> Result<Response<pb::TableState>, Status> {
        caller(&request)?;
        let table = self.tables.get(&request.get_ref().table_id)?;
        Ok(Response::new(table.state().await?))
    }

    async fn watch_table(
        &self,
        request: Request<pb::WatchTableRequest>,
    ) -> Result<Response<StateStream>, Status> {
        caller(&request)?;
        let table = Arc::clone(self.tables.get(&request.get_ref().table_id)?);
        // Subscribe before reading the state, so that no change falls between the two.
        let receiver = table.handle().subscribe();
        let first = table.state().await?;
        let watch = Watch {
            last_seq: first.seq,
            first: Some(first),
            receiver,
            table,
        };
        // Ends when the broadcaster shuts down, so that its connections can drain (the
        // camera's overlay keeps one open for as long as it runs).
        let closing = Box::pin(watch.table.closing());
        let stream = futures::stream::unfold(Some((watch, closing)), |state| async move {
            let (mut watch, mut closing) = state?;
            let next = tokio::select! {
                biased;
                () = &mut closing => return None,
                next = watch.next() => next,
            };
            match next {
                Some(Ok(state)) => Some((Ok(state), Some((watch, closing)))),
                // The stream ends after an error.
                Some(Err(status)) => Some((Err(status), None)),
                None => None,
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

/// One WatchTable stream: the state now, then the state after each published change.
struct Watch {
    first: Option<pb::TableState>,
    receiver: broadcast::Receiver<Arc<Published>>,
    table: Arc<HostedTable>,
    /// The seq of the last state sent (the subscribers' numbering).
    last_seq: u64,
}

impl Watch {
    async fn next(&mut self) -> Option<Result<pb::TableState, Status>> {
        if let Some(first) = self.first.take() {
            return Some(Ok(first));
        }
        loop {
            let state = match self.receiver.recv().await {
                // Already reflected in the first state.
                Ok(published) if crate::hub::through(published.seq) <= self.last_seq => continue,
                Ok(published) => self.table.table_state(&published.snapshot, published.seq),
                // Too slow for the table: skip to the state now rather than die.
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(table = self.table.id(), missed, "watcher lagged");
                    match self.table.state().await {
                        Ok(state) => state,
                        Err(status) => return Some(Err(status)),
                    }
                }
                Err(RecvError::Closed) => return None,
            };
            self.last_seq = state.seq;
            return Some(Ok(state));
        }
    }
}
