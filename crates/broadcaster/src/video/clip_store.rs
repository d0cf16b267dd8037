//! What the broadcaster knows of each round's clip, for the archive sink: being recorded,
//! written (its file, size and SHA-256), or missing and why.
//!
//! The sink asks for a round's clip as soon as the round is sealed, which can be before
//! the table's clip recorder has heard of the round at all: the recorder follows the
//! table's events on a channel of its own, and a fast round is over in milliseconds. So a
//! round the store knows nothing of is never taken for one without a clip. The sink waits
//! until the recorder has heard of the round, or has said that it never will: the round
//! was played before the recorder followed the table (its clip, if any, is on disk), or
//! the recorder fell behind the table's events and missed it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use banco_table::{Phase, TableSnapshot};
use sha2::{Digest as _, Sha256};
use tokio::sync::Notify;

/// Rounds of a table whose clip state is kept before the oldest finished ones are
/// forgotten (the sink forgets each round it delivered; this bounds a broadcaster that
/// delivers to no archive).
const KEPT_STATES: usize = 1024;

/// A finished clip file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipFile {
    pub path: PathBuf,
    pub size_bytes: u64,
    pub sha256: Vec<u8>,
}

/// Why a round has no clip. Every reason but [`MissingReason::NoVideo`] is a clip lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissingReason {
    /// No camera was publishing when betting closed, or betting never closed: there was
    /// nothing to record.
    NoVideo,
    /// The recorder could not start, failed while recording, or got no keyframe.
    RecorderFailed,
    /// The recorder fell behind the table's events and never saw the round.
    Missed,
    /// The clip was still being written when the sink stopped waiting for it.
    NotFinished,
    /// The clip's file is not in the clip folder, cannot be read, or has changed since it
    /// was written.
    FileGone,
    /// The archive refused the clip, and sending it again would not change that.
    Refused,
}

impl MissingReason {
    /// Whether a clip was lost (there was video to record).
    pub fn lost(self) -> bool {
        self != MissingReason::NoVideo
    }

    /// The reason in snake case, as in metric labels.
    pub fn label(self) -> &'static str {
        match self {
            MissingReason::NoVideo => "no_video",
            MissingReason::RecorderFailed => "recorder_failed",
            MissingReason::Missed => "missed",
            MissingReason::NotFinished => "not_finished",
            MissingReason::FileGone => "file_gone",
            MissingReason::Refused => "refused",
        }
    }
}

/// A round without a clip: why, and what happened, for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipMissing {
    pub reason: MissingReason,
    pub detail: String,
}

impl ClipMissing {
    pub fn new(reason: MissingReason, detail: impl Into<String>) -> ClipMissing {
        ClipMissing {
            reason,
            detail: detail.into(),
        }
    }
}

/// What became of a round's clip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoundClip {
    Written(ClipFile),
    Missing(ClipMissing),
}

#[derive(Debug)]
pub(crate) enum ClipState {
    Recording,
    Done(RoundClip),
}

/// Rounds of a table up to one (the round the table was at, as a snapshot showed it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Through {
    round: String,
    /// The round itself too (its betting had closed).
    inclusive: bool,
}

impl Through {
    /// The rounds whose betting had closed as of `snapshot`; `None` before any round.
    pub(crate) fn closed_as_of(snapshot: &TableSnapshot) -> Option<Through> {
        snapshot.round_id.as_ref().map(|round| Through {
            round: round.to_string(),
            inclusive: !matches!(snapshot.phase, Phase::BettingOpen { .. }),
        })
    }

    /// Round `round_id` and every one before it.
    pub(crate) fn round(round_id: &str) -> Through {
        Through {
            round: round_id.to_owned(),
            inclusive: true,
        }
    }

    /// Round ids of a table sort in play order.
    fn covers(&self, round_id: &str) -> bool {
        round_id < self.round.as_str() || (self.inclusive && round_id == self.round)
    }

    /// Whichever of `a` and `b` covers more (each covers all that the lesser does).
    fn max(a: Option<Through>, b: Through) -> Through {
        match a {
            Some(a) if a.round > b.round || (a.round == b.round && a.inclusive >= b.inclusive) => a,
            _ => b,
        }
    }
}

/// One table's rounds as the store knows them.
#[derive(Debug, Default)]
struct TableRounds {
    states: BTreeMap<String, ClipState>,
    /// Rounds up to here that have no state were played before the recorder followed the
    /// table, or their state was forgotten: their clip, if any, is on disk.
    on_disk: Option<Through>,
    /// Rounds up to here that have no state were missed by the recorder.
    missed: Option<Through>,
}

/// What the store can say of a round without waiting.
enum Known {
    Done(RoundClip),
    /// The recorder will not say: the clip is on disk if it was written (by this
    /// broadcaster before a restart), else it is missing for this reason.
    OnDisk(MissingReason),
    Recording,
    Unheard,
}

impl TableRounds {
    fn known(&self, round_id: &str) -> Known {
        let covers =
            |through: &Option<Through>| through.as_ref().is_some_and(|t| t.covers(round_id));
        match self.states.get(round_id) {
            Some(ClipState::Done(clip)) => Known::Done(clip.clone()),
            Some(ClipState::Recording) => Known::Recording,
            None if covers(&self.on_disk) => Known::OnDisk(MissingReason::FileGone),
            None if covers(&self.missed) => Known::OnDisk(MissingReason::Missed),
            None => Known::Unheard,
        }
    }

    /// Forgets the oldest finished rounds beyond [`KEPT_STATES`]; asked again, they are
    /// looked for on disk.
    fn prune(&mut self) {
        while self.states.len() > KEPT_STATES {
            let Some(oldest) = self
                .states
                .iter()
                .find(|(_, s)| matches!(s, ClipState::Done(_)))
                .map(|(round, _)| round.clone())
            else {
                return;
            };
            self.states.remove(&oldest);
            self.on_disk = Some(Through::max(self.on_disk.take(), Through::round(&oldest)));
        }
    }
}

/// The clips of every table of a broadcaster: the folder, and what each round's clip is.
#[derive(Debug)]
pub struct ClipStore {
    dir: PathBuf,
    tables: Mutex<HashMap<String, TableRounds>>,
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
            tables: Mutex::new(HashMap::new()),
            changed: Notify::new(),
        }))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A map of plain values: a panic while holding it leaves nothing to repair.
    fn tables(&self) -> MutexGuard<'_, HashMap<String, TableRounds>> {
        self.tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn change(&self, table_id: &str, change: impl FnOnce(&mut TableRounds)) {
        let mut tables = self.tables();
        change(tables.entry(table_id.to_owned()).or_default());
        drop(tables);
        self.changed.notify_waiters();
    }

    pub(crate) fn set(&self, table_id: &str, round_id: &str, state: ClipState) {
        self.change(table_id, |rounds| {
            rounds.states.insert(round_id.to_owned(), state);
            rounds.prune();
        });
    }

    /// The recorder follows the table from now on: rounds `through` covers that it did not
    /// hear of were played before.
    pub(crate) fn followed_after(&self, table_id: &str, through: Through) {
        self.change(table_id, |rounds| {
            rounds.on_disk = Some(Through::max(rounds.on_disk.take(), through));
        });
    }

    /// The recorder fell behind the table's events: rounds `through` covers that it did
    /// not hear of, it missed.
    pub(crate) fn missed_through(&self, table_id: &str, through: Through) {
        self.change(table_id, |rounds| {
            rounds.missed = Some(Through::max(rounds.missed.take(), through));
        });
    }

    /// The archive has the round: its state is no longer needed (asked again, it is looked
    /// for on disk).
    pub(crate) fn delivered(&self, table_id: &str, round_id: &str) {
        let mut tables = self.tables();
        if let Some(rounds) = tables.get_mut(table_id)
            && matches!(rounds.states.get(round_id), Some(ClipState::Done(_)))
        {
            rounds.states.remove(round_id);
            rounds.on_disk = Some(Through::max(
                rounds.on_disk.take(),
                Through::round(round_id),
            ));
        }
    }

    /// The clip of `round_id` at `table_id`. Waits up to `wait` while the clip is being
    /// recorded, or while the table's recorder has not heard of the round yet (it may be
    /// behind the table). A round played before the recorder followed the table (before a
    /// restart) is looked for on disk.
    pub async fn clip(&self, table_id: &str, round_id: &str, wait: Duration) -> RoundClip {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let changed = self.changed.notified();
            let known = self
                .tables()
                .get(table_id)
                .map_or(Known::Unheard, |rounds| rounds.known(round_id));
            match known {
                Known::Done(clip) => return clip,
                Known::OnDisk(otherwise) => return self.on_disk(round_id, otherwise).await,
                Known::Recording | Known::Unheard => {}
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let seconds = wait.as_secs_f64();
                return RoundClip::Missing(match known {
                    Known::Recording => ClipMissing::new(
                        MissingReason::NotFinished,
                        format!(
                            "the clip was still being written {seconds:.0} s after the round was sealed"
                        ),
                    ),
                    _ => ClipMissing::new(
                        MissingReason::Missed,
                        format!(
                            "the clip recorder had not heard of the round {seconds:.0} s after it was sealed"
                        ),
                    ),
                });
            }
        }
    }

    /// The clip file of `round_id` in the folder; if there is none, missing for
    /// `otherwise`.
    async fn on_disk(&self, round_id: &str, otherwise: MissingReason) -> RoundClip {
        let path = self.dir.join(clip_name(round_id));
        let shown = path.display().to_string();
        let hashed = tokio::task::spawn_blocking(move || hash_file(&path).map(|h| (path, h)));
        let (reason, why) = match hashed.await {
            Ok(Ok((path, (size_bytes, sha256)))) => {
                return RoundClip::Written(ClipFile {
                    path,
                    size_bytes,
                    sha256,
                });
            }
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => (
                otherwise,
                match otherwise {
                    MissingReason::Missed => format!(
                        "the clip recorder fell behind the table's events and missed the \
                         round (no clip file {shown})"
                    ),
                    _ => format!(
                        "no clip file {shown}: the round was played before this broadcaster \
                         followed the table, and its clip was never finished or was removed"
                    ),
                },
            ),
            Ok(Err(e)) => (MissingReason::FileGone, format!("{shown}: {e}")),
            Err(e) => (
                MissingReason::FileGone,
                format!("{shown}: hashing it failed: {e}"),
            ),
        };
        RoundClip::Missing(ClipMissing::new(reason, why))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::task::Poll;

    use super::*;

    fn written(dir: &Path, round: &str) -> RoundClip {
        RoundClip::Written(ClipFile {
            path: dir.join(clip_name(round)),
            size_bytes: 3,
            sha256: vec![7; 32],
        })
    }

    fn missing(clip: RoundClip) -> ClipMissing {
        match clip {
            RoundClip::Missing(missing) => missing,
            RoundClip::Written(file) => panic!("a clip: {file:?}"),
        }
    }

    #[tokio::test]
    async fn a_round_the_recorder_has_not_heard_of_is_waited_for_not_taken_for_none() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(dir.path()).unwrap();
        let asked = store.clip("T01", "T01-S0001-H001", Duration::from_secs(30));
        tokio::pin!(asked);
        assert!(futures::poll!(&mut asked).is_pending(), "not heard of yet");
        store.set("T01", "T01-S0001-H001", ClipState::Recording);
        assert!(futures::poll!(&mut asked).is_pending(), "being recorded");
        // Another table's rounds, and another round of this one, are not this one.
        store.set(
            "T02",
            "T01-S0001-H001",
            ClipState::Done(written(dir.path(), "x")),
        );
        store.set("T01", "T01-S0001-H002", ClipState::Recording);
        assert!(futures::poll!(&mut asked).is_pending());
        let clip = written(dir.path(), "T01-S0001-H001");
        store.set("T01", "T01-S0001-H001", ClipState::Done(clip.clone()));
        assert_eq!(futures::poll!(&mut asked), Poll::Ready(clip));
    }

    #[tokio::test]
    async fn rounds_before_the_recorder_followed_are_on_disk_or_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("T01-S0001-H001.mp4"), b"abc").unwrap();
        let snapshot = |round: u32, phase: Phase| TableSnapshot {
            table: "T01".to_owned(),
            phase,
            shoe: Some(1),
            shoe_state: None,
            cards_left: None,
            round_id: Some(banco_table::RoundId::new("T01", 1, round)),
            opened_at: None,
            closes_at: None,
            cards: Vec::new(),
            due: None,
            player_total: 0,
            banker_total: 0,
            bet_totals: std::collections::BTreeMap::new(),
            bettors: 0,
            results: Vec::new(),
            burn: None,
            totals: None,
        };
        // Betting is open on H003: H002 and before were played before the recorder came.
        let through = Through::closed_as_of(&snapshot(
            3,
            Phase::BettingOpen {
                opened_at: 0,
                closes_at: None,
            },
        ))
        .unwrap();
        store.followed_after("T01", through);
        let wait = Duration::from_secs(30);
        match store.clip("T01", "T01-S0001-H001", wait).await {
            RoundClip::Written(file) => {
                assert_eq!(file.size_bytes, 3);
                assert_eq!(file.sha256, Sha256::digest(b"abc").to_vec());
            }
            other => panic!("{other:?}"),
        }
        let gone = missing(store.clip("T01", "T01-S0001-H002", wait).await);
        assert_eq!(gone.reason, MissingReason::FileGone);
        assert!(
            gone.detail.contains("T01-S0001-H002.mp4"),
            "{}",
            gone.detail
        );
        // H003 is followed: not heard of within the wait, it is missed, not gone.
        let unheard = missing(
            store
                .clip("T01", "T01-S0001-H003", Duration::from_millis(20))
                .await,
        );
        assert_eq!(unheard.reason, MissingReason::Missed);

        // A boundary never moves back.
        store.followed_after(
            "T01",
            Through::closed_as_of(&snapshot(1, Phase::Settled)).unwrap(),
        );
        let gone = missing(store.clip("T01", "T01-S0001-H002", wait).await);
        assert_eq!(gone.reason, MissingReason::FileGone);
    }

    #[tokio::test]
    async fn rounds_the_recorder_missed_are_lost_unless_their_clip_is_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("T01-S0001-H001.mp4"), b"abc").unwrap();
        store.set("T01", "T01-S0001-H003", ClipState::Recording);
        store.missed_through("T01", Through::round("T01-S0001-H003"));
        let wait = Duration::from_secs(30);
        assert!(matches!(
            store.clip("T01", "T01-S0001-H001", wait).await,
            RoundClip::Written(_)
        ));
        let lost = missing(store.clip("T01", "T01-S0001-H002", wait).await);
        assert_eq!(lost.reason, MissingReason::Missed);
        assert!(lost.reason.lost());
        // What the recorder said of a round stands; one still recording past the wait
        // was not finished.
        let late = missing(
            store
                .clip("T01", "T01-S0001-H003", Duration::from_millis(20))
                .await,
        );
        assert_eq!(late.reason, MissingReason::NotFinished);
        store.set(
            "T01",
            "T01-S0001-H004",
            ClipState::Done(RoundClip::Missing(ClipMissing::new(
                MissingReason::NoVideo,
                "no camera",
            ))),
        );
        let none = missing(store.clip("T01", "T01-S0001-H004", wait).await);
        assert_eq!(none.reason, MissingReason::NoVideo);
        assert!(!none.reason.lost());
    }

    #[tokio::test]
    async fn rounds_delivered_or_beyond_the_kept_ones_are_forgotten_and_found_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = ClipStore::open(dir.path()).unwrap();
        let wait = Duration::from_secs(30);
        let first = "T01-S0001-H001";
        store.set("T01", first, ClipState::Done(written(dir.path(), first)));
        store.delivered("T01", first);
        assert_eq!(
            missing(store.clip("T01", first, wait).await).reason,
            MissingReason::FileGone,
            "asked again, it is looked for on disk"
        );
        std::fs::write(dir.path().join("T01-S0002-H001.mp4"), b"abc").unwrap();
        for hand in 1..=u32::try_from(KEPT_STATES).unwrap() + 1 {
            let round = banco_table::RoundId::new("T01", 2, hand).to_string();
            store.set("T01", &round, ClipState::Done(written(dir.path(), &round)));
        }
        assert_eq!(store.tables()["T01"].states.len(), KEPT_STATES);
        match store.clip("T01", "T01-S0002-H001", wait).await {
            RoundClip::Written(file) => assert_eq!(file.sha256, Sha256::digest(b"abc").to_vec()),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            store.clip("T01", "T01-S0002-H002", wait).await,
            written(dir.path(), "T01-S0002-H002"),
            "kept"
        );
    }
}
