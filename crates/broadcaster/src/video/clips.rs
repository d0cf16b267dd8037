//! A clip of every round: the table's video from betting closed to the result, as MP4
//! named by the round id, for the archive (regulators require video of every game).
//! A round gets no clip when no camera was publishing as its betting closed.
//!
//! [`TableClips`] follows the table's events. At BettingClosed it tells the
//! [`ClipStore`] that the round's clip is coming, starts a recorder and seeds it with the
//! relay's GOP cache, so the clip begins at a keyframe and decodes; every unit relayed
//! after that goes into it; at the round's Result (or its void) it records [`CLIP_TAIL`]
//! more, so the last cards and the result are on screen, then finishes the file
//! (`<round_id>.mp4`, written as `.<round_id>.mp4.part` until complete) and records its
//! size and SHA-256 in the store, where the archive sink finds it.
//!
//! The events come on a channel that can lag: the recorder then asks the table where it
//! is and tells the store which rounds it missed, so that their clips are reported lost
//! rather than waited for, or taken for none.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use banco_streaming::{Recorder, RecorderOptions};
use banco_table::actor::TableHandle;
use banco_table::{Event, Phase, Published, TableSnapshot};
use banco_wire::pb;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::VideoRelay;
use super::clip_store::{
    ClipFile, ClipMissing, ClipState, ClipStore, MissingReason, RoundClip, Through, clip_name,
    hash_file,
};
use crate::metrics::VideoMetrics;

/// Video kept after the result: the video trails the table's events by the capture and
/// network delay, and the result should be seen on the table.
pub const CLIP_TAIL: Duration = Duration::from_secs(1);

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

/// Why the recorder asks the table where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CatchUp {
    /// It starts following the table.
    Start,
    /// It fell behind the table's events and lost some.
    Lagged,
}

/// The clip recorder of one table.
#[derive(Debug)]
pub(crate) struct TableClips {
    table_id: String,
    store: Arc<ClipStore>,
    active: Mutex<Option<Active>>,
    metrics: VideoMetrics,
}

impl TableClips {
    pub(crate) fn new(
        table_id: &str,
        store: Arc<ClipStore>,
        metrics: VideoMetrics,
    ) -> Arc<TableClips> {
        Arc::new(TableClips {
            table_id: table_id.to_owned(),
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
        let events = table.subscribe();
        self.follow(events, &table, &relay).await;
    }

    /// [`TableClips::run`] on `events`, subscribed to `table` by the caller.
    pub(crate) async fn follow(
        self: Arc<Self>,
        mut events: Receiver<Arc<Published>>,
        table: &TableHandle,
        relay: &Arc<VideoRelay>,
    ) {
        let mut catching_up = Some(CatchUp::Start);
        loop {
            if let Some(why) = catching_up.take() {
                match self.catch_up(&mut events, table, relay, why).await {
                    Some(again) => catching_up = again,
                    None => break,
                }
                continue;
            }
            match events.recv().await {
                Ok(published) => self.handle(&published, relay).await,
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        table = %self.table_id,
                        missed,
                        "clip recorder lagged behind the table's events: the rounds it missed lose their clips"
                    );
                    catching_up = Some(CatchUp::Lagged);
                }
                Err(RecvError::Closed) => break,
            }
        }
        if let Some(active) = self.active().take() {
            let _ = active.recorder.finish();
        }
    }

    /// Asks the table where it is, handles every event published before its answer (they
    /// wait in `events`), then tells the store that the rounds up to there that no event
    /// named will never be heard of here: played before the recorder followed the table,
    /// or missed. `None`: the table has stopped; `Some(Some(Lagged))`: it lagged again.
    async fn catch_up(
        self: &Arc<Self>,
        events: &mut Receiver<Arc<Published>>,
        table: &TableHandle,
        relay: &Arc<VideoRelay>,
        why: CatchUp,
    ) -> Option<Option<CatchUp>> {
        let snapshot = match table.snapshot().await {
            Ok(snapshot) => snapshot.table,
            Err(e) => {
                tracing::warn!(table = %self.table_id, error = %e, "clip recorder: the table is gone");
                return None;
            }
        };
        loop {
            match events.try_recv() {
                Ok(published) => self.handle(&published, relay).await,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Lagged(missed)) => {
                    tracing::warn!(table = %self.table_id, missed, "clip recorder lagged again while catching up");
                    return Some(Some(CatchUp::Lagged));
                }
                Err(TryRecvError::Closed) => return None,
            }
        }
        let Some(through) = Through::closed_as_of(&snapshot) else {
            return Some(None);
        };
        match why {
            CatchUp::Start => self.store.followed_after(&self.table_id, through),
            CatchUp::Lagged => {
                self.store.missed_through(&self.table_id, through);
                // Its Result may be among the events lost.
                let active = self.active().as_ref().map(|a| a.round_id.clone());
                if let Some(round_id) = active
                    && round_over(&snapshot, &round_id)
                {
                    self.finish_after_tail(round_id);
                }
            }
        }
        Some(None)
    }

    async fn handle(self: &Arc<Self>, published: &Published, relay: &VideoRelay) {
        for event in &published.events {
            match event {
                Event::BettingClosed { round_id, .. } => {
                    self.start(round_id.as_str(), relay).await;
                }
                Event::Result { round_id, .. } | Event::RoundVoided { round_id, .. } => {
                    self.finish_after_tail(round_id.to_string());
                }
                _ => {}
            }
        }
    }

    fn finish_after_tail(self: &Arc<Self>, round_id: String) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(CLIP_TAIL).await;
            this.finish(&round_id).await;
        });
    }

    fn set(&self, round_id: &str, state: ClipState) {
        self.store.set(&self.table_id, round_id, state);
    }

    fn missing(&self, round_id: &str, reason: MissingReason, detail: String) {
        self.set(
            round_id,
            ClipState::Done(RoundClip::Missing(ClipMissing::new(reason, detail))),
        );
    }

    async fn start(&self, round_id: &str, relay: &VideoRelay) {
        // No camera, no clip (and no pipeline started for nothing at every round).
        if !relay.publishing() {
            self.missing(
                round_id,
                MissingReason::NoVideo,
                "no camera was publishing the table's video when betting closed".to_owned(),
            );
            return;
        }
        // Before anything slow: the sink may ask for this clip from now on.
        self.set(round_id, ClipState::Recording);
        let previous = self.active().as_ref().map(|a| a.round_id.clone());
        if let Some(previous) = previous {
            self.finish(&previous).await;
        }
        let part = self.store.dir().join(format!(".{round_id}.mp4.part"));
        let options = RecorderOptions {
            mp4: Some(part.clone()),
            decode: false,
        };
        // Building and starting a GStreamer pipeline blocks.
        let started = tokio::task::spawn_blocking(move || Recorder::start(&options)).await;
        let recorder = match started {
            Ok(Ok(recorder)) => recorder,
            Ok(Err(e)) => {
                tracing::error!(round = round_id, error = %e, "cannot record the round's clip");
                self.missing(
                    round_id,
                    MissingReason::RecorderFailed,
                    format!("the clip recorder could not start: {e}"),
                );
                return;
            }
            Err(e) => {
                self.missing(
                    round_id,
                    MissingReason::RecorderFailed,
                    format!("the clip recorder panicked while starting: {e}"),
                );
                return;
            }
        };
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
        let dir = self.store.dir().to_owned();
        let round = round_id.to_owned();
        let done = tokio::task::spawn_blocking(move || finish_file(&dir, &round, active)).await;
        let clip = match done {
            Ok(Ok(file)) => {
                tracing::info!(
                    round = round_id,
                    bytes = file.size_bytes,
                    "round clip written"
                );
                self.metrics.clips_written.inc();
                RoundClip::Written(file)
            }
            Ok(Err(why)) => {
                tracing::warn!(round = round_id, %why, "no clip for the round");
                RoundClip::Missing(ClipMissing::new(MissingReason::RecorderFailed, why))
            }
            Err(e) => RoundClip::Missing(ClipMissing::new(
                MissingReason::RecorderFailed,
                format!("the clip writer panicked: {e}"),
            )),
        };
        self.set(round_id, ClipState::Done(clip));
    }
}

/// Whether `round_id`'s result is out as of `snapshot` (a later round is under way, or
/// this one is decided).
fn round_over(snapshot: &TableSnapshot, round_id: &str) -> bool {
    match &snapshot.round_id {
        Some(current) if current.as_str() == round_id => matches!(
            snapshot.phase,
            Phase::Result | Phase::Settled | Phase::Voided | Phase::NoShoe | Phase::Idle
        ),
        _ => true,
    }
}

/// Ends the recording, names the file and hashes it.
fn finish_file(dir: &Path, round_id: &str, active: Active) -> Result<ClipFile, String> {
    let part = active.part.clone();
    let outcome = (|| {
        if let Some(why) = &active.failed {
            let _ = active.recorder.finish();
            return Err(format!("the clip recorder failed: {why}"));
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
    use banco_table::Command;

    use super::*;
    use crate::video::test_table::{
        camera_units, close_betting, deal_and_confirm, open_betting, open_shoe, table,
    };

    fn missing(clip: RoundClip) -> ClipMissing {
        match clip {
            RoundClip::Missing(missing) => missing,
            RoundClip::Written(file) => panic!("a clip: {file:?}"),
        }
    }

    /// The defect of issue 16: the sink asked for a fast round's clip before the recorder
    /// had heard of the round, was told there was none, and the clip was written after.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clip_asked_for_before_the_recorder_heard_of_its_round_is_still_found() {
        let Some(units) = camera_units(30) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(&dir.path().join("clips")).unwrap();
        let (table, _task) = table(dir.path(), None).await;
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let _camera = relay.claim().unwrap();
        for unit in &units[..10] {
            relay.relay(unit);
        }
        let metrics = VideoMetrics::default();
        let clips = TableClips::new("T01", Arc::clone(&store), metrics.clone());
        // The recorder is behind the table: subscribed, it hears of the round only once
        // the round is over and the sink has asked for its clip.
        let events = table.subscribe();
        open_shoe(&table).await;
        let round = open_betting(&table).await;
        close_betting(&table).await;
        deal_and_confirm(&table, &round, ["9S", "2H", "KD", "3C"]).await;
        let asked = store.clip("T01", round.as_str(), Duration::from_secs(30));
        tokio::pin!(asked);
        assert!(futures::poll!(&mut asked).is_pending());
        let following = {
            let (table, relay) = (table.clone(), Arc::clone(&relay));
            tokio::spawn(async move { clips.follow(events, &table, &relay).await })
        };
        let file = match asked.await {
            RoundClip::Written(file) => file,
            RoundClip::Missing(missing) => panic!("the round's clip is lost: {missing:?}"),
        };
        assert_eq!(file.path, store.dir().join(format!("{round}.mp4")));
        assert_eq!(
            hash_file(&file.path).unwrap(),
            (file.size_bytes, file.sha256)
        );
        assert_eq!(metrics.clips_written.get(), 1);
        following.abort();
    }

    /// Rounds whose events the recorder lost by falling behind are lost, and said so,
    /// instead of being waited for or taken for rounds without video; it then follows the
    /// table again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rounds_the_recorder_lagged_past_are_missed_and_the_next_ones_followed() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(&dir.path().join("clips")).unwrap();
        let (table, _task) = table(dir.path(), None).await;
        let relay = Arc::new(VideoRelay::new("T01", VideoMetrics::default()));
        let clips = TableClips::new("T01", Arc::clone(&store), VideoMetrics::default());
        let events = table.subscribe();
        open_shoe(&table).await;
        let first = open_betting(&table).await;
        close_betting(&table).await;
        deal_and_confirm(&table, &first, ["9S", "2H", "KD", "3C"]).await;
        // More events than the channel keeps for a subscriber that does not read.
        let changes = (0..1100).map(|i| {
            table.submit(
                None,
                Command::WalletChanged {
                    player: format!("p{}", i % 7),
                    balance: 100 * i,
                    delta: 100,
                    reason: "deposit".into(),
                    version: None,
                    now_ms: 0,
                },
            )
        });
        for change in futures::future::join_all(changes).await {
            change.unwrap();
        }
        let following = {
            let (table, relay) = (table.clone(), Arc::clone(&relay));
            tokio::spawn(async move { clips.follow(events, &table, &relay).await })
        };
        let wait = Duration::from_secs(30);
        let lost = missing(store.clip("T01", first.as_str(), wait).await);
        assert_eq!(lost.reason, MissingReason::Missed, "{lost:?}");

        let second = open_betting(&table).await;
        close_betting(&table).await;
        deal_and_confirm(&table, &second, ["8S", "2D", "QD", "4C"]).await;
        let none = missing(store.clip("T01", second.as_str(), wait).await);
        assert_eq!(none.reason, MissingReason::NoVideo, "{none:?}");
        following.abort();
    }
}
