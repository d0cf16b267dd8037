//! Issue 7, live video, over real processes: `banco stream` (GStreamer, test pattern)
//! publishing to `banco broadcaster`, viewers over gRPC and `banco player video`.
//!
//! What a viewer receives is decoded (valid H.264, one frame per unit) and, like the round's
//! clip in the archive, is 8-bit 4:2:0 in a profile browsers and phones play; a late joiner gets
//! a picture from the broadcaster's GOP cache, a stalled viewer skips to a keyframe without
//! costing a prompt one anything, the publisher comes back by itself after the broadcaster
//! restarts, and every bad publish or watch is refused with its reason. Times are printed,
//! never asserted. Skips (does not fail) only where a GStreamer plugin is absent.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use banco_e2e::archive::Auditor;
use banco_e2e::banco;
use banco_e2e::metrics::scrape;
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, SignedArchive, bearer, channel, croupier_cli, start_validator,
};
use banco_streaming::sps::{Sps, playable, playable_keyframes};
use banco_streaming::{Recorder, RecorderOptions, decode_mp4, has_element, mp4_sps};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::video_ingest_client::VideoIngestClient;
use tonic::Code;

/// Skips the test unless every plugin the pipelines use is installed.
macro_rules! require_plugins {
    () => {
        for element in [
            "videotestsrc",
            "textoverlay",
            "x264enc",
            "h264parse",
            "mp4mux",
            "qtdemux",
            "avdec_h264",
        ] {
            if !has_element(element) {
                banco_testkit::skipped(
                    module_path!(),
                    &format!("GStreamer element {element} is not installed"),
                );
                return;
            }
        }
    };
}

const KEYFRAME_INTERVAL: u64 = 15;

/// Validator and broadcaster (table T01), and the tokens the tests use.
struct Studio {
    dir: tempfile::TempDir,
    keys: Keys,
    _validator: Service,
    setup: BroadcasterSetup,
    broadcaster: Service,
    /// The broadcaster's `/metrics` address, when started with them.
    broadcaster_metrics: Option<String>,
    camera_token: PathBuf,
    player_token: PathBuf,
}

impl Studio {
    fn start() -> Studio {
        Studio::start_with(false)
    }

    /// With `metrics`, the broadcaster serves `/metrics` on a port of its own.
    fn start_with(metrics: bool) -> Studio {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::generate(&dir.path().join("keys"));
        let validator = start_validator(&keys);
        let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
        if metrics {
            setup.extra_args = vec!["--metrics-listen".into(), "127.0.0.1:0".into()];
        }
        let (broadcaster, broadcaster_metrics) =
            Service::start_with_metrics("broadcaster", &setup.args(), metrics);
        let camera_token = dir.path().join("camera.token");
        std::fs::write(&camera_token, keys.issue("service", "camera-T01", "1h")).unwrap();
        let player_token = dir.path().join("player.token");
        std::fs::write(&player_token, keys.issue("player", "viewer", "1h")).unwrap();
        Studio {
            dir,
            keys,
            _validator: validator,
            setup,
            broadcaster,
            broadcaster_metrics,
            camera_token,
            player_token,
        }
    }

    fn url(&self) -> String {
        self.broadcaster.url()
    }

    /// `banco stream` at 320x240, 30 fps, into this studio.
    fn camera(&self, keyframe_interval: u64, bitrate_kbps: u32) -> Camera {
        self.camera_with(keyframe_interval, bitrate_kbps, &[])
    }

    /// [`Studio::camera`] with more flags.
    fn camera_with(&self, keyframe_interval: u64, bitrate_kbps: u32, extra: &[&str]) -> Camera {
        let child = banco()
            .args([
                "stream",
                "--table",
                "T01",
                "--server",
                &self.url(),
                "--token-file",
            ])
            .arg(&self.camera_token)
            .args(["--width", "320", "--height", "240", "--fps", "30"])
            .args(["--bitrate-kbps", &bitrate_kbps.to_string()])
            .args(["--keyframe-interval", &keyframe_interval.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        Camera(child)
    }

    /// A viewer on a connection of its own.
    async fn viewer(&self) -> PlayerServiceClient<banco_e2e::clients::Authed> {
        let token = self.keys.issue_at(
            banco_auth::Role::Player,
            "viewer",
            Duration::from_secs(3600),
            SystemTime::now(),
        );
        PlayerServiceClient::with_interceptor(channel(&self.url()).await, bearer(&token))
    }

    async fn watch(&self) -> tonic::Streaming<pb::VideoAccessUnit> {
        watch(self.viewer().await).await
    }

    /// A viewer whose link takes at most 64 KiB in flight (hyper's client would otherwise
    /// accept 2 MiB unread per stream), as over a slow network.
    async fn slow_viewer(&self) -> PlayerServiceClient<banco_e2e::clients::Authed> {
        let token = self.keys.issue("player", "slow", "1h");
        let channel = tonic::transport::Endpoint::from_shared(self.url())
            .unwrap()
            .initial_stream_window_size(64 * 1024)
            .initial_connection_window_size(64 * 1024)
            .connect()
            .await
            .unwrap();
        PlayerServiceClient::with_interceptor(channel, bearer(&token))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

async fn watch(
    mut viewer: PlayerServiceClient<banco_e2e::clients::Authed>,
) -> tonic::Streaming<pb::VideoAccessUnit> {
    viewer
        .watch_video(pb::WatchVideoRequest {
            table_id: "T01".to_owned(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// `banco stream`, killed when dropped.
struct Camera(Child);

impl Camera {
    /// The address of its `/metrics` (started with `--metrics-listen`): its first line.
    fn metrics_addr(&mut self) -> String {
        let line = self.next_line();
        match line.trim().strip_prefix("metrics listening on ") {
            Some(addr) => addr.to_owned(),
            None => panic!("banco stream: no metrics address, but `{line}`"),
        }
    }

    fn next_line(&mut self) -> String {
        use std::io::Read as _;
        // One byte at a time, so that nothing after the line is taken from the pipe.
        let stdout = self.0.stdout.as_mut().unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8];
        while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        String::from_utf8(line).unwrap()
    }

    /// Its exit status and the rest of its stdout, once it exits by itself (within 30 s).
    fn finish(&mut self) -> (std::process::ExitStatus, String) {
        use std::io::Read as _;
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "banco stream did not stop");
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut rest = String::new();
        self.0
            .stdout
            .as_mut()
            .unwrap()
            .read_to_string(&mut rest)
            .unwrap();
        (status, rest)
    }
}

impl Drop for Camera {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn next_unit(units: &mut tonic::Streaming<pb::VideoAccessUnit>) -> pb::VideoAccessUnit {
    match tokio::time::timeout(Duration::from_secs(20), units.message()).await {
        Ok(Ok(Some(unit))) => unit,
        other => panic!("no video unit within 20 s: {other:?}"),
    }
}

fn unix_ns() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    )
    .unwrap()
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// p50 and p99 of capture-to-receipt delays, in ms.
fn p50_p99(delays: &mut [i64]) -> (f64, f64) {
    delays.sort_unstable();
    let at =
        |q: f64| ms(delays[((delays.len() as f64 * q).ceil() as usize).clamp(1, delays.len()) - 1]);
    (at(0.5), at(0.99))
}

/// Every jump in `sequences` lands on a keyframe: the drop policy skips to keyframes only.
fn gaps_only_before_keyframes(units: &[pb::VideoAccessUnit]) -> usize {
    let mut gaps = 0;
    for pair in units.windows(2) {
        if pair[1].sequence != pair[0].sequence + 1 {
            assert!(
                pair[1].sequence > pair[0].sequence,
                "sequence went back: {} then {}",
                pair[0].sequence,
                pair[1].sequence
            );
            assert!(
                pair[1].keyframe,
                "a skip from {} to {} did not land on a keyframe",
                pair[0].sequence, pair[1].sequence
            );
            gaps += 1;
        }
    }
    gaps
}

/// The SPS of every keyframe a viewer received, each one browsers and phones play (8-bit
/// 4:2:0, Constrained Baseline, Main or High); the first is returned.
fn playable_sps(units: &[pb::VideoAccessUnit]) -> Sps {
    playable_keyframes(units).unwrap_or_else(|e| panic!("{e}"))[0]
}

/// The SPS of an MP4's `avcC`, checked to play in browsers and phones.
fn playable_mp4(path: &Path) -> Sps {
    let sps = mp4_sps(path).unwrap_or_else(|e| panic!("{e}"));
    if let Err(e) = playable(&sps) {
        panic!("{} ({sps}): {e}", path.display());
    }
    sps
}

fn decode_all(
    units: &[pb::VideoAccessUnit],
    mp4: Option<&Path>,
) -> banco_streaming::RecordingSummary {
    let mut recorder = Recorder::start(&RecorderOptions {
        mp4: mp4.map(Path::to_owned),
        decode: true,
    })
    .unwrap();
    for unit in units {
        assert!(recorder.push(unit).unwrap(), "unit {} taken", unit.sequence);
    }
    recorder.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_receives_h264_that_decodes_frame_for_frame() {
    require_plugins!();
    let studio = Studio::start();
    let _camera = studio.camera(KEYFRAME_INTERVAL, 800);
    let mut units = studio.watch().await;
    let mut received = Vec::new();
    let mut delays = Vec::new();
    while received.len() < 120 {
        let unit = next_unit(&mut units).await;
        delays.push(unix_ns() - unit.capture_time_unix_ns);
        received.push(unit);
    }
    assert!(received[0].keyframe, "a viewer starts at a keyframe");
    // A prompt viewer loses nothing: every unit, in order, one keyframe per interval.
    assert_eq!(gaps_only_before_keyframes(&received), 0);
    let first = received[0].sequence;
    for unit in &received {
        assert_eq!(unit.table_id, "T01");
        assert_eq!(unit.codec, "h264");
        assert_eq!(
            unit.keyframe,
            (unit.sequence - first) % KEYFRAME_INTERVAL == 0,
            "unit {}",
            unit.sequence
        );
        assert_eq!(unit.codec_config.is_some(), unit.keyframe);
    }
    // What browsers and phones play: 8-bit 4:2:0 in a profile they all take.
    let sps = playable_sps(&received);
    assert_eq!((sps.width, sps.height), (320, 240));
    println!("the viewer's stream: {sps}");
    let mp4 = studio.path("viewer.mp4");
    let summary = decode_all(&received, Some(&mp4));
    assert_eq!(summary.units, 120);
    assert_eq!(summary.frames_decoded, 120, "one picture per unit");
    assert_eq!((summary.width, summary.height), (320, 240));
    assert_eq!(decode_mp4(&mp4).unwrap(), 120, "the MP4 plays back whole");
    let (p50, p99) = p50_p99(&mut delays);
    println!("capture to viewer, 320x240: p50 {p50:.1} ms, p99 {p99:.1} ms");

    // The reference client does the same from the command line.
    let out_file = studio.path("player.mp4");
    let out = banco()
        .args(["player", "--server", &studio.url(), "--token-file"])
        .arg(&studio.player_token)
        .args([
            "--table", "T01", "video", "--frames", "45", "--probe", "--out",
        ])
        .arg(&out_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let probes = stdout
        .lines()
        .filter(|l| l.contains("capture to receipt") && l.starts_with("unit "))
        .count();
    assert_eq!(probes, 45, "{stdout}");
    assert!(stdout.contains("received 45 units"), "{stdout}");
    assert!(
        stdout.contains("45 units, 45 frames decoded, 320x240"),
        "{stdout}"
    );
    assert_eq!(decode_mp4(&out_file).unwrap(), 45);
    assert_eq!(
        playable_mp4(&out_file),
        sps,
        "the client's file keeps the stream's SPS"
    );
    println!(
        "{}",
        stdout.lines().rev().take(2).collect::<Vec<_>>().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_joiner_gets_a_picture_from_the_gop_cache_at_once() {
    require_plugins!();
    let studio = Studio::start();
    // A keyframe every 3 s: without the cache a viewer would wait up to that long.
    let _camera = studio.camera(90, 800);
    let mut early = studio.watch().await;
    let first = next_unit(&mut early).await;
    // Join 1 s after a keyframe: mid-GOP.
    let joined_after = tokio::time::Instant::now() + Duration::from_secs(1);
    while tokio::time::Instant::now() < joined_after {
        next_unit(&mut early).await;
    }
    // Connected and its decoder ready before it joins: the time measured is the video's.
    let viewer = studio.viewer().await;
    let mut recorder = Recorder::start(&RecorderOptions {
        mp4: None,
        decode: true,
    })
    .unwrap();
    let joined = Instant::now();
    let joined_ns = unix_ns();
    let mut late = watch(viewer).await;
    let cached = next_unit(&mut late).await;
    let first_unit_after = joined.elapsed();
    assert!(cached.keyframe, "the late joiner starts at a keyframe");
    assert!(
        cached.capture_time_unix_ns < joined_ns,
        "its first keyframe was captured before it joined (the GOP cache), not awaited"
    );
    assert!(
        cached.sequence >= first.sequence,
        "the current GOP, not an old one"
    );
    recorder.push(&cached).unwrap();
    let mut units = 1u64;
    while recorder.frames_decoded() == 0 {
        recorder.push(&next_unit(&mut late).await).unwrap();
        units += 1;
    }
    let first_picture_after = joined.elapsed();
    let summary = tokio::task::spawn_blocking(move || recorder.finish())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.frames_decoded, units);
    println!(
        "late joiner (keyframe every 3 s, joined 1 s into a GOP): first unit after {:.1} ms, first decoded picture after {:.1} ms; its keyframe was captured {:.0} ms before it joined",
        first_unit_after.as_secs_f64() * 1e3,
        first_picture_after.as_secs_f64() * 1e3,
        ms(joined_ns - cached.capture_time_unix_ns)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_viewer_skips_to_a_keyframe_and_costs_the_others_nothing() {
    require_plugins!();
    let studio = Studio::start_with(true);
    let _camera = studio.camera(KEYFRAME_INTERVAL, 2000);
    let mut stalled = watch(studio.slow_viewer().await).await;
    let mut prompt = studio.watch().await;
    let mut stalled_units = vec![next_unit(&mut stalled).await];
    // The stalled viewer reads nothing for 5 s; the prompt one reads all along.
    let stall_until = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut prompt_units = Vec::new();
    let mut delays = Vec::new();
    while tokio::time::Instant::now() < stall_until {
        let unit = next_unit(&mut prompt).await;
        delays.push(unix_ns() - unit.capture_time_unix_ns);
        prompt_units.push(unit);
    }
    assert_eq!(
        gaps_only_before_keyframes(&prompt_units),
        0,
        "the prompt viewer lost nothing while the other stalled"
    );
    assert!(
        prompt_units.len() >= 100,
        "5 s of 30 fps: {} units",
        prompt_units.len()
    );
    let (p50, p99) = p50_p99(&mut delays);
    println!(
        "prompt viewer beside a stalled one: {} units, p50 {p50:.1} ms, p99 {p99:.1} ms",
        prompt_units.len()
    );
    // The stalled viewer resumes: what it had in flight, then a jump to a keyframe, then
    // live again; what it got still decodes.
    let live = prompt_units.last().unwrap().sequence;
    loop {
        let unit = next_unit(&mut stalled).await;
        let sequence = unit.sequence;
        stalled_units.push(unit);
        if sequence >= live + 2 * KEYFRAME_INTERVAL {
            break;
        }
    }
    let gaps = gaps_only_before_keyframes(&stalled_units);
    assert!(gaps >= 1, "the stalled viewer skipped ahead");
    let received = stalled_units.len() as u64;
    let spanned = stalled_units.last().unwrap().sequence - stalled_units[0].sequence + 1;
    println!(
        "stalled viewer: {received} of {spanned} units received, {gaps} skip(s), each to a keyframe"
    );
    assert!(received < spanned);
    // The broadcaster counted each jump and every unit it did not send (it may have
    // started another jump since the last unit read here).
    let counts = scrape(studio.broadcaster_metrics.as_deref().unwrap());
    let t = "table=\"T01\"";
    let skips = sample(&counts, &format!("banco_video_viewer_skips_total{{{t}}}"));
    let skipped = sample(&counts, &format!("banco_video_units_skipped_total{{{t}}}"));
    assert!(skips >= gaps as f64, "{skips} skips counted, {gaps} seen");
    assert!(
        skipped >= (spanned - received) as f64,
        "{skipped} units counted as skipped, {} missing",
        spanned - received
    );
    let summary = decode_all(&stalled_units, None);
    assert_eq!(
        summary.frames_decoded, received,
        "every unit it did get decodes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_publisher_comes_back_by_itself_after_the_broadcaster_restarts() {
    require_plugins!();
    let mut studio = Studio::start();
    let mut camera =
        studio.camera_with(KEYFRAME_INTERVAL, 800, &["--metrics-listen", "127.0.0.1:0"]);
    let camera_metrics = camera.metrics_addr();
    let before = next_unit(&mut studio.watch().await).await;
    let addr = studio.broadcaster.addr().to_owned();
    studio.broadcaster.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    studio.setup.listen = addr;
    studio.broadcaster = studio.setup.start();
    let after = next_unit(&mut studio.watch().await).await;
    assert!(after.keyframe, "a new stream starts at a keyframe");
    assert!(
        after.sequence > before.sequence,
        "the same camera process numbers on: {} then {}",
        before.sequence,
        after.sequence
    );
    assert!(
        matches!(camera.0.try_wait(), Ok(None)),
        "banco stream kept running"
    );
    // One stream before the restart and one after; what it encoded meanwhile was dropped.
    let counts = scrape(&camera_metrics);
    let reconnects = sample(&counts, "banco_stream_reconnects_total{table=\"T01\"}");
    assert!((1.0..=2.0).contains(&reconnects), "{reconnects} reconnects");
    let (frames, written, dropped) = camera_counts_add_up(&counts);
    assert!(dropped >= 1.0, "{counts:#?}");
    println!(
        "camera across a broadcaster restart: {frames} frames encoded, {written} units written, {dropped} dropped, {reconnects} reconnect(s)"
    );
}

/// A sample of a scrape that must be there (a zero that is only absent proves nothing).
fn sample(samples: &std::collections::BTreeMap<String, f64>, series: &str) -> f64 {
    samples
        .get(series)
        .copied()
        .unwrap_or_else(|| panic!("no {series} in {samples:#?}"))
}

/// `frames encoded >= units written + units dropped` on the camera's endpoint, each read
/// at one scrape; the gap is what the encoder made while the scrape read its counters.
fn camera_counts_add_up(camera: &std::collections::BTreeMap<String, f64>) -> (f64, f64, f64) {
    let t = "table=\"T01\"";
    let frames = sample(camera, &format!("banco_stream_frames_encoded_total{{{t}}}"));
    let written = sample(
        camera,
        &format!("banco_stream_units_published_total{{{t}}}"),
    );
    let dropped = sample(
        camera,
        &format!("banco_stream_units_dropped_total{{{t},reason=\"behind\"}}"),
    ) + sample(
        camera,
        &format!("banco_stream_units_dropped_total{{{t},reason=\"not_connected\"}}"),
    );
    assert!(
        frames >= written + dropped && frames <= written + dropped + 70.0,
        "frames {frames}, written {written}, dropped {dropped} (at most the queue's 60 units in flight)"
    );
    (frames, written, dropped)
}

/// A known run (`banco stream --frames 90` to one prompt viewer) against both `/metrics`:
/// the broadcaster counts the publisher while it is there, the viewer while it watches,
/// every unit relayed and none skipped; the camera names its encoder and its counts add
/// up while it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broadcaster_and_the_camera_count_the_video_on_their_metrics_endpoints() {
    require_plugins!();
    let studio = Studio::start_with(true);
    let metrics = studio.broadcaster_metrics.clone().unwrap();
    let t = "table=\"T01\"";
    let series = |name: &str| format!("{name}{{{t}}}");
    // The endpoint answers while the broadcaster starts: the table's video series are
    // there once it is hosted, which can be just after the table's own.
    let before = banco_e2e::poll(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || scrape(&metrics),
        |samples| samples.contains_key(&series("banco_video_viewers")),
    )
    .await;
    for name in [
        "banco_video_viewers",
        "banco_video_publisher_connected",
        "banco_video_units_relayed_total",
        "banco_video_viewer_skips_total",
        "banco_video_units_skipped_total",
        "banco_video_clips_written_total",
        "banco_video_clips_uploaded_total",
    ] {
        assert_eq!(sample(&before, &series(name)), 0.0, "{name}");
    }

    let mut viewer = studio.watch().await;
    assert_eq!(
        sample(&scrape(&metrics), &series("banco_video_viewers")),
        1.0
    );
    const FRAMES: u64 = 90;
    let mut camera = studio.camera_with(
        KEYFRAME_INTERVAL,
        800,
        &[
            "--frames",
            &FRAMES.to_string(),
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let camera_metrics = camera.metrics_addr();
    let first = next_unit(&mut viewer).await;
    assert!(first.keyframe);

    // While it publishes (3 s of video at 30 fps).
    let during = scrape(&metrics);
    assert_eq!(
        sample(&during, &series("banco_video_publisher_connected")),
        1.0
    );
    let running = scrape(&camera_metrics);
    assert_eq!(
        sample(
            &running,
            &format!("banco_stream_encoder_info{{{t},encoder=\"x264enc\"}}")
        ),
        1.0,
        "{running:#?}"
    );
    let (_, written, _) = camera_counts_add_up(&running);
    assert!(written >= 1.0 && written <= FRAMES as f64, "{written}");
    assert_eq!(
        sample(&running, &series("banco_stream_reconnects_total")),
        0.0
    );
    assert!(sample(&running, &series("banco_stream_published_bytes_total")) > 0.0);

    let mut received = vec![first];
    while (received.len() as u64) < FRAMES {
        received.push(next_unit(&mut viewer).await);
    }
    assert_eq!(gaps_only_before_keyframes(&received), 0);
    let (status, out) = camera.finish();
    assert!(status.success(), "{out}");
    assert!(out.contains(&format!("published {FRAMES} units")), "{out}");

    let after = scrape(&metrics);
    assert_eq!(
        sample(&after, &series("banco_video_units_relayed_total")),
        FRAMES as f64
    );
    assert_eq!(
        sample(&after, &series("banco_video_publisher_connected")),
        0.0
    );
    assert_eq!(sample(&after, &series("banco_video_viewers")), 1.0);
    assert_eq!(
        sample(&after, &series("banco_video_viewer_skips_total")),
        0.0
    );
    assert_eq!(
        sample(&after, &series("banco_video_units_skipped_total")),
        0.0
    );

    // The viewer leaves: the gauge follows once the broadcaster sees the stream reset.
    drop(viewer);
    banco_e2e::eventually_within(
        "the viewer who left to be no longer counted",
        Duration::from_secs(10),
        async || sample(&scrape(&metrics), &series("banco_video_viewers")) == 0.0,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_publishers_and_viewers_are_refused_with_their_reason() {
    require_plugins!();
    let studio = Studio::start();
    let service = studio.keys.issue("service", "camera-T01", "1h");
    let player = studio.keys.issue("player", "p1", "1h");
    let ingest = |token: &str| {
        let token = bearer(token);
        let url = studio.url();
        async move { VideoIngestClient::with_interceptor(channel(&url).await, token) }
    };
    let keyframe = || pb::VideoAccessUnit {
        table_id: "T01".to_owned(),
        sequence: 1,
        keyframe: true,
        codec: "h264".to_owned(),
        data: vec![
            0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce, 0, 0, 1, 0x65, 0x88,
        ],
        codec_config: Some(vec![0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce]),
        ..Default::default()
    };
    let publish = |token: String, units: Vec<pb::VideoAccessUnit>| {
        let connect = ingest(&token);
        async move { connect.await.publish(futures::stream::iter(units)).await }
    };

    let refused = publish(player.clone(), vec![keyframe()]).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    let mut unknown = keyframe();
    unknown.table_id = "T99".to_owned();
    let refused = publish(service.clone(), vec![unknown]).await.unwrap_err();
    assert_eq!(refused.code(), Code::NotFound, "{refused:?}");
    let mut vp8 = keyframe();
    vp8.codec = "vp8".to_owned();
    let refused = publish(service.clone(), vec![vp8]).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().contains("codec `vp8`"),
        "{}",
        refused.message()
    );
    let mut again = keyframe();
    again.sequence = 1;
    let refused = publish(service.clone(), vec![keyframe(), again])
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().contains("does not follow 1"),
        "{}",
        refused.message()
    );
    let summary = publish(service.clone(), vec![keyframe()])
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (
            summary.units_received,
            summary.keyframes,
            summary.last_sequence
        ),
        (1, 1, 1)
    );

    // `banco stream --frames N` publishes N units and prints the broadcaster's summary.
    let out = banco()
        .args([
            "stream",
            "--table",
            "T01",
            "--server",
            &studio.url(),
            "--token-file",
        ])
        .arg(&studio.camera_token)
        .args([
            "--width",
            "320",
            "--height",
            "240",
            "--frames",
            "30",
            "--no-overlay",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("published 30 units ("), "{stdout}");
    assert!(stdout.contains("the broadcaster saw 0 missing"), "{stdout}");
    // Bad settings are refused before anything starts.
    let out = banco()
        .args(["stream", "--server", &studio.url(), "--token-file"])
        .arg(&studio.camera_token)
        .args(["--width", "321"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("width 321"));

    // While `banco stream` publishes, a second publisher is refused.
    let _camera = studio.camera(KEYFRAME_INTERVAL, 800);
    next_unit(&mut studio.watch().await).await;
    let refused = publish(service.clone(), vec![keyframe()])
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::AlreadyExists, "{refused:?}");

    // An edge relays the video with its service token; a croupier's cannot watch.
    let mut relay =
        PlayerServiceClient::with_interceptor(channel(&studio.url()).await, bearer(&service));
    next_unit(
        &mut relay
            .watch_video(pb::WatchVideoRequest {
                table_id: "T01".to_owned(),
            })
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    let croupier = studio.keys.issue("croupier", "ada", "1h");
    let mut watcher =
        PlayerServiceClient::with_interceptor(channel(&studio.url()).await, bearer(&croupier));
    let refused = watcher
        .watch_video(pb::WatchVideoRequest {
            table_id: "T01".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        Code::PermissionDenied,
        "a croupier token cannot watch"
    );
    let mut viewer =
        PlayerServiceClient::with_interceptor(channel(&studio.url()).await, bearer(&player));
    let refused = viewer
        .watch_video(pb::WatchVideoRequest {
            table_id: "T99".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::NotFound, "{refused:?}");

    // `banco player video` refuses a command without anything to do before connecting.
    let out = banco()
        .args(["player", "--server", &studio.url(), "--token-file"])
        .arg(&studio.player_token)
        .args(["video"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("give --out FILE, --probe, or both"));
}

fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(std::fs::read(path).unwrap());
    banco_records::hex::to_hex(&digest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_round_has_a_clip_in_the_archive_whose_hash_matches_its_record() {
    require_plugins!();
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let db = dir.path().join("archive.db");
    let signed = SignedArchive::start(&keys, &format!("sqlite://{}", db.display()), dir.path());
    let archive = &signed.service;
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.archive_url = Some(archive.url());
    setup.table_key = Some(signed.table_keys.signing_key());
    let broadcaster_clips = dir.path().join("broadcaster-clips");
    setup.clips_dir = Some(broadcaster_clips.clone());
    setup.extra_args = vec!["--metrics-listen".into(), "127.0.0.1:0".into()];
    let (broadcaster, metrics) = Service::start_with_metrics("broadcaster", &setup.args(), true);
    let metrics = metrics.unwrap();
    let url = broadcaster.url();
    let camera_token = dir.path().join("camera.token");
    std::fs::write(&camera_token, keys.issue("service", "camera-T01", "1h")).unwrap();
    let _camera = Camera(
        banco()
            .args(["stream", "--table", "T01", "--server", &url, "--token-file"])
            .arg(&camera_token)
            .args([
                "--width",
                "320",
                "--height",
                "240",
                "--keyframe-interval",
                "15",
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let player = keys.issue("player", "viewer", "1h");
    let mut viewer = PlayerServiceClient::with_interceptor(channel(&url).await, bearer(&player));
    let mut units = viewer
        .watch_video(pb::WatchVideoRequest {
            table_id: "T01".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    next_unit(&mut units).await;

    let croupier_token = dir.path().join("croupier.token");
    std::fs::write(&croupier_token, keys.issue("croupier", "ada", "1h")).unwrap();
    croupier_cli(&url, &croupier_token, &["open-shoe"]);
    croupier_cli(&url, &croupier_token, &["burn", "2C"]);
    let opened = croupier_cli(&url, &croupier_token, &["open-betting"]);
    let round = opened
        .lines()
        .find_map(|l| l.strip_prefix("round "))
        .unwrap_or_else(|| panic!("no round in {opened}"))
        .trim()
        .to_owned();
    croupier_cli(&url, &croupier_token, &["close-betting"]);
    // The croupier takes a moment before the first card, as at a real table.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for card in ["9S", "2H", "KD", "3C"] {
        croupier_cli(&url, &croupier_token, &["deal", card]);
    }
    croupier_cli(&url, &croupier_token, &["confirm"]);

    // The record reaches the archive with its clip.
    let auditor = Auditor::new(&keys, &archive.url(), dir.path());
    let has_clip = |(ok, text): &(bool, String)| *ok && text.contains("\nclip ");
    let listed = banco_e2e::poll(
        Duration::from_secs(60),
        Duration::from_millis(250),
        async || {
            let out = auditor.run(&["round", &round]);
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        },
        has_clip,
    )
    .await;
    assert!(
        has_clip(&listed),
        "round {round} has no clip in the archive: {}",
        listed.1
    );
    let listing = listed.1;
    // One round: one clip written, one uploaded (the record followed it).
    let counts = scrape(&metrics);
    for name in [
        "banco_video_clips_written_total",
        "banco_video_clips_uploaded_total",
    ] {
        assert_eq!(
            sample(&counts, &format!("{name}{{table=\"T01\"}}")),
            1.0,
            "{name}"
        );
    }
    // The table sealed it: the archive checked the seal, and Verify checks it again.
    assert!(
        listing.contains("\nclip sealed by the table: "),
        "{listing}"
    );
    let verified = auditor.ok(&["verify"]);
    assert!(
        verified.contains("1 table signatures checked, 1 clip seals"),
        "{verified}"
    );
    let clip_line = listing.lines().find(|l| l.starts_with("clip ")).unwrap();
    let recorded_sha = clip_line.rsplit(' ').next().unwrap().to_owned();
    assert!(
        clip_line.starts_with(&format!("clip {round}.mp4 ")),
        "{clip_line}"
    );

    // The broadcaster's own copy, the archive's, and what an auditor fetches: one file.
    let local = broadcaster_clips.join(format!("{round}.mp4"));
    assert_eq!(
        sha256_hex(&local),
        recorded_sha,
        "the broadcaster's clip is the one recorded"
    );
    let fetched = dir.path().join("fetched.mp4");
    let fetched_arg = fetched.to_string_lossy().into_owned();
    let out = auditor.ok(&["video", &round, "--out", &fetched_arg]);
    assert!(out.contains("matches the archive record"), "{out}");
    assert_eq!(sha256_hex(&fetched), recorded_sha);
    // Betting closed to the result plus the tail: well over a second of 30 fps video.
    let frames = decode_mp4(&fetched).unwrap();
    assert!(frames >= 45, "the clip decodes to {frames} frames");
    // And plays in browsers and phones: 8-bit 4:2:0 in a profile they all take.
    let sps = playable_mp4(&fetched);
    assert_eq!((sps.width, sps.height), (320, 240));
    println!("round {round}: clip of {frames} frames ({sps}), sha256 {recorded_sha}");

    // Edited in the archive's clip folder: GetClip refuses to serve it as the round's.
    let archived = dir.path().join("clips").join(format!("{round}.mp4"));
    assert_eq!(
        sha256_hex(&archived),
        recorded_sha,
        "the archive holds the video itself"
    );
    let mut bytes = std::fs::read(&archived).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&archived, bytes).unwrap();
    let out = auditor.run(&["video", &round, "--out", &fetched_arg]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("no longer matches its record"), "{stderr}");

    // A round without a clip, and the player's reference client, say so.
    let out = auditor.run(&["video", "T01-S0001-H999", "--out", &fetched_arg]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no round"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broadcaster_stops_on_ctrl_c_with_a_camera_and_viewers_connected() {
    require_plugins!();
    let mut studio = Studio::start();
    let _camera = studio.camera(KEYFRAME_INTERVAL, 800);
    let mut viewer = studio.watch().await;
    next_unit(&mut viewer).await;
    let started = Instant::now();
    // Video streams and the camera's WatchTable never end by themselves: the broadcaster
    // ends them, so that it can stop.
    let stopped = tokio::task::spawn_blocking(move || {
        let stopped = studio.broadcaster.interrupt(Duration::from_secs(15));
        (stopped, studio)
    })
    .await
    .unwrap();
    assert!(stopped.0, "the broadcaster still runs 15 s after SIGINT");
    println!(
        "broadcaster stopped {:.0} ms after SIGINT",
        started.elapsed().as_secs_f64() * 1e3
    );
    // The viewer's stream ends (or breaks) instead of hanging.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = viewer.message().await {}
    })
    .await;
    assert!(ended.is_ok(), "the viewer's stream did not end");
}
