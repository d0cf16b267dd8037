//! The camera pipeline into the viewer's: what is encoded decodes, frame for frame, and the
//! MP4 written plays back. Skips (does not fail) where a GStreamer plugin is absent.

use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_streaming::sps::{Sps, playable, playable_keyframes};
use banco_streaming::{
    Encoder, EncoderConfig, EncoderKind, Recorder, RecorderOptions, StreamingError, VideoSource,
    decode_mp4, h264, mp4_sps,
};
use banco_wire::pb;

/// Skips the test when a plugin is missing; any other error fails it.
macro_rules! or_skip {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) if StreamingError::is_missing_element(&e) => {
                banco_testkit::skipped(module_path!(), &e.to_string());
                return;
            }
            Err(e) => panic!("{e}"),
        }
    };
}

fn small_config() -> EncoderConfig {
    let mut config = EncoderConfig::new("T01");
    config.width = 320;
    config.height = 240;
    config.fps = 30;
    config.bitrate_kbps = 400;
    config.keyframe_interval = 10;
    config
}

fn encode(
    config: &EncoderConfig,
    count: usize,
) -> Result<Vec<pb::VideoAccessUnit>, StreamingError> {
    let (tx, rx) = mpsc::channel();
    let encoder = Encoder::start(
        config,
        move |unit| {
            let _ = tx.send(unit);
        },
        |e| eprintln!("pipeline error: {e}"),
    )?;
    let mut units = Vec::with_capacity(count);
    while units.len() < count {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(unit) => units.push(unit),
            Err(e) => panic!("the encoder stopped after {} units: {e}", units.len()),
        }
    }
    drop(encoder);
    Ok(units)
}

/// The SPS of every keyframe, each one browsers play at the configured size; the first is
/// returned.
fn playable_sps(config: &EncoderConfig, units: &[pb::VideoAccessUnit]) -> Sps {
    let found = playable_keyframes(units).unwrap_or_else(|e| panic!("{e}"));
    for sps in &found {
        assert_eq!((sps.width, sps.height), (config.width, config.height));
    }
    println!(
        "{:?} from {:?}: {}",
        config.encoder, config.source, found[0]
    );
    found[0]
}

fn now_ns() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    )
    .unwrap_or(i64::MAX)
}

#[test]
fn encoded_units_are_numbered_timed_and_keyed() {
    let config = small_config();
    let before = now_ns();
    let units = or_skip!(encode(&config, 25));
    let after = now_ns();
    for (i, unit) in units.iter().enumerate() {
        assert_eq!(
            unit.sequence,
            i as u64 + 1,
            "units are numbered from 1 without gaps"
        );
        assert_eq!(unit.codec, "h264");
        assert_eq!(unit.table_id, "T01");
        assert!(h264::is_annex_b(&unit.data));
        assert!(
            (before - 1_000_000_000..=after).contains(&unit.capture_time_unix_ns),
            "capture time {} is not within the test's run",
            unit.capture_time_unix_ns
        );
        // One keyframe per interval, each with its SPS and PPS.
        assert_eq!(unit.keyframe, i % 10 == 0, "unit {}", unit.sequence);
        assert_eq!(unit.codec_config.is_some(), unit.keyframe);
    }
    for pair in units.windows(2) {
        assert!(pair[1].pts_ns > pair[0].pts_ns, "pts increase");
        assert!(pair[1].capture_time_unix_ns > pair[0].capture_time_unix_ns);
    }
    // Live: 25 frames at 30 fps take about 0.8 s of capture time.
    let span = units[24].capture_time_unix_ns - units[0].capture_time_unix_ns;
    assert!(
        (700_000_000..=900_000_000).contains(&span),
        "24 frame intervals at 30 fps spanned {span} ns"
    );
}

#[test]
fn what_is_encoded_decodes_frame_for_frame_and_the_mp4_plays_back() {
    let config = small_config();
    let units = or_skip!(encode(&config, 40));
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("out.mp4");
    let mut recorder = or_skip!(Recorder::start(&RecorderOptions {
        mp4: Some(path.clone()),
        decode: true,
    }));
    // A viewer that joins mid-GOP: units before the next keyframe cannot be decoded.
    for unit in &units[3..] {
        let taken = recorder.push(unit).expect("push");
        assert_eq!(taken, unit.sequence > 10, "unit {}", unit.sequence);
    }
    let summary = recorder.finish().expect("finish");
    assert_eq!(summary.units, 30);
    assert_eq!(summary.frames_decoded, 30);
    assert_eq!((summary.width, summary.height), (320, 240));
    assert_eq!(or_skip!(decode_mp4(&path)), 30);
}

#[test]
fn a_unit_that_is_not_h264_is_refused_and_changes_nothing() {
    let mut recorder = or_skip!(Recorder::start(&RecorderOptions {
        mp4: None,
        decode: true,
    }));
    let bad = pb::VideoAccessUnit {
        codec: "vp8".to_owned(),
        data: vec![0, 0, 1, 0x65],
        keyframe: true,
        ..Default::default()
    };
    let err = recorder.push(&bad).expect_err("vp8 refused");
    assert!(err.to_string().contains("vp8"), "{err}");
    let garbage = pb::VideoAccessUnit {
        codec: "h264".to_owned(),
        data: vec![1, 2, 3, 4],
        keyframe: true,
        sequence: 7,
        ..Default::default()
    };
    let err = recorder.push(&garbage).expect_err("not Annex-B");
    assert!(err.to_string().contains("unit 7"), "{err}");
    let err = recorder.finish().expect_err("nothing to write");
    assert!(err.to_string().contains("no keyframe"), "{err}");
}

#[test]
fn bad_configuration_is_refused_naming_the_field() {
    let mut config = small_config();
    config.width = 321;
    let err = Encoder::start(&config, |_| {}, |_| {}).expect_err("odd width");
    assert!(err.to_string().contains("width 321"), "{err}");
    let mut config = small_config();
    config.source = banco_streaming::VideoSource::Camera("/dev/no-such-camera".into());
    let err = Encoder::start(&config, |_| {}, |_| {}).expect_err("no camera");
    assert!(err.to_string().contains("/dev/no-such-camera"), "{err}");
}

#[test]
fn openh264_units_decode_too() {
    let mut config = small_config();
    config.encoder = banco_streaming::EncoderKind::OpenH264;
    let units = or_skip!(encode(&config, 30));
    assert!(units[0].keyframe, "the first unit is a keyframe");
    assert!(units.iter().all(|u| u.keyframe == u.codec_config.is_some()));
    let mut recorder = or_skip!(Recorder::start(&RecorderOptions {
        mp4: None,
        decode: true,
    }));
    for unit in &units {
        assert!(recorder.push(unit).expect("push"));
    }
    let summary = recorder.finish().expect("finish");
    assert_eq!(summary.frames_decoded, 30);
}

#[test]
fn an_unpaced_source_encodes_every_frame_as_fast_as_it_can() {
    let mut config = small_config();
    config.live = false;
    let started = std::time::Instant::now();
    let units = or_skip!(encode(&config, 90));
    // Paced, 90 frames at 30 fps take 3 s; the figure is printed, not judged.
    println!(
        "320x240 unpaced: 90 frames in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(units.windows(2).all(|w| w[1].sequence == w[0].sequence + 1));
    let mut recorder = or_skip!(Recorder::start(&RecorderOptions {
        mp4: None,
        decode: true,
    }));
    for unit in &units {
        recorder.push(unit).expect("push");
    }
    assert_eq!(recorder.finish().expect("finish").frames_decoded, 90);
}

/// The test pattern through `encoder`: every keyframe's SPS is one browsers play.
fn test_pattern_plays_everywhere(encoder: EncoderKind) {
    let mut config = small_config();
    config.encoder = encoder;
    let units = or_skip!(encode(&config, 21));
    playable_sps(&config, &units);
}

#[test]
fn x264_from_the_test_pattern_is_8_bit_4_2_0_in_a_profile_browsers_play() {
    test_pattern_plays_everywhere(EncoderKind::X264);
}

#[test]
fn openh264_from_the_test_pattern_is_8_bit_4_2_0_in_a_profile_browsers_play() {
    test_pattern_plays_everywhere(EncoderKind::OpenH264);
}

/// A source in the formats cameras give (4:2:2 as YUY2 or from an MJPEG decoder, 10-bit
/// 4:4:4 or 4:2:2), at another size and rate than asked: converted, scaled and paced into
/// the same 8-bit 4:2:0 as the test pattern, as a V4L2 camera's picture is.
#[test]
fn a_camera_in_any_format_is_encoded_to_8_bit_4_2_0() {
    let cases = [
        ("Y444_10LE", EncoderKind::X264),
        ("I422_10LE", EncoderKind::X264),
        ("YUY2", EncoderKind::X264),
        ("Y42B", EncoderKind::X264),
        ("Y444_10LE", EncoderKind::OpenH264),
    ];
    for (format, encoder) in cases {
        let mut config = small_config();
        config.encoder = encoder;
        config.source = VideoSource::Launch(format!(
            "videotestsrc is-live=true pattern=ball ! \
             capsfilter caps=video/x-raw,format={format},width=640,height=480,framerate=60/1"
        ));
        let units = or_skip!(encode(&config, 11));
        playable_sps(&config, &units);
    }
}

/// A round's clip as the broadcaster's clip writer records it (the units as received,
/// into MP4 without decoding): its `avcC` holds a playable SPS.
#[test]
fn a_stored_clip_plays_in_browsers_and_phones() {
    for encoder in [EncoderKind::X264, EncoderKind::OpenH264] {
        let mut config = small_config();
        config.encoder = encoder;
        let units = or_skip!(encode(&config, 20));
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("T01-S0001-H001.mp4");
        let mut recorder = or_skip!(Recorder::start(&RecorderOptions {
            mp4: Some(path.clone()),
            decode: false,
        }));
        for unit in &units {
            recorder.push(unit).expect("push");
        }
        recorder.finish().expect("finish");
        let sps = mp4_sps(&path).unwrap_or_else(|e| panic!("{e}"));
        println!("{encoder:?} clip: {sps}");
        if let Err(e) = playable(&sps) {
            panic!("{encoder:?} clip ({sps}): {e}");
        }
        assert_eq!(
            sps,
            playable_sps(&config, &units),
            "the clip keeps the SPS sent"
        );
    }
}

#[test]
fn a_source_description_that_does_not_parse_is_refused_naming_it() {
    let mut config = small_config();
    config.source = VideoSource::Launch("no-such-element-here".to_owned());
    let err = Encoder::start(&config, |_| {}, |_| {}).expect_err("bad source");
    assert!(
        err.to_string().contains("source `no-such-element-here`"),
        "{err}"
    );
}
