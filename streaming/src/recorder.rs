//! The viewer's end: access units as received, written to an MP4 file and/or decoded.
//!
//! ```text
//! appsrc ! h264parse ! tee ─ queue ! mp4mux ! filesink      (with a file)
//!                          └ queue ! avdec_h264 ! appsink   (when decoding)
//! ```
//! The MP4 holds the H.264 exactly as the table's encoder made it (no re-encoding); the
//! decoder proves that what arrived is a valid picture and counts its frames.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use banco_wire::pb;
use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;

use crate::error::StreamingError;
use crate::h264;
use crate::pipeline::{Owned, add_chain, make, set_state, wait_eos};

/// How long [`Recorder::finish`] waits for the file to be written out.
const FINISH_TIMEOUT: Duration = Duration::from_secs(60);

/// A frame time used when a publisher restarted and its timestamps went back: one frame
/// at 30 fps keeps the file's timeline increasing.
const REBASE_STEP_NS: u64 = 33_333_333;

/// What to do with the units.
#[derive(Debug, Clone, Default)]
pub struct RecorderOptions {
    /// Write an MP4 file here.
    pub mp4: Option<PathBuf>,
    /// Decode every unit and count the frames.
    pub decode: bool,
}

/// What a finished recording holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordingSummary {
    /// Access units pushed.
    pub units: u64,
    /// Frames the decoder produced (0 when not decoding).
    pub frames_decoded: u64,
    /// The decoded picture's size (0 when nothing was decoded).
    pub width: u32,
    pub height: u32,
}

/// A running viewer pipeline; [`Recorder::finish`] ends it and waits for the file.
#[derive(Debug)]
pub struct Recorder {
    pipeline: Owned,
    src: gst_app::AppSrc,
    decoded: Arc<Decoded>,
    units: u64,
    /// Unit pts that maps to 0 in the output, and the last output pts.
    base_ns: Option<i64>,
    last_ns: Option<u64>,
    started: bool,
}

#[derive(Debug, Default)]
struct Decoded {
    frames: AtomicU64,
    size: Mutex<(u32, u32)>,
}

impl Recorder {
    pub fn start(options: &RecorderOptions) -> Result<Recorder, StreamingError> {
        if options.mp4.is_none() && !options.decode {
            return Err(StreamingError::Config(
                "a recorder needs a file to write or decoding to do".to_owned(),
            ));
        }
        crate::pipeline::init()?;
        let pipeline = Owned(gst::Pipeline::with_name("viewer"));
        let src = gst_app::AppSrc::builder()
            .name("units")
            .caps(
                &gst::Caps::builder("video/x-h264")
                    .field("stream-format", "byte-stream")
                    .field("alignment", "au")
                    .build(),
            )
            .format(gst::Format::Time)
            // Units arrive from the network: never block the receiving task for long.
            .max_bytes(64 << 20)
            .block(false)
            .build();
        let parse = make("h264parse", "parse")?;
        let tee = make("tee", "split")?;
        add_chain(&pipeline.0, &[src.upcast_ref(), &parse, &tee])?;
        if let Some(path) = &options.mp4 {
            let queue = make("queue", "to-file")?;
            let mux = make("mp4mux", "mux")?;
            let sink = make("filesink", "file")?;
            sink.set_property("location", path.to_string_lossy().as_ref());
            add_chain(&pipeline.0, &[&mux, &sink])?;
            add_chain(&pipeline.0, &[&queue])?;
            // Left to itself, linking would pick the muxer's audio pad.
            let video = mux
                .request_pad_simple("video_%u")
                .ok_or_else(|| StreamingError::Build("mp4mux gave no video pad".to_owned()))?;
            queue
                .static_pad("src")
                .ok_or_else(|| StreamingError::Build("queue has no src pad".to_owned()))?
                .link(&video)
                .map_err(|e| StreamingError::Build(format!("queue ! mp4mux: {e:?}")))?;
            tee.link(&queue)
                .map_err(|e| StreamingError::Build(format!("tee ! queue: {e}")))?;
        }
        let decoded = Arc::new(Decoded::default());
        if options.decode {
            let queue = make("queue", "to-decoder")?;
            let decoder = make("avdec_h264", "decoder")?;
            let sink = gst_app::AppSink::builder()
                .name("frames")
                .sync(false)
                .build();
            let counted = Arc::clone(&decoded);
            sink.set_callbacks(
                gst_app::AppSinkCallbacks::builder()
                    .new_sample(move |sink| {
                        let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                        if counted.frames.fetch_add(1, Ordering::Relaxed) == 0
                            && let Some(size) = picture_size(&sample)
                        {
                            *counted
                                .size
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) = size;
                        }
                        Ok(gst::FlowSuccess::Ok)
                    })
                    .build(),
            );
            add_chain(&pipeline.0, &[&queue, &decoder, sink.upcast_ref()])?;
            tee.link(&queue)
                .map_err(|e| StreamingError::Build(format!("tee ! queue: {e}")))?;
        }
        set_state(&pipeline.0, gst::State::Playing)?;
        Ok(Recorder {
            pipeline,
            src,
            decoded,
            units: 0,
            base_ns: None,
            last_ns: None,
            started: false,
        })
    }

    /// Pushes one unit. Units before the first keyframe are skipped (nothing can decode
    /// them); returns whether this one was taken.
    pub fn push(&mut self, unit: &pb::VideoAccessUnit) -> Result<bool, StreamingError> {
        if unit.codec != "h264" {
            return Err(StreamingError::BadUnit(format!(
                "codec `{}`: only h264 is supported",
                unit.codec
            )));
        }
        if !h264::is_annex_b(&unit.data) {
            return Err(StreamingError::BadUnit(format!(
                "unit {}: not an Annex-B H.264 access unit",
                unit.sequence
            )));
        }
        if !self.started {
            if !unit.keyframe {
                return Ok(false);
            }
            self.started = true;
        }
        let pts = self.output_pts(unit.pts_ns);
        let mut data = Vec::with_capacity(unit.data.len() + 64);
        // A keyframe from a new publisher may carry its parameter sets only beside the data.
        if unit.keyframe
            && let Some(config) = &unit.codec_config
            && h264::parameter_sets(&unit.data).is_none()
        {
            data.extend_from_slice(config);
        }
        data.extend_from_slice(&unit.data);
        let mut buffer = gst::Buffer::from_mut_slice(data);
        {
            let buffer = buffer
                .get_mut()
                .ok_or_else(|| StreamingError::Build("a fresh buffer is shared".to_owned()))?;
            buffer.set_pts(gst::ClockTime::from_nseconds(pts));
            buffer.set_dts(gst::ClockTime::from_nseconds(pts));
            if !unit.keyframe {
                buffer.set_flags(gst::BufferFlags::DELTA_UNIT);
            }
        }
        self.src
            .push_buffer(buffer)
            .map_err(|e| self.flow_error(e))?;
        self.units += 1;
        Ok(true)
    }

    /// Frames decoded so far.
    pub fn frames_decoded(&self) -> u64 {
        self.decoded.frames.load(Ordering::Relaxed)
    }

    /// Ends the stream and waits until the file is complete and every frame decoded.
    pub fn finish(self) -> Result<RecordingSummary, StreamingError> {
        if self.units == 0 {
            return Err(StreamingError::BadUnit(
                "no keyframe arrived, so there is nothing to write".to_owned(),
            ));
        }
        self.src
            .end_of_stream()
            .map_err(|e| StreamingError::Build(format!("end of stream: {e}")))?;
        wait_eos(&self.pipeline.0, FINISH_TIMEOUT)?;
        set_state(&self.pipeline.0, gst::State::Null)?;
        let (width, height) = *self
            .decoded
            .size
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(RecordingSummary {
            units: self.units,
            frames_decoded: self.decoded.frames.load(Ordering::Relaxed),
            width,
            height,
        })
    }

    /// Output time of a unit: its pts from the first unit, kept increasing across a
    /// publisher's restart (whose clock starts again).
    fn output_pts(&mut self, pts_ns: i64) -> u64 {
        let base = *self.base_ns.get_or_insert(pts_ns);
        let mut pts = u64::try_from(pts_ns.saturating_sub(base)).unwrap_or(0);
        if let Some(last) = self.last_ns
            && pts <= last
        {
            let next = last + REBASE_STEP_NS;
            self.base_ns = Some(pts_ns.saturating_sub(i64::try_from(next).unwrap_or(i64::MAX)));
            pts = next;
        }
        self.last_ns = Some(pts);
        pts
    }

    fn flow_error(&self, flow: gst::FlowError) -> StreamingError {
        // The reason is on the bus; the flow return only says that the pipeline stopped.
        let bus_error = self.pipeline.0.bus().and_then(|bus| {
            bus.pop_filtered(&[gst::MessageType::Error])
                .and_then(|m| crate::pipeline::bus_error(&m))
        });
        bus_error.unwrap_or_else(|| StreamingError::Pipeline {
            element: "units".to_owned(),
            message: format!("the pipeline refused a unit: {flow:?}"),
            debug: None,
        })
    }
}

fn picture_size(sample: &gst::SampleRef) -> Option<(u32, u32)> {
    let caps = sample.caps()?;
    let s = caps.structure(0)?;
    let width = s.get::<i32>("width").ok()?;
    let height = s.get::<i32>("height").ok()?;
    Some((u32::try_from(width).ok()?, u32::try_from(height).ok()?))
}
