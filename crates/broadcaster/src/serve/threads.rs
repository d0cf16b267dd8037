//! Connections served on threads of their own, one single-threaded runtime each.
//!
//! Why: the hub hands each public event once to each thread, whose relay puts it in the
//! thread's feed and wakes the thread's connections from inside it, a batch at a time
//! (see `hub::queue` and `hub::feed`), so that the connections of a batch all hand their
//! subscribers' events over before any of them writes, and no wake-up crosses threads.
//! That takes a runtime of the thread's own; on tokio's multi-threaded runtime a woken
//! connection runs on whichever worker woke it. One such runtime per core keeps both
//! cores at work; each connection stays on the thread it was given.

use std::future::Future;
use std::net::TcpStream as StdStream;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::{CONNECTION_DRAIN as DRAIN, ServeError, Shared, StartError, connection};

/// Connections waiting for their thread.
const HANDOFF: usize = 1024;

pub(super) async fn serve_on_threads(
    listener: TcpListener,
    shared: Shared,
    threads: usize,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (stop, stopped) = watch::channel(false);
    let mut queues = Vec::with_capacity(threads);
    let mut workers = Vec::with_capacity(threads);
    for i in 0..threads {
        let (queue, connections) = mpsc::channel::<StdStream>(HANDOFF);
        queues.push(queue);
        let shared = shared.clone();
        let stopped = stopped.clone();
        let worker = std::thread::Builder::new()
            .name(format!("grpc-io-{i}"))
            .spawn(move || -> Result<(), ServeError> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(StartError::Runtime)?;
                runtime.block_on(serve_thread(connections, shared, stopped));
                Ok(())
            })
            .map_err(StartError::Runtime)?;
        workers.push(worker);
    }
    tokio::pin!(shutdown);
    let mut next = 0;
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let std = match stream.into_std() {
                        Ok(std) => std,
                        Err(e) => {
                            tracing::warn!(error = %e, "could not hand a connection over");
                            continue;
                        }
                    };
                    // A worker that stopped has failed: its error is returned below.
                    if queues[next % threads].send(std).await.is_err() {
                        break;
                    }
                    next += 1;
                }
                Err(e) => {
                    // Out of file descriptors and the like: keep serving the others.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
        }
    }
    let _ = stop.send(true);
    drop(queues);
    let mut result = Ok(());
    for worker in workers {
        let joined = tokio::task::spawn_blocking(move || worker.join())
            .await
            .map_err(|e| StartError::Runtime(std::io::Error::other(e.to_string())))?;
        let failed = match joined {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(_) => Some(
                StartError::Runtime(std::io::Error::other("a connection thread panicked")).into(),
            ),
        };
        if let Some(e) = failed
            && result.is_ok()
        {
            result = Err(e);
        }
    }
    result
}

/// One thread's connections, until the server stops and they have drained (or
/// [`DRAIN`](super::CONNECTION_DRAIN) has passed).
async fn serve_thread(
    mut connections: mpsc::Receiver<StdStream>,
    shared: Shared,
    mut stopped: watch::Receiver<bool>,
) {
    crate::hub::install_relay();
    let mut served = JoinSet::new();
    loop {
        tokio::select! {
            handed = connections.recv() => match handed {
                // Registered with this thread's reactor, in this thread.
                Some(std) => match TcpStream::from_std(std).and_then(|s| {
                    // Small replies must leave at once: with Nagle on, each answer waits
                    // for the client's delayed ACK (measured: about 44 ms a card check).
                    s.set_nodelay(true)?;
                    Ok(s)
                }) {
                    Ok(stream) => {
                        served.spawn(connection::serve(stream, shared.clone(), stopped.clone()));
                    }
                    Err(e) => tracing::warn!(error = %e, "could not serve a connection"),
                },
                None => break,
            },
            Some(_) = served.join_next(), if !served.is_empty() => {}
        }
    }
    // The listener has stopped: connections end their calls, then close.
    let _ = stopped.wait_for(|stop| *stop).await;
    let drained =
        tokio::time::timeout(DRAIN, async { while served.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            connections = served.len(),
            "connections still open {DRAIN:?} after the server stopped: closed"
        );
        served.shutdown().await;
    }
}
