//! A clip of every round: the table's video from betting closed to the result, as MP4
//! named by the round id, for the archive (regulators require video of every game).
//! A round gets no clip when no camera was publishing as its betting closed.
//!
//! [`TableClips`] watches the table's events. At BettingClosed it starts a recorder and
//! seeds it with the relay's GOP cache, so the clip begins at a keyframe and decodes; every
//! unit relayed after that goes into it; at the round's Result (or its void) it records
//! [`CLIP_TAIL`] more, so the last cards and the result are on screen, then finishes the
//! file (`<round_id>.mp4`, written as `.<round_id>.mp4.part` until complete) and records
//! its size and SHA-256 in the [`ClipStore`], where the archive sink finds it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use banco_streaming::{Recorder, RecorderOptions};
use banco_table::Event;
use banco_table::actor::TableHandle;
use banco_wire::pb;
use sha2::{Digest as _, Sha256};
use tokio::sync::Notify;
use tokio::sync::broadcast::error::RecvError;

use super::VideoRelay;
use crate::metrics::VideoMetrics;

/// Video kept after the result: the video trails the table's events by the capture and
/// network delay, and the result should be seen on the table.
pub const CLIP_TAIL: Duration = Duration::from_secs(1);

/// Rounds whose clip state is kept in memory before the finished ones are forgotten.
const KEPT_STATES: usize = 1024;

/// A finished clip file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipFile {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub sha256: Vec<u8>,
}

#[derive(Debug)]
enum ClipState {
    Recording,
    Done(ClipFile),
    /// No clip: why (no video during the round, or the recorder failed).
    Missing(String),
}

/// The clips of every table of a broadcaster: the folder, and what is being recorded.
#[derive(Debug)]
pub struct ClipStore {
    dir: PathBuf,
    states: Mutex<HashMap<String, ClipState>>,
    changed: Notify,
}

/// Why the clip folder cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("clip folder {dir}: {source}")]
pub struct ClipStoreError {
    dir: String,
    #[source]
    source: std::io::Error,
}

impl ClipStore {
    /// The folder `dir`, created if missing.
    pub fn open(dir: &Path) -> Result<Arc<ClipStore>, ClipStoreError> {
        std::fs::create_dir_all(dir).map_err(|source| ClipStoreError {
            dir: dir.display().to_string(),
            source,
        })?;
        Ok(Arc::new(ClipStore {
            dir: dir.to_owned(),
            states: Mutex::new(HashMap::new()),
            changed: Notify::new(),
        }))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A map of plain values: a panic while holding it leaves nothing to repair.
    fn states(&self) -> MutexGuard<'_, HashMap<String, ClipState>> {
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set(&self, round_id: &str, state: ClipState) {
        let mut states = self.states();
        // Finished entries only save a look at the disk (a clip is found there again, a
        // missing one is missing there too): forget them rather than grow for ever.
        if states.len() >= KEPT_STATES {
            states.retain(|_, s| matches!(s, ClipState::Recording));
        }
        states.insert(round_id.to_owned(), state);
        drop(states);
        self.changed.notify_waiters();
    }

    /// The clip of `round_id`: waits up to `wait` while it is still being recorded. A clip
    /// recorded before a restart is found on disk. `None`: the round has no clip.
    pub async fn clip(&self, round_id: &str, wait: Duration) -> Option<ClipFile> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let changed = self.changed.notified();
            let known = match self.states().get(round_id) {
                Some(ClipState::Done(file)) => return Some(file.clone()),
                Some(ClipState::Missing(why)) => {
                    tracing::warn!(round = round_id, %why, "the round has no clip");
                    return None;
                }
                Some(ClipState::Recording) => true,
                None => false,
            };
            if !known {
                return self.on_disk(round_id).await;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                tracing::warn!(
                    round = round_id,
                    "the clip was not finished in time: the round goes without it"
                );
                return None;
            }
        }
    }

    async fn on_disk(&self, round_id: &str) -> Option<ClipFile> {
        let path = self.dir.join(clip_name(round_id));
        let hashed = tokio::task::spawn_blocking(move || hash_file(&path).map(|h| (path, h)));
        match hashed.await {
            Ok(Ok((path, (size_bytes, sha256)))) => Some(ClipFile {
                path,
                size_bytes,
                sha256,
            }),
            _ => None,
        }
    }
}

/// The file name of a round's clip.
pub fn clip_name(round_id: &str) -> String {
    format!("{round_id}.mp4")
}

/// Size and SHA-256 of a file.
pub(crate) fn hash_file(path: &Path) -> std::io::Result<(u64, Vec<u8>)> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buffer[..n]);
    }
    Ok((size, hasher.finalize().to_vec()))
}

/// One clip being recorded.
struct Active {
    round_id: String,
    part: PathBuf,
    recorder: Recorder,
    /// Units of the seed GOP: the same unit relayed again right after is not pushed twice.
    seeded: HashSet<(u64, i64)>,
    failed: Option<String>,
}

impl std::fmt::Debug for Active {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Active")
            .field("round_id", &self.round_id)
            .finish_non_exhaustive()
    }
}

impl Active {
    fn push(&mut self, unit: &pb::VideoAccessUnit) {
        if self.failed.is_some() {
            return;
        }
        if !self.seeded.is_empty() {
            if self.seeded.remove(&(unit.sequence, unit.pts_ns)) {
                return;
            }
            self.seeded.clear();
        }
        if let Err(e) = self.recorder.push(unit) {
            tracing::error!(round = %self.round_id, error = %e, "the clip recorder failed");
            self.failed = Some(e.to_string());
        }
    }
}

/// The clip recorder of one table.
#[derive(Debug)]
pub(crate) struct TableClips {
    store: Arc<ClipStore>,
    active: Mutex<Option<Active>>,
    metrics: VideoMetrics,
}

impl TableClips {
    pub(crate) fn new(store: Arc<ClipStore>, metrics: VideoMetrics) -> Arc<TableClips> {
        Arc::new(TableClips {
            store,
            active: Mutex::new(None),
            metrics,
        })
    }

    fn active(&self) -> MutexGuard<'_, Option<Active>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A unit just relayed: into the clip being recorded, if any.
    pub(crate) fn unit(&self, unit: &pb::VideoAccessUnit) {
        if let Some(active) = self.active().as_mut() {
            active.push(unit);
        }
    }

    /// Follows the table's rounds until the table stops.
    pub(crate) async fn run(self: Arc<Self>, table: TableHandle, relay: Arc<VideoRelay>) {
        let mut events = table.subscribe();
        loop {
            let published = match events.recv().await {
                Ok(published) => published,
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        table = table.table_id(),
                        missed,
                        "clip recorder lagged behind the table's events"
                    );
                    continue;
                }
                Err(RecvError::Closed) => break,
            };
            for event in &published.events {
                match event {
                    Event::BettingClosed { round_id, .. } => {
                        self.start(&round_id.to_string(), &relay).await;
                    }
                    Event::Result { round_id, .. } | Event::RoundVoided { round_id, .. } => {
                        let this = Arc::clone(&self);
                        let round_id = round_id.to_string();
                        tokio::spawn(async move {
                            tokio::time::sleep(CLIP_TAIL).await;
                            this.finish(&round_id).await;
                        });
                    }
                    _ => {}
                }
            }
        }
        if let Some(active) = self.active().take() {
            let _ = active.recorder.finish();
        }
    }

    async fn start(&self, round_id: &str, relay: &VideoRelay) {
        let previous = self.active().as_ref().map(|a| a.round_id.clone());
        if let Some(previous) = previous {
            self.finish(&previous).await;
        }
        // No camera, no clip (and no pipeline started for nothing at every round).
        if !relay.publishing() {
            self.store.set(
                round_id,
                ClipState::Missing("no video was published when betting closed".to_owned()),
            );
            return;
        }
        let part = self.store.dir.join(format!(".{round_id}.mp4.part"));
        let recorder = match Recorder::start(&RecorderOptions {
            mp4: Some(part.clone()),
            decode: false,
        }) {
            Ok(recorder) => recorder,
            Err(e) => {
                tracing::error!(round = round_id, error = %e, "cannot record the round's clip");
                self.store.set(round_id, ClipState::Missing(e.to_string()));
                return;
            }
        };
        self.store.set(round_id, ClipState::Recording);
        let mut active = self.active();
        let gop = relay.gop_units();
        let mut clip = Active {
            round_id: round_id.to_owned(),
            part,
            recorder,
            seeded: gop.iter().map(|u| (u.sequence, u.pts_ns)).collect(),
            failed: None,
        };
        for unit in &gop {
            if let Err(e) = clip.recorder.push(unit) {
                clip.failed = Some(e.to_string());
            }
        }
        *active = Some(clip);
    }

    async fn finish(&self, round_id: &str) {
        let active = {
            let mut active = self.active();
            match active.as_ref() {
                Some(a) if a.round_id == round_id => active.take(),
                _ => None,
            }
        };
        let Some(active) = active else {
            return;
        };
        let store = Arc::clone(&self.store);
        let round = round_id.to_owned();
        let done =
            tokio::task::spawn_blocking(move || finish_file(&store.dir, &round, active)).await;
        let state = match done {
            Ok(Ok(file)) => {
                tracing::info!(
                    round = round_id,
                    bytes = file.size_bytes,
                    "round clip written"
                );
                self.metrics.clips_written.inc();
                ClipState::Done(file)
            }
            Ok(Err(why)) => {
                tracing::warn!(round = round_id, %why, "no clip for the round");
                ClipState::Missing(why)
            }
            Err(e) => ClipState::Missing(format!("the clip writer panicked: {e}")),
        };
        self.store.set(round_id, state);
    }
}

/// Ends the recording, names the file and hashes it.
fn finish_file(dir: &Path, round_id: &str, active: Active) -> Result<ClipFile, String> {
    let part = active.part.clone();
    let outcome = (|| {
        if let Some(why) = &active.failed {
            let _ = active.recorder.finish();
            return Err(why.clone());
        }
        active
            .recorder
            .finish()
            .map_err(|e| format!("no video during the round ({e})"))?;
        let path = dir.join(clip_name(round_id));
        std::fs::rename(&part, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (size_bytes, sha256) =
            hash_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(ClipFile {
            path,
            size_bytes,
            sha256,
        })
    })();
    let _ = std::fs::remove_file(&part);
    outcome
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn the_sink_waits_for_a_clip_being_written_and_finds_older_ones_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(dir.path()).unwrap();
        store.set("T01-S0001-H001", ClipState::Recording);
        let file = ClipFile {
            path: dir.path().join("T01-S0001-H001.mp4"),
            size_bytes: 3,
            sha256: vec![7; 32],
        };
        let writer = {
            let store = Arc::clone(&store);
            let file = file.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                store.set("T01-S0001-H001", ClipState::Done(file));
            })
        };
        assert_eq!(
            store.clip("T01-S0001-H001", Duration::from_secs(5)).await,
            Some(file)
        );
        writer.await.unwrap();

        // Recorded before a restart: read from the folder, hashed.
        std::fs::write(dir.path().join("T01-S0001-H002.mp4"), b"abc").unwrap();
        let found = store
            .clip("T01-S0001-H002", Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(found.size_bytes, 3);
        assert_eq!(found.sha256, Sha256::digest(b"abc").to_vec());

        store.set("T01-S0001-H003", ClipState::Missing("no video".to_owned()));
        assert_eq!(
            store.clip("T01-S0001-H003", Duration::from_secs(1)).await,
            None
        );
        store.set("T01-S0001-H004", ClipState::Recording);
        assert_eq!(
            store
                .clip("T01-S0001-H004", Duration::from_millis(50))
                .await,
            None,
            "a clip not finished in time is given up on"
        );
        assert_eq!(
            store.clip("T01-S0001-H005", Duration::from_secs(1)).await,
            None
        );
    }
}
