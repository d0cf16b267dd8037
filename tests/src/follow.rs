//! A player app that follows a table as a real one does: Subscribe, remember the last seq
//! seen, and when the stream breaks (its server killed, cut off, shut down) subscribe again
//! with that seq as `resume_from_seq`, on the next of its servers (another edge) if the
//! one it used does not answer. Everything it is sent is kept for the test to check.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use banco_wire::pb;
use banco_wire::pb::table_event::Event as E;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::Endpoint;

use crate::clients::player_client;

/// What a follower was sent, in order, over all its streams.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    pub events: Vec<pb::TableEvent>,
    /// Streams opened (the first, then each resume).
    pub streams: u32,
    /// The servers it was served by, in order (one entry per stream).
    pub servers: Vec<String>,
}

impl Seen {
    /// The seq of the last event sent (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.events.last().map_or(0, |e| e.seq)
    }

    /// The table's events, without the stream's own control events.
    pub fn table_events(&self) -> Vec<&pb::TableEvent> {
        self.events
            .iter()
            .filter(|e| !crate::clients::is_control(e))
            .collect()
    }

    /// How many events of each control kind: snapshots, resume gaps, cut-offs.
    pub fn controls(&self) -> (usize, usize, usize) {
        let count = |f: fn(&E) -> bool| {
            self.events
                .iter()
                .filter(|e| e.event.as_ref().is_some_and(f))
                .count()
        };
        (
            count(|e| matches!(e, E::Snapshot(_))),
            count(|e| matches!(e, E::ResumeGap(_))),
            count(|e| matches!(e, E::CutOff(_))),
        )
    }

    /// Whether it was sent a card dealt as `card`.
    pub fn has_card(&self, card: &str) -> bool {
        self.events.iter().any(|e| {
            matches!(&e.event, Some(E::CardDealt(d)) if d.card.as_ref().is_some_and(|c| c.card == card))
        })
    }
}

/// A player following one table; stops when dropped.
#[derive(Debug)]
pub struct Follower {
    pub player: String,
    seen: Arc<Mutex<Seen>>,
    servers: Arc<Mutex<Vec<String>>>,
    stop: watch::Sender<bool>,
    paused: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Follower {
    /// Follows `table` as `player` (whose token is `token`), first on `servers[first]`,
    /// then on each next one in turn while a server does not answer.
    pub fn start(
        servers: &[String],
        first: usize,
        player: &str,
        token: &str,
        table: &str,
    ) -> Follower {
        Follower::start_with(servers, first, player, token, table, None)
    }

    /// [`Follower::start`] with HTTP/2 receive windows of `window` bytes (a small one makes
    /// a reader that stops reading felt at once by the server).
    pub fn start_with(
        servers: &[String],
        first: usize,
        player: &str,
        token: &str,
        table: &str,
        window: Option<u32>,
    ) -> Follower {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let servers = Arc::new(Mutex::new(servers.to_vec()));
        let (stop, stopped) = watch::channel(false);
        let (paused, pause) = watch::channel(false);
        let task = tokio::spawn(follow(
            Following {
                servers: Arc::clone(&servers),
                first,
                token: token.to_owned(),
                table: table.to_owned(),
                window,
            },
            Arc::clone(&seen),
            stopped,
            pause,
        ));
        Follower {
            player: player.to_owned(),
            seen,
            servers,
            stop,
            paused,
            task: Some(task),
        }
    }

    /// Stops reading its stream (without closing anything), or reads on.
    pub fn pause(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    /// What it was sent so far.
    pub fn seen(&self) -> Seen {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Replaces the servers it may go to (a server restarted on another port).
    pub fn set_servers(&self, servers: &[String]) {
        *self
            .servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = servers.to_vec();
    }

    /// Stops following; what it was sent.
    pub async fn stop(mut self) -> Seen {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.seen()
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Where and how a follower follows.
struct Following {
    servers: Arc<Mutex<Vec<String>>>,
    first: usize,
    token: String,
    table: String,
    window: Option<u32>,
}

async fn follow(
    following: Following,
    seen: Arc<Mutex<Seen>>,
    mut stopped: watch::Receiver<bool>,
    mut paused: watch::Receiver<bool>,
) {
    let Following {
        servers,
        first,
        token,
        table,
        window,
    } = following;
    let lock = || {
        seen.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let mut at = first;
    loop {
        let url = {
            let servers = servers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            servers[at % servers.len().max(1)].clone()
        };
        let resume = lock().last_seq();
        let opened = async {
            let mut endpoint = Endpoint::from_shared(url.clone())
                .ok()?
                .connect_timeout(Duration::from_secs(1));
            if let Some(window) = window {
                endpoint = endpoint
                    .initial_stream_window_size(window)
                    .initial_connection_window_size(window);
            }
            let channel = endpoint.connect().await.ok()?;
            let mut client = player_client(channel, &token);
            let stream = client
                .subscribe(pb::SubscribeRequest {
                    table_id: table.clone(),
                    resume_from_seq: resume,
                })
                .await
                .ok()?;
            Some(stream.into_inner())
        };
        let mut stream = tokio::select! {
            () = stopping(&mut stopped) => return,
            opened = opened => match opened {
                Some(stream) => stream,
                None => {
                    // That server does not answer (killed, restarting): the next one.
                    at += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        {
            let mut seen = lock();
            seen.streams += 1;
            seen.servers.push(url.clone());
        }
        loop {
            let message = tokio::select! {
                () = stopping(&mut stopped) => return,
                message = async {
                    // Paused: the stream is left unread, and the server's window fills.
                    let _ = paused.wait_for(|p| !*p).await;
                    stream.message().await
                } => message,
            };
            match message {
                Ok(Some(event)) => lock().events.push(event),
                // Ended (cut off, shut down) or broken: resume, here first.
                Ok(None) => break,
                Err(_) => {
                    at += 1;
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Completes once the follower is told to stop (or its owner is gone).
async fn stopping(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}
