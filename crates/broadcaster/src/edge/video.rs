//! Live video on an edge: one relay per table, with the broadcaster's GOP cache and
//! keyframe-skip rules (the same `VideoRelay`), fed by one WatchVideo upstream per table
//! from the table's broadcaster, opened with the edge's own `service` token when the first
//! viewer comes and closed once none is left.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use banco_wire::pb;
use tonic::Status;
use tonic::metadata::{Ascii, MetadataValue};

use super::EdgeError;
use super::directory::Directory;
use super::upstream::{Upstreams, as_caller};
use crate::metrics::VideoMetricFamilies;
use crate::video::{VideoBytes, VideoRelay};

/// How often an upstream with no unit coming looks whether it still has viewers.
const IDLE_CHECK: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct TableVideo {
    relay: Arc<VideoRelay>,
    /// Its upstream runs.
    running: AtomicBool,
}

/// Every table's video relay on this edge.
#[derive(Debug)]
pub(crate) struct EdgeVideo {
    tables: Mutex<HashMap<String, Arc<TableVideo>>>,
    directory: Arc<Directory>,
    upstreams: Arc<Upstreams>,
    /// `Bearer <the edge's service token>`.
    token: MetadataValue<Ascii>,
    metrics: VideoMetricFamilies,
}

impl EdgeVideo {
    pub(crate) fn new(
        directory: Arc<Directory>,
        upstreams: Arc<Upstreams>,
        token: MetadataValue<Ascii>,
        metrics: VideoMetricFamilies,
    ) -> EdgeVideo {
        EdgeVideo {
            tables: Mutex::new(HashMap::new()),
            directory,
            upstreams,
            token,
            metrics,
        }
    }

    /// A viewer's stream of `table_id`'s video (its upstream opened if it is not).
    pub(crate) fn watch(&self, table_id: &str) -> Result<VideoBytes, Status> {
        if table_id.is_empty() {
            return Err(EdgeError::from(banco_wire::ConversionError::missing("table_id")).into());
        }
        if self.directory.get(table_id).is_none() {
            return Err(EdgeError::UnknownTable(table_id.chars().take(64).collect()).into());
        }
        let video = {
            let mut tables = self
                .tables
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(tables.entry(table_id.to_owned()).or_insert_with(|| {
                Arc::new(TableVideo {
                    relay: Arc::new(VideoRelay::new(table_id, self.metrics.for_table(table_id))),
                    running: AtomicBool::new(false),
                })
            }))
        };
        // Watching first: the upstream sees a viewer and stays.
        let stream = video.relay.watch();
        if !video.running.swap(true, Ordering::AcqRel) {
            tokio::spawn(upstream(
                table_id.to_owned(),
                video,
                Arc::clone(&self.directory),
                Arc::clone(&self.upstreams),
                self.token.clone(),
            ));
        }
        Ok(stream)
    }

    /// Ends every viewer's stream: the edge is shutting down.
    pub(crate) fn close(&self) {
        for video in self
            .tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
        {
            video.relay.close();
        }
    }
}

/// Relays `table`'s video from its broadcaster while anyone watches it here.
async fn upstream(
    table: String,
    video: Arc<TableVideo>,
    directory: Arc<Directory>,
    upstreams: Arc<Upstreams>,
    token: MetadataValue<Ascii>,
) {
    let mut wait = Duration::from_millis(100);
    loop {
        if video.relay.viewers() == 0 {
            video.running.store(false, Ordering::Release);
            // A viewer who came just now found it running: it is this task's still.
            if video.relay.viewers() == 0 || video.running.swap(true, Ordering::AcqRel) {
                return;
            }
        }
        // The owner is read again each time: the table may have moved.
        let opened = match directory.get(&table) {
            Some(record) => match upstreams.client(&record.owner) {
                Ok(mut client) => client
                    .watch_video(as_caller(
                        pb::WatchVideoRequest {
                            table_id: table.clone(),
                        },
                        &token,
                    ))
                    .await
                    .map(tonic::Response::into_inner),
                Err(status) => Err(status),
            },
            None => Err(Status::not_found("the table left the lobby")),
        };
        match opened {
            Ok(mut units) => {
                let guard = video.relay.claim();
                loop {
                    match tokio::time::timeout(IDLE_CHECK, units.message()).await {
                        Ok(Ok(Some(unit))) => {
                            video.relay.relay(&unit);
                            wait = Duration::from_millis(100);
                        }
                        Ok(Ok(None) | Err(_)) => break,
                        Err(_) => {}
                    }
                    if video.relay.viewers() == 0 {
                        break;
                    }
                }
                // Empties the GOP: a new viewer must not start from a stream that ended.
                drop(guard);
            }
            Err(status) => {
                tracing::debug!(%table, error = %status.message(), "edge: the table's video cannot be relayed now");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
        }
    }
}
