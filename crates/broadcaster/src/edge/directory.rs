//! Every table of every broadcaster, as their records in the bucket of table records say:
//! the lobby, and where each table's bets go. Kept up to date by watching the bucket; it
//! is a copy of what NATS holds, never table state of the edge's own.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use banco_wire::pb;
use futures::StreamExt as _;
use prost::Message as _;
use tokio::sync::watch;

use crate::events::layout::BUCKET;

/// The tables' records by table id.
#[derive(Debug)]
pub(crate) struct Directory {
    records: RwLock<BTreeMap<String, pb::TableRecord>>,
    /// Turns true once the bucket has been read through once.
    loaded: watch::Sender<bool>,
}

impl Directory {
    /// Watches the bucket on `js` from now on, in the background.
    pub(crate) fn watch(js: jetstream::Context) -> Arc<Directory> {
        let directory = Arc::new(Directory {
            records: RwLock::new(BTreeMap::new()),
            loaded: watch::channel(false).0,
        });
        tokio::spawn(follow(js, Arc::downgrade(&directory)));
        directory
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, pb::TableRecord>> {
        self.records
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The record of `table_id`, if there is one.
    pub(crate) fn get(&self, table_id: &str) -> Option<pb::TableRecord> {
        self.read().get(table_id).cloned()
    }

    /// Every table's record, by table id.
    pub(crate) fn all(&self) -> Vec<pb::TableRecord> {
        self.read().values().cloned().collect()
    }

    /// Every broadcaster that owns a table now, each once.
    pub(crate) fn owners(&self) -> Vec<String> {
        let mut owners: Vec<String> = self.read().values().map(|r| r.owner.clone()).collect();
        owners.sort();
        owners.dedup();
        owners
    }

    /// Waits (at most `within`) for the bucket's first full read.
    pub(crate) async fn loaded(&self, within: Duration) {
        let mut loaded = self.loaded.subscribe();
        let _ = tokio::time::timeout(within, loaded.wait_for(|l| *l)).await;
    }

    fn apply(&self, entry: &kv::Entry) {
        let mut records = self
            .records
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match entry.operation {
            kv::Operation::Put => match pb::TableRecord::decode(entry.value.as_ref()) {
                Ok(record) if record.table_id == entry.key => {
                    records.insert(entry.key.clone(), record);
                }
                Ok(record) => {
                    tracing::warn!(key = %entry.key, table = %record.table_id, "edge: a table record under another table's key is ignored")
                }
                Err(e) => {
                    tracing::warn!(key = %entry.key, error = %e, "edge: a table record that does not decode is ignored")
                }
            },
            kv::Operation::Delete | kv::Operation::Purge => {
                records.remove(&entry.key);
            }
        }
    }
}

/// Reads the bucket (each key's latest record, then every change) for as long as the
/// directory is used, starting again whenever the server goes away.
async fn follow(js: jetstream::Context, directory: std::sync::Weak<Directory>) {
    let mut wait = Duration::from_millis(100);
    loop {
        let watched = async {
            let store = js.get_key_value(BUCKET).await.map_err(|e| e.to_string())?;
            let mut entries = store
                .watch_with_history(">")
                .await
                .map_err(|e| e.to_string())?;
            // An empty bucket sends nothing at first: it is read through already.
            let pending = store
                .status()
                .await
                .map(|s| s.info.state.messages)
                .unwrap_or(0);
            let mut seen = 0u64;
            if pending == 0
                && let Some(directory) = directory.upgrade()
            {
                directory.loaded.send_replace(true);
            }
            while let Some(entry) = entries.next().await {
                let entry = entry.map_err(|e| e.to_string())?;
                let Some(directory) = directory.upgrade() else {
                    return Ok(());
                };
                directory.apply(&entry);
                seen += 1;
                if entry.delta == 0 || seen >= pending {
                    directory.loaded.send_replace(true);
                }
            }
            Err::<(), String>("the bucket's watch ended".to_owned())
        };
        match watched.await {
            Ok(()) => return,
            Err(e) => {
                if directory.strong_count() == 0 {
                    return;
                }
                tracing::debug!(error = %e, "edge: the bucket of table records cannot be read yet; trying again");
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(5));
    }
}
