//! `banco-bench video`: the live video path end to end on loopback, at the studio's size.
//!
//! `banco stream` runs as a child process (the real command, test pattern, overlay on)
//! publishing to a broadcaster hosted in this process; `--viewers` WatchVideo streams,
//! each on its own connection with its own player token, run here too. Printed: the
//! encoder's frames per second (units over the capture time they span: a live source
//! that the encoder cannot keep up with loses frames before it, so fewer units cover the
//! same time), the capture-to-viewer delay over every unit every viewer received after a
//! warm-up, and the CPU used by the camera process, by the broadcaster's connection threads
//! and by the rest of this process (viewers' clients, one of which also decodes).
//!
//! Checked, not timed: every viewer skipped only to keyframes, and what the decoding
//! viewer received decodes one picture per unit.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail, ensure};
use banco_auth::Role;
use banco_broadcaster::FanoutLimits;
use banco_streaming::{Encoder, Recorder, RecorderOptions};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use tokio::process::Command;

use super::common::{InProcess, connect, cpu_of, keys, parse_cpu, quantile, token, token_text};
use banco::bench_support::{EncodeArgs, delay};

const TABLE: &str = "T01";

#[derive(Debug, clap::Args)]
pub(crate) struct VideoArgs {
    /// Viewers, each with its own WatchVideo stream, connection and player token.
    #[arg(long, default_value_t = 100)]
    viewers: usize,
    /// Measured time, after the warm-up.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Time before measuring: the encoder settles and every viewer has had its GOP burst.
    #[arg(long, default_value_t = 3)]
    warmup_seconds: u64,
    #[command(flatten)]
    encode: EncodeArgs,
}

/// What one viewer saw during the measured window.
#[derive(Debug, Default)]
struct Seen {
    units: u64,
    bytes: u64,
    /// Units the sequence jumped over, and jumps that did not land on a keyframe.
    skipped: u64,
    skips_off_keyframe: u64,
    delays: Vec<Duration>,
    first: Option<(u64, i64)>,
    last: Option<(u64, i64)>,
    frames_decoded: Option<u64>,
}

pub(super) async fn run(args: &VideoArgs) -> anyhow::Result<()> {
    ensure!(
        (1..=10_000).contains(&args.viewers),
        "--viewers {}: 1 to 10000",
        args.viewers
    );
    ensure!(args.seconds >= 1, "--seconds: at least 1");
    let throughput = tokio::task::spawn_blocking({
        let encode = args.encode.clone();
        move || encoder_alone(&encode)
    })
    .await
    .context("the encoder measurement panicked")??;
    let issuer = keys()?;
    let server = InProcess::start(&issuer, TABLE, 0, FanoutLimits::default()).await?;
    let token_file = server.dir.0.join("camera.token");
    std::fs::write(
        &token_file,
        token_text(&issuer, Role::Service, "camera-T01")?,
    )?;
    let mut camera = start_camera(args, &server, &token_file)?;
    let camera_pid = camera.id().context("banco stream has no pid")?;

    // Viewers join while the camera starts; their GOP bursts fall in the warm-up.
    let start = tokio::time::Instant::now();
    let measure_from = start + Duration::from_secs(args.warmup_seconds);
    let measure_until = measure_from + Duration::from_secs(args.seconds);
    let mut viewers = Vec::with_capacity(args.viewers);
    for i in 0..args.viewers {
        let channel = connect(server.addr).await?;
        let client = PlayerServiceClient::with_interceptor(
            channel,
            token(&issuer, Role::Player, &format!("v{i}"))?,
        );
        viewers.push(tokio::spawn(watch(
            client,
            i == 0,
            measure_from,
            measure_until,
        )));
    }
    tokio::time::sleep_until(measure_from).await;
    let wall = Instant::now();
    let cpu_camera = cpu_of(Some(camera_pid))?;
    let cpu_threads = threads_cpu()?;
    tokio::time::sleep_until(measure_until).await;
    let elapsed = wall.elapsed();
    let cpu_camera = cpu_of(Some(camera_pid))?.saturating_sub(cpu_camera);
    let cpu_threads_after = threads_cpu()?;
    let mut seen = Vec::with_capacity(args.viewers);
    for viewer in viewers {
        seen.push(viewer.await.context("a viewer panicked")??);
    }
    let _ = camera.kill().await;
    server.stop().await;

    let relay_cpu = cpu_threads_after.relay.saturating_sub(cpu_threads.relay);
    let other_cpu = cpu_threads_after.other.saturating_sub(cpu_threads.other);
    println!(
        "encoder alone (unpaced test pattern, same settings): {} frames in {:.2} s = {:.0} fps, {:.2} s of CPU per second",
        throughput.frames,
        throughput.elapsed.as_secs_f64(),
        throughput.frames as f64 / throughput.elapsed.as_secs_f64(),
        throughput.cpu.as_secs_f64() / throughput.elapsed.as_secs_f64()
    );
    report(args, &seen, elapsed, cpu_camera, relay_cpu, other_cpu)
}

/// Frames encoded, over how long, with this process's CPU in that time.
#[derive(Debug)]
struct Throughput {
    frames: u64,
    elapsed: Duration,
    cpu: Duration,
}

/// How fast the encoder goes on its own: the test pattern unpaced, every frame encoded,
/// for a few seconds, before anything else runs.
fn encoder_alone(encode: &EncodeArgs) -> anyhow::Result<Throughput> {
    const FRAMES: u64 = 300;
    let mut config = encode.config(TABLE)?;
    config.live = false;
    let (sender, receiver) = std::sync::mpsc::channel();
    let cpu = cpu_of(None)?;
    let started = Instant::now();
    let encoder = Encoder::start(
        &config,
        move |unit| {
            let _ = sender.send(unit.sequence);
        },
        |e| eprintln!("banco-bench: encoder: {e}"),
    )?;
    let mut frames = 0;
    while frames < FRAMES {
        receiver
            .recv_timeout(Duration::from_secs(30))
            .context("the encoder stopped")?;
        frames += 1;
    }
    let elapsed = started.elapsed();
    drop(encoder);
    Ok(Throughput {
        frames,
        elapsed,
        cpu: cpu_of(None)?.saturating_sub(cpu),
    })
}

fn start_camera(
    args: &VideoArgs,
    server: &InProcess,
    token_file: &Path,
) -> anyhow::Result<tokio::process::Child> {
    let exe = std::env::current_exe().context("this program's path")?;
    Command::new(exe)
        .args(["stream", "--table", TABLE, "--server"])
        .arg(format!("http://{}", server.addr))
        .arg("--token-file")
        .arg(token_file)
        .args(args.encode.flags())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("could not start banco stream")
}

/// One viewer: every unit, measured between `from` and `until`; the first viewer also
/// decodes what it measured.
async fn watch(
    mut client: PlayerServiceClient<
        tonic::service::interceptor::InterceptedService<
            tonic::transport::Channel,
            banco_auth::BearerToken,
        >,
    >,
    decode: bool,
    from: tokio::time::Instant,
    until: tokio::time::Instant,
) -> anyhow::Result<Seen> {
    let mut units = client
        .watch_video(pb::WatchVideoRequest {
            table_id: TABLE.to_owned(),
        })
        .await
        .context("WatchVideo")?
        .into_inner();
    let mut seen = Seen::default();
    let mut recorder: Option<Recorder> = None;
    let mut last_sequence = None;
    loop {
        let unit = match tokio::time::timeout_at(until, units.message()).await {
            Err(_) => break,
            Ok(Ok(Some(unit))) => unit,
            Ok(Ok(None)) => bail!("a viewer's stream ended"),
            Ok(Err(status)) => bail!("a viewer's stream failed: {}", status.message()),
        };
        let received = SystemTime::now();
        let measuring = tokio::time::Instant::now() >= from;
        if measuring {
            if let Some(last) = last_sequence
                && unit.sequence > last + 1
            {
                seen.skipped += unit.sequence - last - 1;
                seen.skips_off_keyframe += u64::from(!unit.keyframe);
            }
            seen.units += 1;
            seen.bytes += unit.data.len() as u64;
            seen.delays.push(delay(unit.capture_time_unix_ns, received));
            seen.first
                .get_or_insert((unit.sequence, unit.capture_time_unix_ns));
            seen.last = Some((unit.sequence, unit.capture_time_unix_ns));
            if decode && recorder.is_none() && unit.keyframe {
                recorder = Some(Recorder::start(&RecorderOptions {
                    mp4: None,
                    decode: true,
                })?);
            }
            if let Some(recorder) = recorder.as_mut() {
                recorder.push(&unit)?;
            }
        }
        last_sequence = Some(unit.sequence);
    }
    if let Some(recorder) = recorder {
        let summary = tokio::task::spawn_blocking(move || recorder.finish())
            .await
            .context("the decoder panicked")??;
        ensure!(
            summary.frames_decoded == summary.units,
            "the decoding viewer got {} units but {} decoded",
            summary.units,
            summary.frames_decoded
        );
        seen.frames_decoded = Some(summary.frames_decoded);
    }
    Ok(seen)
}

fn report(
    args: &VideoArgs,
    seen: &[Seen],
    elapsed: Duration,
    cpu_camera: Duration,
    cpu_relay: Duration,
    cpu_other: Duration,
) -> anyhow::Result<()> {
    let secs = elapsed.as_secs_f64();
    println!(
        "bench video: {}; {} viewers on loopback; {:.1} s measured after {} s warm-up",
        args.encode.describe(),
        seen.len(),
        secs,
        args.warmup_seconds
    );
    let first = &seen[0];
    let (Some((first_seq, first_ns)), Some((last_seq, last_ns))) = (first.first, first.last) else {
        bail!("the first viewer received nothing in the measured window");
    };
    let span = (last_ns - first_ns) as f64 / 1e9;
    let units = last_seq - first_seq + 1;
    println!(
        "encoder: {units} frames over {span:.2} s of capture = {:.1} fps (target {}); {:.0} kbit/s as received",
        if span > 0.0 {
            (units - 1) as f64 / span
        } else {
            0.0
        },
        args.encode.fps,
        first.bytes as f64 * 8.0 / 1e3 / secs
    );
    let mut delays: Vec<Duration> = seen.iter().flat_map(|s| s.delays.iter().copied()).collect();
    delays.sort_unstable();
    let at = |q: f64| quantile(&delays, q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    let received: u64 = seen.iter().map(|s| s.units).sum();
    let skipped: u64 = seen.iter().map(|s| s.skipped).sum();
    let lagging = seen.iter().filter(|s| s.skipped > 0).count();
    println!(
        "capture to viewer: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms over {received} units; {skipped} units skipped by {lagging} viewer(s)",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    println!(
        "CPU (s per s): camera process {:.2} (capture, overlay, encode, publish); broadcaster connection threads {:.2}; viewers' clients and the rest of this process {:.2}; machine has {} cores",
        cpu_camera.as_secs_f64() / secs,
        cpu_relay.as_secs_f64() / secs,
        cpu_other.as_secs_f64() / secs,
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    if let Some(frames) = first.frames_decoded {
        println!("check: the decoding viewer's {frames} units decoded to {frames} pictures");
    }
    let off_keyframe: u64 = seen.iter().map(|s| s.skips_off_keyframe).sum();
    ensure!(
        off_keyframe == 0,
        "{off_keyframe} skip(s) did not land on a keyframe"
    );
    ensure!(
        seen.iter().all(|s| s.units > 0),
        "a viewer received nothing in the measured window"
    );
    println!("check: every viewer received video; every skip landed on a keyframe");
    Ok(())
}

/// CPU time of this process's threads: the broadcaster's connection threads (`grpc-io-*`)
/// and all the others.
#[derive(Debug, Default)]
struct ThreadsCpu {
    relay: Duration,
    other: Duration,
}

fn threads_cpu() -> anyhow::Result<ThreadsCpu> {
    let mut cpu = ThreadsCpu::default();
    let tasks = std::fs::read_dir("/proc/self/task").context("/proc/self/task")?;
    for task in tasks {
        let path = task?.path().join("stat");
        // A thread may end between the listing and the read.
        let Ok(stat) = std::fs::read_to_string(&path) else {
            continue;
        };
        let name = stat
            .split_once('(')
            .and_then(|(_, rest)| rest.rsplit_once(')'))
            .map_or("", |(name, _)| name);
        let used = parse_cpu(&stat).unwrap_or_default();
        if name.starts_with("grpc-io-") {
            cpu.relay += used;
        } else {
            cpu.other += used;
        }
    }
    Ok(cpu)
}
