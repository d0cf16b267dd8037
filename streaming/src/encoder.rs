//! The table camera's pipeline: source → overlay → low-latency H.264 → access units.
//!
//! ```text
//! videotestsrc is-live | v4l2src ! videorate | any source ! videorate
//!   ! videoconvert ! videoscale ! capsfilter I420,WxH,FPS
//!   ! queue leaky=downstream ! textoverlay
//!   ! x264enc tune=zerolatency | openh264enc ! capsfilter profile=constrained-baseline
//!   ! h264parse config-interval=-1 ! capsfilter byte-stream,au ! appsink
//! ```
//! Every source reaches the encoder as 8-bit 4:2:0 (I420) at the configured size and rate,
//! whatever it gives (a camera's YUY2 or 10-bit frames, the test pattern's 10-bit 4:4:4):
//! left to negotiate, x264 takes the richest format offered and makes High 4:4:4
//! Predictive, which browsers, phones and hardware decoders do not play.
//! The pipeline runs on a real-time (Unix) clock, so a buffer's running time plus the
//! pipeline's base time is the wall-clock time it was captured at: that is the
//! `capture_time_unix_ns` every access unit carries, from which viewers measure delay.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use banco_wire::pb;
use gstreamer as gst;
use gstreamer::glib;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;

use crate::error::StreamingError;
use crate::h264;
use crate::pipeline::{Owned, add_chain, bus_error, make, set_state};
use crate::sps::{self, Sps};

/// Where the picture comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VideoSource {
    /// A moving SMPTE pattern, live (paced by the clock like a camera).
    TestPattern,
    /// A V4L2 camera, e.g. `/dev/video0`.
    Camera(PathBuf),
    /// Any other GStreamer source, written as for `gst-launch-1.0`: a camera behind a
    /// decoder (`v4l2src device=/dev/video0 ! jpegdec`), a network camera
    /// (`rtspsrc location=… ! decodebin`), or a test source in a given format
    /// (`videotestsrc is-live=true ! capsfilter caps=video/x-raw,format=YUY2`: the last
    /// item must be an element, not bare caps). Its one unlinked pad is the picture.
    Launch(String),
}

/// Which H.264 encoder to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncoderKind {
    /// x264 if installed, else OpenH264.
    Auto,
    X264,
    OpenH264,
}

impl std::str::FromStr for EncoderKind {
    type Err = StreamingError;

    fn from_str(s: &str) -> Result<EncoderKind, StreamingError> {
        match s {
            "auto" => Ok(EncoderKind::Auto),
            "x264" => Ok(EncoderKind::X264),
            "openh264" => Ok(EncoderKind::OpenH264),
            other => Err(StreamingError::Config(format!(
                "encoder `{other}`: expected auto, x264 or openh264"
            ))),
        }
    }
}

/// What to capture and how to encode it.
#[derive(Debug, Clone)]
pub struct EncoderConfig {
    /// Stamped on every access unit.
    pub table_id: String,
    pub source: VideoSource,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    pub bitrate_kbps: u32,
    /// Frames from one keyframe to the next: a new viewer waits at most this long for a
    /// picture it can decode, and a lagging one skips at most this much.
    pub keyframe_interval: u32,
    pub encoder: EncoderKind,
    /// The test pattern is paced by the clock like a camera; `false` makes frames as fast
    /// as the encoder takes them (to measure the encoder alone; capture times are then
    /// meaningless). A camera is always live.
    pub live: bool,
}

impl EncoderConfig {
    /// 1280×720 at 30 fps, 2,500 kbit/s, a keyframe every second, from the test pattern.
    pub fn new(table_id: &str) -> EncoderConfig {
        EncoderConfig {
            table_id: table_id.to_owned(),
            source: VideoSource::TestPattern,
            width: 1280,
            height: 720,
            fps: 30,
            bitrate_kbps: 2_500,
            keyframe_interval: 30,
            encoder: EncoderKind::Auto,
            live: true,
        }
    }

    /// Refuses values no encoder accepts, naming the field.
    pub fn check(&self) -> Result<(), StreamingError> {
        let bad = |what: String| Err(StreamingError::Config(what));
        if self.table_id.is_empty() {
            return bad("table id: empty".to_owned());
        }
        // H.264 with 4:2:0 chroma needs even dimensions.
        if !(16..=3840).contains(&self.width) || !self.width.is_multiple_of(2) {
            return bad(format!("width {}: must be even, 16 to 3840", self.width));
        }
        if !(16..=2160).contains(&self.height) || !self.height.is_multiple_of(2) {
            return bad(format!("height {}: must be even, 16 to 2160", self.height));
        }
        if !(1..=120).contains(&self.fps) {
            return bad(format!("fps {}: must be 1 to 120", self.fps));
        }
        if !(50..=100_000).contains(&self.bitrate_kbps) {
            return bad(format!(
                "bitrate {} kbit/s: must be 50 to 100000",
                self.bitrate_kbps
            ));
        }
        if !(1..=600).contains(&self.keyframe_interval) {
            return bad(format!(
                "keyframe interval {}: must be 1 to 600 frames",
                self.keyframe_interval
            ));
        }
        if let VideoSource::Camera(path) = &self.source
            && !path.exists()
        {
            return bad(format!("camera {}: no such device", path.display()));
        }
        Ok(())
    }
}

/// A running camera pipeline. Dropping it stops the pipeline.
#[derive(Debug)]
pub struct Encoder {
    pipeline: Owned,
    overlay: gst::Element,
    sink: gst_app::AppSink,
    stop: Arc<AtomicBool>,
    encoder_name: &'static str,
}

impl Encoder {
    /// Builds and starts the pipeline. `deliver` gets each access unit on GStreamer's
    /// streaming thread and must not block (it would stall the camera); `on_error` gets the
    /// first error the pipeline reports, once.
    pub fn start(
        config: &EncoderConfig,
        deliver: impl FnMut(pb::VideoAccessUnit) + Send + 'static,
        on_error: impl FnOnce(StreamingError) + Send + 'static,
    ) -> Result<Encoder, StreamingError> {
        config.check()?;
        crate::pipeline::init()?;
        let pipeline = Owned(gst::Pipeline::with_name("camera"));
        let (encoder, encoder_name) = make_encoder(config)?;
        let mut chain = encoder_input(config)?;
        // A slow encoder drops frames here instead of backing the camera up (an unpaced
        // source waits instead: every frame it makes is encoded).
        let queue = make("queue", "to-encoder")?;
        queue.set_property("max-size-buffers", 2u32);
        queue.set_property("max-size-time", 0u64);
        queue.set_property("max-size-bytes", 0u32);
        if config.live {
            queue.set_property_from_str("leaky", "downstream");
        }
        let overlay = make("textoverlay", "overlay")?;
        overlay.set_property_from_str("valignment", "top");
        overlay.set_property_from_str("halignment", "left");
        overlay.set_property("font-desc", format!("Sans {}", (config.height / 40).max(8)));
        overlay.set_property("shaded-background", true);
        overlay.set_property(
            "text",
            format!("{}  waiting for the table…", config.table_id),
        );
        // The profile every decoder takes (x264's `ultrafast` uses no more than it anyway);
        // asked on the encoder's output, it also keeps x264 to 8-bit 4:2:0 input.
        let profile_filter = make("capsfilter", "profile")?;
        profile_filter.set_property(
            "caps",
            gst::Caps::builder("video/x-h264")
                .field("profile", PROFILE)
                .build(),
        );
        let parse = make("h264parse", "parse")?;
        // SPS/PPS before every IDR, so that any keyframe is a starting point.
        parse.set_property("config-interval", -1i32);
        let h264_filter = make("capsfilter", "h264-caps")?;
        h264_filter.set_property(
            "caps",
            gst::Caps::builder("video/x-h264")
                .field("stream-format", "byte-stream")
                .field("alignment", "au")
                .build(),
        );
        let sink = gst_app::AppSink::builder()
            .name("units")
            .sync(false)
            // Units are handed on at once; this only bounds memory if `deliver` is slow.
            .max_buffers(4)
            .drop(true)
            .build();
        chain.extend([
            queue,
            overlay.clone(),
            encoder,
            profile_filter,
            parse,
            h264_filter,
            sink.clone().upcast(),
        ]);
        let refs: Vec<&gst::Element> = chain.iter().collect();
        add_chain(&pipeline.0, &refs)?;

        let clock = glib::Object::builder::<gst::SystemClock>()
            .property("clock-type", gst::ClockType::Realtime)
            .build();
        pipeline.0.use_clock(Some(&clock));

        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(unit_maker(config.table_id.clone(), deliver))
                .build(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        watch_bus(&pipeline.0, Arc::clone(&stop), on_error)?;
        set_state(&pipeline.0, gst::State::Playing)?;
        tracing::info!(
            encoder = encoder_name,
            width = config.width,
            height = config.height,
            fps = config.fps,
            bitrate_kbps = config.bitrate_kbps,
            keyframe_interval = config.keyframe_interval,
            "camera pipeline playing"
        );
        Ok(Encoder {
            pipeline,
            overlay,
            sink,
            stop,
            encoder_name,
        })
    }

    /// The GStreamer element encoding (`x264enc` or `openh264enc`).
    pub fn encoder_name(&self) -> &'static str {
        self.encoder_name
    }

    /// Replaces the text burnt into the picture.
    pub fn set_overlay(&self, text: &str) {
        self.overlay.set_property("text", text);
    }

    /// Asks the encoder for a keyframe now (with SPS/PPS): a publisher that reconnects
    /// sends one at once instead of waiting up to a keyframe interval.
    pub fn force_keyframe(&self) {
        let event = gst_video::UpstreamForceKeyUnitEvent::builder()
            .all_headers(true)
            .build();
        if !self.sink.send_event(event) {
            tracing::debug!("the encoder did not take the keyframe request");
        }
    }
}

impl Drop for Encoder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.pipeline.0.set_state(gst::State::Null);
    }
}

/// The H.264 profile asked of either encoder: Constrained Baseline, which every browser,
/// phone and hardware decoder plays.
const PROFILE: &str = "constrained-baseline";

/// The pixel format the encoder is given: 8-bit 4:2:0, what every H.264 decoder takes.
const ENCODER_FORMAT: &str = "I420";

/// The source and what makes its picture the encoder's input, the same for every source:
/// converted to [`ENCODER_FORMAT`], scaled to the configured size, and (for a source whose
/// rate is its own) paced to the configured rate.
fn encoder_input(config: &EncoderConfig) -> Result<Vec<gst::Element>, StreamingError> {
    let mut chain = match &config.source {
        VideoSource::TestPattern => {
            let src = make("videotestsrc", "source")?;
            src.set_property("is-live", config.live);
            src.set_property_from_str("pattern", "smpte");
            // Moving, so the encoder has motion to code, as with a real table.
            src.set_property("horizontal-speed", 4i32);
            // It draws at the rate asked: a videorate would only hold a frame back.
            vec![src]
        }
        VideoSource::Camera(device) => {
            let src = make("v4l2src", "source")?;
            src.set_property("device", device.to_string_lossy().as_ref());
            vec![src, make("videorate", "source-rate")?]
        }
        VideoSource::Launch(description) => {
            crate::pipeline::init()?;
            let src = gst::parse::bin_from_description_with_name(description, true, "source")
                .map_err(|e| StreamingError::Config(format!("source `{description}`: {e}")))?;
            vec![src.upcast(), make("videorate", "source-rate")?]
        }
    };
    let caps = gst::Caps::builder("video/x-raw")
        .field("format", ENCODER_FORMAT)
        .field("width", i32::try_from(config.width).unwrap_or(i32::MAX))
        .field("height", i32::try_from(config.height).unwrap_or(i32::MAX))
        .field(
            "framerate",
            gst::Fraction::new(i32::try_from(config.fps).unwrap_or(30), 1),
        )
        .build();
    let filter = make("capsfilter", "encoder-input")?;
    filter.set_property("caps", &caps);
    chain.extend([
        make("videoconvert", "source-convert")?,
        make("videoscale", "source-scale")?,
        filter,
    ]);
    Ok(chain)
}

fn make_encoder(config: &EncoderConfig) -> Result<(gst::Element, &'static str), StreamingError> {
    let x264 = || -> Result<gst::Element, StreamingError> {
        let enc = make("x264enc", "encoder")?;
        enc.set_property_from_str("tune", "zerolatency");
        enc.set_property_from_str("speed-preset", "ultrafast");
        enc.set_property("bitrate", config.bitrate_kbps);
        enc.set_property("key-int-max", config.keyframe_interval);
        Ok(enc)
    };
    let openh264 = || -> Result<gst::Element, StreamingError> {
        let enc = make("openh264enc", "encoder")?;
        enc.set_property("bitrate", config.bitrate_kbps.saturating_mul(1000));
        enc.set_property("gop-size", config.keyframe_interval);
        enc.set_property_from_str("complexity", "low");
        enc.set_property_from_str("rate-control", "bitrate");
        Ok(enc)
    };
    match config.encoder {
        EncoderKind::X264 => Ok((x264()?, "x264enc")),
        EncoderKind::OpenH264 => Ok((openh264()?, "openh264enc")),
        EncoderKind::Auto => match x264() {
            Ok(enc) => Ok((enc, "x264enc")),
            Err(e) if e.is_missing_element() => Ok((openh264()?, "openh264enc")),
            Err(e) => Err(e),
        },
    }
}

/// The appsink callback: each sample becomes one numbered access unit.
fn unit_maker(
    table_id: String,
    mut deliver: impl FnMut(pb::VideoAccessUnit) + Send + 'static,
) -> impl FnMut(&gst_app::AppSink) -> Result<gst::FlowSuccess, gst::FlowError> + Send + 'static {
    let mut sequence = 0u64;
    let mut config: Option<Vec<u8>> = None;
    move |sink| {
        let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
        let Some(buffer) = sample.buffer() else {
            return Ok(gst::FlowSuccess::Ok);
        };
        let Some(pts) = buffer.pts() else {
            tracing::warn!("the encoder gave a unit without a timestamp: dropped");
            return Ok(gst::FlowSuccess::Ok);
        };
        let running = sample
            .segment()
            .and_then(|s| s.downcast_ref::<gst::ClockTime>())
            .and_then(|s| s.to_running_time(pts))
            .unwrap_or(pts);
        let base = sink.base_time().unwrap_or(gst::ClockTime::ZERO);
        let map = buffer.map_readable().map_err(|_| gst::FlowError::Error)?;
        let data = map.as_slice().to_vec();
        drop(map);
        let keyframe = h264::is_idr(&data);
        let codec_config = if keyframe {
            if let Some(sets) = h264::parameter_sets(&data) {
                if config.as_ref() != Some(&sets) {
                    log_stream_format(&sets);
                }
                config = Some(sets);
            }
            config.clone()
        } else {
            None
        };
        if keyframe && codec_config.is_none() {
            tracing::warn!("a keyframe came before any SPS/PPS: dropped");
            return Ok(gst::FlowSuccess::Ok);
        }
        sequence += 1;
        deliver(pb::VideoAccessUnit {
            table_id: table_id.clone(),
            sequence,
            pts_ns: nanos(running),
            capture_time_unix_ns: nanos(base + running),
            keyframe,
            codec: "h264".to_owned(),
            data,
            codec_config,
        });
        Ok(gst::FlowSuccess::Ok)
    }
}

/// Says what the encoder makes, once and whenever it changes: an operator sees at start
/// whether viewers' browsers and phones can play it.
fn log_stream_format(parameter_sets: &[u8]) {
    match Sps::from_annex_b(parameter_sets) {
        Ok(sps) => match sps::playable(&sps) {
            Ok(()) => tracing::info!(format = %sps, "encoding H.264"),
            Err(e) => tracing::warn!(format = %sps, "encoding {e}"),
        },
        Err(e) => tracing::warn!("the encoder's SPS cannot be read: {e}"),
    }
}

fn nanos(t: gst::ClockTime) -> i64 {
    i64::try_from(t.nseconds()).unwrap_or(i64::MAX)
}

/// Reports the pipeline's first error from a thread of its own, until `stop`.
fn watch_bus(
    pipeline: &gst::Pipeline,
    stop: Arc<AtomicBool>,
    on_error: impl FnOnce(StreamingError) + Send + 'static,
) -> Result<(), StreamingError> {
    let bus = pipeline
        .bus()
        .ok_or_else(|| StreamingError::Build("the pipeline has no bus".to_owned()))?;
    std::thread::Builder::new()
        .name("camera-bus".to_owned())
        .spawn(move || {
            let poll = gst::ClockTime::from_mseconds(200);
            while !stop.load(Ordering::Relaxed) {
                let Some(message) =
                    bus.timed_pop_filtered(poll, &[gst::MessageType::Error, gst::MessageType::Eos])
                else {
                    continue;
                };
                let error = bus_error(&message).unwrap_or_else(|| StreamingError::Pipeline {
                    element: "source".to_owned(),
                    message: "the camera ended its stream".to_owned(),
                    debug: None,
                });
                on_error(error);
                return;
            }
        })
        .map_err(|e| StreamingError::Build(format!("bus thread: {e}")))?;
    Ok(())
}
