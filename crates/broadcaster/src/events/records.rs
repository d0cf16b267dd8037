//! Each table's record in the bucket of table records: who owns the table, its lobby
//! entry, and the table as every player sees it with the seq that covers, written about
//! once a second while anything of it changes. Edges answer the lobby from these and find
//! where to send a table's bets.

use std::collections::HashMap;
use std::sync::Arc;

use async_nats::jetstream::{self, kv};
use banco_rules::roads::LAST_RESULTS_SHOWN;
use banco_wire::pb;
use prost::Message as _;

use super::layout::BUCKET;
use crate::hosted::Tables;
use crate::player_service::PlayerServer;

/// The bucket of table records, made if it is not there.
///
/// Made as the stream a key-value bucket is (`KV_<bucket>` on `$KV.<bucket>.>`, one
/// message per key) rather than through the client's `create_key_value`, which first asks
/// for the account's limits in a form Debian's nats-server 2.9 does not answer in.
pub(crate) async fn bucket(js: &jetstream::Context) -> Result<kv::Store, String> {
    if let Ok(store) = js.get_key_value(BUCKET).await {
        return Ok(store);
    }
    let made = js
        .create_stream(jetstream::stream::Config {
            name: format!("KV_{BUCKET}"),
            description: Some(
                "banco: one record per table (owner, lobby entry, public snapshot)".to_owned(),
            ),
            subjects: vec![format!("$KV.{BUCKET}.>")],
            max_messages_per_subject: 1,
            storage: jetstream::stream::StorageType::File,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: jetstream::stream::DiscardPolicy::New,
            ..jetstream::stream::Config::default()
        })
        .await;
    // Another broadcaster may have made it just now.
    js.get_key_value(BUCKET).await.map_err(|e| match made {
        Err(made) => format!("{made} ({e})"),
        Ok(_) => e.to_string(),
    })
}

/// Writes every table's record while the server runs (until the process stops), each
/// time it changed, at most once per `every`; `owner` is where this broadcaster serves
/// PlayerService.
pub(crate) async fn write_records(
    js: jetstream::Context,
    tables: Arc<Tables>,
    server: Arc<PlayerServer>,
    owner: String,
    every: std::time::Duration,
) {
    let mut store = None;
    // What each table's last record was written from: its seq and its players.
    let mut written: HashMap<String, (u64, u32)> = HashMap::new();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if store.is_none() {
            match bucket(&js).await {
                Ok(s) => store = Some(s),
                Err(e) => {
                    tracing::debug!(error = %e, "events: the bucket of table records is not reachable yet");
                    continue;
                }
            }
        }
        let Some(kv) = &store else { continue };
        for table in tables.all() {
            let Ok(joined) = table.handle().join("").await else {
                // The table is stopping with the server.
                return;
            };
            let seq = crate::hub::through(joined.seq);
            let info = server.info(
                table,
                &joined.table,
                joined.scoreboard.last_results(LAST_RESULTS_SHOWN),
            );
            let key = (seq, info.players);
            if written.get(table.id()) == Some(&key) {
                continue;
            }
            let record = pb::TableRecord {
                table_id: table.id().to_owned(),
                owner: owner.clone(),
                seq,
                info: Some(info),
                snapshot: Some(crate::subscribe::snapshot(&server, table, &joined, None)),
                written_at: Some(crate::wire::now()),
            };
            match kv.put(table.id(), record.encode_to_vec().into()).await {
                Ok(_) => {
                    written.insert(table.id().to_owned(), key);
                }
                Err(e) => {
                    tracing::debug!(table = %table.id(), error = %e, "events: the table's record could not be written; trying again");
                }
            }
        }
    }
}
