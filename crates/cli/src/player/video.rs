//! `banco player video`: the table's live video as a viewer receives it. `--out FILE`
//! writes it to MP4 (the H.264 as encoded, no re-encoding) while decoding every frame, to
//! show that the picture is whole; `--probe` prints each frame's delay from capture to
//! receipt. Both may be given. Reconnects by itself; the broadcaster starts every stream at
//! a keyframe, so the file continues where the picture does.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[cfg(feature = "gstreamer")]
use anyhow::Context as _;
use anyhow::bail;
#[cfg(feature = "gstreamer")]
use banco_streaming::{Recorder, RecorderOptions};
use banco_wire::pb;

use super::connect::{Client, is_permanent, status_error};

/// What `banco player video` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct VideoArgs {
    /// Write the video to this MP4 file (decoding every frame as it goes).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print each unit's capture-to-receipt delay, then p50 / p99 / max.
    #[arg(long)]
    probe: bool,
    /// Stop after this many units.
    #[arg(long, value_name = "N")]
    frames: Option<u64>,
    /// Stop after this many seconds (default: at Ctrl-C; the file is complete either way).
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<f64>,
}

impl VideoArgs {
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        if self.out.is_none() && !self.probe {
            bail!("video: give --out FILE, --probe, or both");
        }
        if self.frames == Some(0) {
            bail!("--frames 0: give at least 1");
        }
        if let Some(s) = self.seconds
            && !(s.is_finite() && s > 0.0)
        {
            bail!("--seconds {s}: must be a positive number");
        }
        #[cfg(not(feature = "gstreamer"))]
        if let Some(out) = &self.out {
            bail!(
                "--out {}: writing MP4 needs the `gstreamer` feature, which this build of banco \
                 left out (--probe needs no GStreamer)",
                out.display()
            );
        }
        if let Some(out) = &self.out
            && let Some(dir) = out.parent()
            && !dir.as_os_str().is_empty()
            && !dir.is_dir()
        {
            bail!(
                "--out {}: folder {} does not exist",
                out.display(),
                dir.display()
            );
        }
        Ok(())
    }
}

/// What was received, for the closing summary.
#[derive(Debug, Default)]
struct Tally {
    units: u64,
    keyframes: u64,
    bytes: u64,
    /// Units the sequence skipped over (dropped for this viewer or upstream).
    skipped: u64,
    /// Skips that did not land on a keyframe: the drop policy says there are none.
    skips_off_keyframe: u64,
    last_sequence: Option<u64>,
    delays: Vec<Duration>,
}

impl Tally {
    fn take(&mut self, unit: &pb::VideoAccessUnit, received: SystemTime) -> Duration {
        if let Some(last) = self.last_sequence
            && unit.sequence > last + 1
        {
            self.skipped += unit.sequence - last - 1;
            if !unit.keyframe {
                self.skips_off_keyframe += 1;
            }
        }
        self.last_sequence = Some(unit.sequence);
        self.units += 1;
        self.keyframes += u64::from(unit.keyframe);
        self.bytes += unit.data.len() as u64;
        let delay = delay(unit.capture_time_unix_ns, received);
        self.delays.push(delay);
        delay
    }
}

/// `work`, unless `stop` completes first (then `None`; `stop` is not polled again by a
/// caller that stops on `None`).
async fn or_stop<T>(
    stop: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        () = stop.as_mut() => None,
        done = work => Some(done),
    }
}

/// The `q` quantile (0 < q ≤ 1) of sorted values, by the nearest-rank method; `None` when
/// there are none.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let i = ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
    Some(sorted[i])
}

/// Capture to `received`; zero when the clocks disagree the other way.
pub fn delay(capture_time_unix_ns: i64, received: SystemTime) -> Duration {
    let received_ns = received
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Duration::from_nanos(u64::try_from(received_ns - capture_time_unix_ns).unwrap_or(0))
}

pub(crate) async fn run(
    mut client: Client,
    table: &str,
    args: &VideoArgs,
) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "gstreamer")]
    let mut recorder = match &args.out {
        Some(path) => Some(Recorder::start(&RecorderOptions {
            mp4: Some(path.clone()),
            decode: true,
        })?),
        None => None,
    };
    // Stops the watch, leaving a complete file: after --seconds, or at Ctrl-C.
    let seconds = args.seconds;
    let stop = async move {
        match seconds {
            Some(s) => tokio::select! {
                () = tokio::time::sleep(Duration::from_secs_f64(s)) => {}
                _ = tokio::signal::ctrl_c() => {}
            },
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    let mut stop = std::pin::pin!(stop);
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut retry = Duration::from_millis(250);
    'watching: loop {
        let request = pb::WatchVideoRequest {
            table_id: table.to_owned(),
        };
        let Some(watched) = or_stop(&mut stop, client.watch_video(request)).await else {
            break 'watching;
        };
        let mut units = match watched {
            Ok(response) => response.into_inner(),
            Err(status) if is_permanent(status.code()) => {
                return Err(status_error(&status).context("WatchVideo"));
            }
            Err(status) => {
                eprintln!("banco player: video: {}; retrying", status.message());
                if or_stop(&mut stop, tokio::time::sleep(retry))
                    .await
                    .is_none()
                {
                    break 'watching;
                }
                retry = (retry * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        loop {
            let Some(next) = or_stop(&mut stop, units.message()).await else {
                break 'watching;
            };
            let unit = match next {
                Ok(Some(unit)) => unit,
                Ok(None) => break,
                Err(status) => {
                    eprintln!(
                        "banco player: video stream lost: {}; reconnecting",
                        status.message()
                    );
                    break;
                }
            };
            retry = Duration::from_millis(250);
            let delay = tally.take(&unit, SystemTime::now());
            if args.probe {
                println!(
                    "unit {} {} {} bytes, capture to receipt {:.1} ms",
                    unit.sequence,
                    if unit.keyframe { "key  " } else { "delta" },
                    unit.data.len(),
                    delay.as_secs_f64() * 1e3
                );
            }
            #[cfg(feature = "gstreamer")]
            if let Some(recorder) = recorder.as_mut() {
                recorder.push(&unit)?;
            }
            if args.frames.is_some_and(|n| tally.units >= n) {
                break 'watching;
            }
        }
        if or_stop(&mut stop, tokio::time::sleep(retry))
            .await
            .is_none()
        {
            break 'watching;
        }
    }
    let elapsed = started.elapsed();
    tally.delays.sort_unstable();
    let ms = |q: f64| quantile(&tally.delays, q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    println!(
        "received {} units ({} keyframes, {} bytes) in {:.1} s; {} skipped ({} skips not at a keyframe); capture to receipt p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        tally.units,
        tally.keyframes,
        tally.bytes,
        elapsed.as_secs_f64(),
        tally.skipped,
        tally.skips_off_keyframe,
        ms(0.5),
        ms(0.99),
        ms(1.0)
    );
    #[cfg(feature = "gstreamer")]
    if let (Some(recorder), Some(path)) = (recorder, &args.out) {
        let summary = tokio::task::spawn_blocking(move || recorder.finish())
            .await
            .context("the MP4 writer panicked")??;
        println!(
            "wrote {}: {} units, {} frames decoded, {}x{}",
            path.display(),
            summary.units,
            summary.frames_decoded,
            summary.width,
            summary.height
        );
        if summary.frames_decoded != summary.units {
            bail!(
                "{} of {} units did not decode",
                summary.units - summary.frames_decoded,
                summary.units
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(all(test, not(feature = "gstreamer")))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn without_gstreamer_only_the_probe_is_offered() {
        let mut args = VideoArgs {
            out: Some(PathBuf::from("round.mp4")),
            probe: true,
            frames: None,
            seconds: None,
        };
        let err = args.check().unwrap_err().to_string();
        assert!(err.starts_with("--out round.mp4: "), "{err}");
        assert!(err.contains("`gstreamer` feature"), "{err}");
        args.out = None;
        args.check().unwrap();
    }
}
