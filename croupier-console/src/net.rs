//! The gRPC task. It never touches the model: it turns the table's WatchTable stream and
//! each command's reply into [`Action`]s, and sends what `update` asks it to send.

use std::time::Duration;

use banco_auth::BearerToken;
use banco_wire::pb;
use banco_wire::pb::table_service_client::TableServiceClient;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tonic::codegen::InterceptedService;
use tonic::transport::Channel;

use crate::action::Action;
use crate::command::{Command, Pending, Source};

pub type Client = TableServiceClient<InterceptedService<Channel, BearerToken>>;

/// A command with no answer after this long is sent again (same id).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(4);

/// Starts the stream watcher and the command sender; both run until `actions` is closed.
pub fn spawn(
    client: Client,
    table_id: String,
    actions: UnboundedSender<Action>,
    commands: UnboundedReceiver<Pending>,
) {
    tokio::spawn(watch(client.clone(), table_id.clone(), actions.clone()));
    tokio::spawn(send_all(client, table_id, actions, commands));
}

/// Follows the table: its snapshot (as `Connected`), then every state; reconnects with a
/// growing pause when the stream breaks, and starts again from a fresh snapshot.
async fn watch(mut client: Client, table_id: String, actions: UnboundedSender<Action>) {
    let mut backoff = BACKOFF_MIN;
    loop {
        let request = pb::WatchTableRequest {
            table_id: table_id.clone(),
        };
        let why = match client.watch_table(request).await {
            Ok(response) => {
                let mut stream = response.into_inner();
                let mut first = true;
                loop {
                    match stream.message().await {
                        Ok(Some(state)) => {
                            let action = if first {
                                backoff = BACKOFF_MIN;
                                Action::Connected(Box::new(state))
                            } else {
                                Action::State(Box::new(state))
                            };
                            first = false;
                            if actions.send(action).is_err() {
                                return;
                            }
                        }
                        Ok(None) => break "the table closed the stream".to_owned(),
                        Err(status) => break describe(&status),
                    }
                }
            }
            Err(status) => describe(&status),
        };
        if actions.send(Action::Disconnected(why)).is_err() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// `Unavailable: connection refused`, shortened for the header.
fn describe(status: &tonic::Status) -> String {
    let message: String = status.message().chars().take(60).collect();
    format!("{:?}: {message}", status.code())
}

async fn send_all(
    client: Client,
    table_id: String,
    actions: UnboundedSender<Action>,
    mut commands: UnboundedReceiver<Pending>,
) {
    while let Some(pending) = commands.recv().await {
        // Each on its own, so that a call hanging on a dead link never holds up its resend.
        let mut client = client.clone();
        let table_id = table_id.clone();
        let actions = actions.clone();
        tokio::spawn(async move {
            let id = pending.id.clone();
            let answer =
                tokio::time::timeout(COMMAND_TIMEOUT, call(&mut client, table_id, pending)).await;
            let action = match answer {
                Ok(Ok(reply)) => Action::Reply {
                    id,
                    reply: Box::new(reply),
                },
                Ok(Err(status)) => Action::SendFailed {
                    id,
                    code: status.code(),
                    message: status.message().to_owned(),
                },
                Err(_) => Action::SendFailed {
                    id,
                    code: tonic::Code::DeadlineExceeded,
                    message: format!("no answer in {} s", COMMAND_TIMEOUT.as_secs()),
                },
            };
            let _ = actions.send(action);
        });
    }
}

fn source(source: Source) -> i32 {
    match source {
        Source::Scanner => pb::CardSource::Scanner,
        Source::Keyboard => pb::CardSource::Manual,
    }
    .into()
}

/// One command as its TableService request.
async fn call(
    client: &mut Client,
    table_id: String,
    pending: Pending,
) -> Result<pb::CommandReply, tonic::Status> {
    let command_id = pending.id;
    let reply = match pending.command {
        // `update` settles a card as burn or deal before it is sent; were one to come
        // through unsettled, the table's own state decides as a deal would.
        Command::Card { card, source: s } | Command::Deal { card, source: s } => {
            client
                .deal_card(pb::DealCardRequest {
                    table_id,
                    command_id,
                    card: card.to_string(),
                    source: source(s),
                })
                .await
        }
        Command::OpenShoe => {
            client
                .open_shoe(pb::OpenShoeRequest {
                    table_id,
                    command_id,
                    config: None,
                })
                .await
        }
        Command::Burn { card, source: s } => {
            client
                .burn(pb::BurnRequest {
                    table_id,
                    command_id,
                    exposed_card: card.to_string(),
                    source: source(s),
                })
                .await
        }
        Command::OpenBetting { duration_ms } => {
            client
                .open_betting(pb::OpenBettingRequest {
                    table_id,
                    command_id,
                    duration_ms,
                })
                .await
        }
        Command::CloseBetting => {
            client
                .close_betting(pb::CloseBettingRequest {
                    table_id,
                    command_id,
                })
                .await
        }
        Command::Undo { reason, card } => {
            client
                .undo_last_card(pb::UndoLastCardRequest {
                    table_id,
                    command_id,
                    reason,
                    card: card.to_string(),
                })
                .await
        }
        Command::Confirm { round_id } => {
            client
                .confirm_result(pb::ConfirmResultRequest {
                    table_id,
                    command_id,
                    round_id,
                })
                .await
        }
        Command::Void { round_id, reason } => {
            client
                .void_round(pb::VoidRoundRequest {
                    table_id,
                    command_id,
                    round_id,
                    reason,
                })
                .await
        }
        Command::EndShoe { reason } => {
            client
                .end_shoe(pb::EndShoeRequest {
                    table_id,
                    command_id,
                    reason,
                })
                .await
        }
        Command::Mute {
            player,
            minutes,
            reason,
        } => {
            client
                .mute_player(pb::MutePlayerRequest {
                    table_id,
                    command_id,
                    player_id: player,
                    minutes,
                    reason,
                })
                .await
        }
    };
    reply.map(tonic::Response::into_inner)
}
