//! For the clip tests: a table actor played by hand, and real H.264 units from the test
//! pattern (a clip is an MP4 the recorder muxes, so its units must be real).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use banco_rules::Card;
use banco_rules::shoe::ShoeConfig;
use banco_streaming::{Encoder, EncoderConfig};
use banco_table::actor::{
    ActorConfig, ActorTask, ArchiveSink, Clock, LocalRules, MemorySink, TableHandle, spawn,
};
use banco_table::{Command, Pacing, RoundId, TableConfig};
use banco_wire::pb;

/// A live table T01 whose journal lives in `dir`, delivering to `sink`.
pub(crate) async fn table(
    dir: &std::path::Path,
    sink: Option<Arc<dyn ArchiveSink>>,
) -> (TableHandle, ActorTask) {
    spawn(
        ActorConfig::in_dir(TableConfig::new("T01", Pacing::Live), dir),
        Arc::new(LocalRules),
        sink.unwrap_or_else(|| Arc::new(MemorySink::new())),
        Clock::system(),
    )
    .await
    .unwrap()
}

async fn submit(table: &TableHandle, command: Command) -> banco_table::actor::Applied {
    table.submit(None, command).await.unwrap()
}

/// Opens a one-deck shoe and burns (AS: one card face down).
pub(crate) async fn open_shoe(table: &TableHandle) {
    let by = "ada".to_owned();
    let config = ShoeConfig {
        decks: 1,
        ..ShoeConfig::default()
    };
    submit(
        table,
        Command::OpenShoe {
            config,
            by: by.clone(),
            now_ms: 0,
            commitment: None,
        },
    )
    .await;
    submit(
        table,
        Command::Burn {
            exposed: Card::parse("AS").unwrap(),
            by,
            now_ms: 0,
        },
    )
    .await;
}

/// Opens betting; the round's id.
pub(crate) async fn open_betting(table: &TableHandle) -> RoundId {
    submit(
        table,
        Command::OpenBetting {
            by: "ada".to_owned(),
            now_ms: 0,
        },
    )
    .await;
    table.snapshot().await.unwrap().table.round_id.unwrap()
}

pub(crate) async fn close_betting(table: &TableHandle) {
    submit(
        table,
        Command::CloseBetting {
            by: "ada".to_owned(),
            now_ms: 0,
        },
    )
    .await;
}

/// Deals `cards` (a natural: the coup is complete after them) and confirms the result.
pub(crate) async fn deal_and_confirm(table: &TableHandle, round_id: &RoundId, cards: [&str; 4]) {
    for card in cards {
        submit(
            table,
            Command::DealCard {
                card: Card::parse(card).unwrap(),
                source: banco_table::CardSource::Scanner,
                now_ms: 0,
            },
        )
        .await;
    }
    submit(
        table,
        Command::ConfirmResult {
            round_id: round_id.clone(),
            by: "ada".to_owned(),
            now_ms: 0,
        },
    )
    .await;
}

/// `n` access units of the moving test pattern, 160×120, a keyframe every 10; `None` when
/// this machine has no H.264 encoder (GStreamer's plugins are missing).
pub(crate) fn camera_units(n: usize) -> Option<Vec<pb::VideoAccessUnit>> {
    let config = EncoderConfig {
        width: 160,
        height: 120,
        bitrate_kbps: 200,
        keyframe_interval: 10,
        live: false,
        ..EncoderConfig::new("T01")
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let encoder = match Encoder::start(
        &config,
        move |unit| {
            let _ = tx.send(unit);
        },
        |_| {},
    ) {
        Ok(encoder) => encoder,
        Err(e) => {
            banco_testkit::skipped("a video test", &format!("no H.264 encoder here ({e})"));
            return None;
        }
    };
    let units: Vec<_> = (0..n)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    drop(encoder);
    Some(units)
}
