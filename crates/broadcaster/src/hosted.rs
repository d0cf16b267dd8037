//! The tables a broadcaster hosts: each actor handle with the configuration it was
//! started from, and what the croupier console is shown beside the table's own state
//! (who is at the table, the last refusal, alerts).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use banco_rules::Scoreboard;
use banco_rules::shoe::ShoeConfig;
use banco_table::actor::{ActorError, TableHandle};
use banco_table::{TableConfig, TableSnapshot};
use banco_wire::pb;
use tonic::Status;

use crate::error::BroadcasterError;
use crate::hub::{FanoutLimits, Hub, HubError};
use crate::video::VideoRelay;
#[cfg(feature = "clips")]
use crate::video::clip_store::ClipStore;
#[cfg(feature = "clips")]
use crate::video::clips::TableClips;
use crate::wire;

/// One table served here: its actor, and the configuration the actor was spawned with
/// (the handle does not expose it, and ListTables and OpenShoe need it).
#[derive(Debug)]
pub struct HostedTable {
    handle: TableHandle,
    config: TableConfig,
    shoe: ShoeConfig,
    console: Mutex<Console>,
    /// Started by [`crate::serve`] (it needs the runtime).
    hub: OnceLock<Hub>,
    /// The table camera's live video.
    video: Arc<VideoRelay>,
    /// Records a clip of every round, once started by [`crate::serve`] with a clip folder.
    #[cfg(feature = "clips")]
    clips: OnceLock<Arc<TableClips>>,
    /// The roads of the shoe as of its last result: they change only when a result is
    /// confirmed, while a state is built for every reply and every watcher's event.
    roads: Mutex<Option<ShoeRoads>>,
}

/// The roads of shoe `shoe` after its first `results` results.
#[derive(Debug)]
struct ShoeRoads {
    shoe: Option<u32>,
    results: usize,
    roads: pb::Roads,
}

/// What the console shows that the table does not keep.
#[derive(Debug, Default)]
struct Console {
    croupier: String,
    last_refusal: Option<pb::Refusal>,
    alerts: Vec<pb::Alert>,
}

impl HostedTable {
    /// `config` must be the one the actor was spawned with; `shoe` is the shoe an
    /// OpenShoe without a config opens.
    pub fn new(handle: TableHandle, config: TableConfig, shoe: ShoeConfig) -> HostedTable {
        let video = Arc::new(VideoRelay::new(
            handle.table_id(),
            crate::metrics::VideoMetrics::default(),
        ));
        HostedTable {
            handle,
            config,
            shoe,
            console: Mutex::new(Console::default()),
            hub: OnceLock::new(),
            video,
            #[cfg(feature = "clips")]
            clips: OnceLock::new(),
            roads: Mutex::new(None),
        }
    }

    /// Counts the table's video into `families` (before serving: the relay is replaced).
    #[must_use]
    pub fn with_video_metrics(mut self, families: &crate::VideoMetricFamilies) -> HostedTable {
        self.video = Arc::new(VideoRelay::new(self.id(), families.for_table(self.id())));
        self
    }

    pub fn id(&self) -> &str {
        self.handle.table_id()
    }

    pub fn handle(&self) -> &TableHandle {
        &self.handle
    }

    /// The table's fan-out hub; UNAVAILABLE before the server started it.
    pub(crate) fn hub(&self) -> Result<&Hub, Status> {
        self.hub.get().ok_or_else(|| {
            Status::unavailable(format!(
                "table {}: its event fan-out is not running",
                self.id()
            ))
        })
    }

    /// Starts the fan-out hub once; later calls keep the first.
    pub(crate) async fn start_hub(
        &self,
        currency: &str,
        limits: FanoutLimits,
        metrics: &crate::metrics::HubMetricFamilies,
        streamed: Option<crate::hub::StreamStart>,
    ) -> Result<(), HubError> {
        if self.hub.get().is_none() {
            let metrics = metrics.for_table(self.id());
            let hub = Hub::start(
                self.handle.clone(),
                currency.to_owned(),
                limits,
                metrics,
                streamed,
            )
            .await?;
            let _ = self.hub.set(hub);
        }
        Ok(())
    }

    /// The table's video relay.
    pub(crate) fn video(&self) -> &Arc<VideoRelay> {
        &self.video
    }

    /// Completes once the broadcaster shuts down (see [`crate::serve`]): streams that
    /// never end by themselves (video, WatchTable) end then.
    pub(crate) fn closing(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.video.closed()
    }

    /// Ends this table's never-ending streams: the broadcaster is shutting down.
    pub(crate) fn shut_down(&self) {
        self.video.close();
    }

    /// One checked unit from the table's camera: relayed to every viewer, and into the
    /// round's clip while one is recorded.
    pub(crate) fn video_unit(&self, unit: &pb::VideoAccessUnit) {
        self.video.relay(unit);
        #[cfg(feature = "clips")]
        if let Some(clips) = self.clips.get() {
            clips.unit(unit);
        }
    }

    /// Starts recording a clip of every round into `store` (once; later calls keep the
    /// first).
    #[cfg(feature = "clips")]
    pub(crate) fn start_clips(&self, store: &Arc<ClipStore>) {
        if self.clips.get().is_none() {
            let clips = TableClips::new(self.id(), Arc::clone(store), self.video.metrics().clone());
            if self.clips.set(Arc::clone(&clips)).is_ok() {
                tokio::spawn(clips.run(self.handle.clone(), Arc::clone(&self.video)));
            }
        }
    }

    pub fn config(&self) -> &TableConfig {
        &self.config
    }

    pub fn shoe_config(&self) -> ShoeConfig {
        self.shoe
    }

    /// The console state is plain display data: a panic elsewhere while holding it
    /// leaves nothing inconsistent, so a poisoned lock is used as is.
    fn console(&self) -> MutexGuard<'_, Console> {
        self.console
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn actor_error(&self, error: ActorError) -> BroadcasterError {
        match &error {
            ActorError::ValidatorUnreachable(why) => self.raise_alert(
                pb::AlertLevel::Critical,
                "validator_unreachable",
                format!("the validator cannot be reached, so no card can be accepted: {why}"),
            ),
            ActorError::JournalFailed(why) => self.raise_alert(
                pb::AlertLevel::Critical,
                "journal_failed",
                format!("the journal cannot be written, so no command can be accepted: {why}"),
            ),
            _ => {}
        }
        BroadcasterError::actor(self.id(), error)
    }

    /// The table's snapshot and the seq it reflects, read together.
    pub(crate) async fn snapshot(&self) -> Result<(u64, TableSnapshot), BroadcasterError> {
        let snapshot = self
            .handle
            .snapshot()
            .await
            .map_err(|e| self.actor_error(e))?;
        Ok((snapshot.seq, snapshot.table))
    }

    /// The console's view of the table now.
    pub(crate) async fn state(&self) -> Result<pb::TableState, Status> {
        let (seq, snapshot) = self.snapshot().await?;
        Ok(self.table_state(&snapshot, seq))
    }

    /// The table as the croupier console draws it, after journal record `journal`: the
    /// table's round, the roads of the whole shoe, and what the broadcaster keeps
    /// ([`HostedTable::decorate`]). Its seq is the one a subscriber's Snapshot at that record
    /// carries, so the croupier's seq and a player's resume point are one numbering.
    pub(crate) fn table_state(&self, snapshot: &TableSnapshot, journal: u64) -> pb::TableState {
        let mut state = self.decorate(pb::TableState {
            seq: crate::hub::through(journal),
            server_time: Some(wire::now()),
            ..pb::TableState::from(snapshot)
        });
        state.roads = Some(self.roads(snapshot));
        state
    }

    /// The roads of `snapshot`'s shoe, built again only when a result was added.
    fn roads(&self, snapshot: &TableSnapshot) -> pb::Roads {
        let mut cached = self
            .roads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match cached.as_ref() {
            Some(c) if c.shoe == snapshot.shoe && c.results == snapshot.results.len() => {
                c.roads.clone()
            }
            _ => {
                let roads = pb::Roads::from(&Scoreboard::from_results(&snapshot.results));
                *cached = Some(ShoeRoads {
                    shoe: snapshot.shoe,
                    results: snapshot.results.len(),
                    roads: roads.clone(),
                });
                roads
            }
        }
    }

    /// Adds what the broadcaster keeps to a state built from the table.
    pub(crate) fn decorate(&self, mut state: pb::TableState) -> pb::TableState {
        let console = self.console();
        state.croupier.clone_from(&console.croupier);
        state.last_refusal.clone_from(&console.last_refusal);
        state.alerts.clone_from(&console.alerts);
        drop(console);
        self.config
            .policy
            .currency
            .as_str()
            .clone_into(&mut state.currency);
        if let Some(hub) = self.hub.get() {
            hub.view(|view| {
                state.players = view.players;
                state.seats.clone_from(&view.seats);
                state.chat = view.chat.iter().cloned().collect();
            });
        }
        state
    }

    pub(crate) fn note_croupier(&self, croupier: &str) {
        let mut console = self.console();
        if console.croupier != croupier {
            croupier.clone_into(&mut console.croupier);
        }
    }

    pub(crate) fn note_refusal(&self, refusal: &pb::Refusal) {
        self.console().last_refusal = Some(refusal.clone());
    }

    /// A command went through: whatever blocked commands before is over.
    pub(crate) fn clear_alerts(&self) {
        let mut console = self.console();
        console
            .alerts
            .retain(|a| a.code != "validator_unreachable" && a.code != "journal_failed");
    }

    fn raise_alert(&self, level: pb::AlertLevel, code: &str, message: String) {
        let mut console = self.console();
        if let Some(alert) = console.alerts.iter_mut().find(|a| a.code == code) {
            alert.message = message;
            return;
        }
        console.alerts.push(pb::Alert {
            level: level.into(),
            code: code.to_owned(),
            message,
            since: Some(wire::now()),
        });
    }
}

/// Every hosted table by id.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    by_id: BTreeMap<String, Arc<HostedTable>>,
}

impl Tables {
    pub(crate) fn new(tables: Vec<HostedTable>) -> Tables {
        Tables {
            by_id: tables
                .into_iter()
                .map(|t| (t.id().to_owned(), Arc::new(t)))
                .collect(),
        }
    }

    /// The table `table_id` names; NOT_FOUND naming it otherwise.
    pub(crate) fn get(&self, table_id: &str) -> Result<&Arc<HostedTable>, BroadcasterError> {
        if table_id.is_empty() {
            return Err(banco_wire::ConversionError::missing("table_id").into());
        }
        self.by_id
            .get(table_id)
            .ok_or_else(|| BroadcasterError::UnknownTable(table_id.chars().take(64).collect()))
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<HostedTable>> {
        self.by_id.values()
    }
}
