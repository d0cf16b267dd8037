//! The camera's GStreamer pipeline, its publisher and its overlay.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use banco_auth::BearerToken;
use banco_streaming::{Encoder, EncoderConfig, Overlay, Publisher, VideoSource};
use banco_wire::pb;
use banco_wire::pb::table_service_client::TableServiceClient;
use prometheus_client::registry::Registry;
use tonic::transport::Channel;

use crate::player::connect::{is_permanent, read_token};
use crate::stream_metrics::StreamMetrics;

use super::{EncodeArgs, StreamArgs};

impl EncodeArgs {
    /// `config` with these settings, checked.
    pub fn apply(&self, mut config: EncoderConfig) -> anyhow::Result<EncoderConfig> {
        config.width = self.width;
        config.height = self.height;
        config.fps = self.fps;
        config.bitrate_kbps = self.bitrate_kbps;
        config.keyframe_interval = self.keyframe_interval;
        config.encoder = self.encoder.parse()?;
        config.check()?;
        Ok(config)
    }

    /// The settings as an encoder configuration for `table`.
    pub fn config(&self, table: &str) -> anyhow::Result<EncoderConfig> {
        self.apply(EncoderConfig::new(table))
    }
}

impl StreamArgs {
    fn config(&self) -> anyhow::Result<EncoderConfig> {
        let mut config = EncoderConfig::new(&self.table);
        config.source = match &self.camera {
            Some(device) => VideoSource::Camera(device.clone()),
            None => VideoSource::TestPattern,
        };
        self.encode.apply(config)
    }
}

pub(crate) fn run(args: &StreamArgs) -> anyhow::Result<ExitCode> {
    let config = args.config()?;
    crate::metrics_http::check(&args.ops)?;
    if args.frames == Some(0) {
        bail!("--frames 0: give at least 1");
    }
    let token = read_token(&args.token_file)?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(stream(args, &config, token))
}

async fn stream(
    args: &StreamArgs,
    config: &EncoderConfig,
    token: BearerToken,
) -> anyhow::Result<ExitCode> {
    let stop = crate::stop_signal::StopSignal::listen()?;
    let channel = args.server.lazy_channel()?;
    let publisher = Publisher::new();
    let frames = Arc::new(AtomicU64::new(0));
    let (failed, failure) = tokio::sync::oneshot::channel();
    let deliver = {
        let publisher = Arc::clone(&publisher);
        let frames = Arc::clone(&frames);
        let limit = args.frames;
        move |unit: pb::VideoAccessUnit| {
            frames.fetch_add(1, Ordering::Relaxed);
            publisher.offer(unit);
            if limit.is_some_and(|n| publisher.stats().units_sent.load(Ordering::Relaxed) >= n) {
                publisher.close();
            }
        }
    };
    let encoder = Arc::new(Encoder::start(config, deliver, move |e| {
        let _ = failed.send(e);
    })?);
    tracing::info!(
        "banco stream: {} {}, to {}",
        encoder.encoder_name(),
        args.encode.describe(),
        args.server.server
    );
    let mut registry = Registry::default();
    StreamMetrics::register(
        &mut registry,
        &args.table,
        encoder.encoder_name(),
        frames,
        Arc::clone(&publisher),
    );
    crate::metrics_http::start(&args.ops, registry).await?;
    let overlay = (!args.no_overlay).then(|| {
        tokio::spawn(draw_overlay(
            channel.clone(),
            token.clone(),
            args.table.clone(),
            Arc::clone(&encoder),
        ))
    });
    let publishing = {
        let encoder = Arc::clone(&encoder);
        publisher.run(channel, token, move || encoder.force_keyframe())
    };
    tokio::pin!(publishing);
    let mut failure = std::pin::pin!(failure);
    let mut interrupted = std::pin::pin!(stop.requested());
    // Each of these completes once and must not be polled again.
    let (mut watching_failure, mut watching_interrupt) = (true, true);
    let outcome = loop {
        tokio::select! {
            outcome = &mut publishing => break outcome,
            error = &mut failure, if watching_failure => {
                watching_failure = false;
                if let Ok(error) = error {
                    bail!("the camera pipeline stopped: {error}");
                }
            }
            _ = &mut interrupted, if watching_interrupt => {
                watching_interrupt = false;
                // The broadcaster answers the stream's summary once it has the end.
                publisher.close();
            }
        }
    };
    if let Some(overlay) = overlay {
        overlay.abort();
    }
    let stats = publisher.stats();
    match outcome {
        Ok(summary) => {
            println!(
                "published {} units ({} keyframes, {} bytes) of table {}; the broadcaster saw {} missing; {} dropped here; {} connection(s)",
                summary.units_received,
                summary.keyframes,
                summary.bytes_received,
                args.table,
                summary.sequence_gaps,
                stats.units_dropped.load(Ordering::Relaxed),
                stats.connections.load(Ordering::Relaxed),
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(status) => bail!(
            "the broadcaster refused the video: {:?}: {}",
            status.code(),
            status.message()
        ),
    }
}

/// Keeps the overlay in step with the table, reconnecting by itself; gives up only on an
/// error another attempt cannot cure (the video goes on without the overlay).
async fn draw_overlay(channel: Channel, token: BearerToken, table: String, encoder: Arc<Encoder>) {
    let overlay = Arc::new(Mutex::new(Overlay::default()));
    let redraw = {
        let overlay = Arc::clone(&overlay);
        let encoder = Arc::clone(&encoder);
        let table = table.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let text = lock(&overlay).text(&table, SystemTime::now());
                encoder.set_overlay(&text);
            }
        })
    };
    let mut client = TableServiceClient::with_interceptor(channel, token);
    let mut retry = Duration::from_millis(250);
    loop {
        let request = pb::WatchTableRequest {
            table_id: table.clone(),
        };
        match client.watch_table(request).await {
            Ok(response) => {
                let mut states = response.into_inner();
                retry = Duration::from_millis(250);
                loop {
                    match states.message().await {
                        Ok(Some(state)) => {
                            let mut overlay = lock(&overlay);
                            overlay.update(state, SystemTime::now());
                            encoder.set_overlay(&overlay.text(&table, SystemTime::now()));
                        }
                        Ok(None) => break,
                        Err(status) => {
                            tracing::warn!("banco stream: table watch lost: {}", status.message());
                            break;
                        }
                    }
                }
            }
            Err(status) if is_permanent(status.code()) => {
                tracing::warn!(
                    "banco stream: no overlay: WatchTable refused: {:?}: {}",
                    status.code(),
                    status.message()
                );
                redraw.abort();
                return;
            }
            // The broadcaster is down or restarting: the publisher says so already.
            Err(_) => {}
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(Duration::from_secs(5));
    }
}

fn lock(overlay: &Mutex<Overlay>) -> std::sync::MutexGuard<'_, Overlay> {
    overlay
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
