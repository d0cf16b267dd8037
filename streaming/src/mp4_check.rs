//! Reading an MP4 back: demuxed and decoded frame by frame, so that a test, the bench or an
//! auditor can tell that a file holds a playable picture, and how many frames.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;

use crate::error::StreamingError;
use crate::pipeline::{Owned, add_chain, make, set_state, wait_eos};

/// Decodes every frame of the H.264 track of the MP4 at `path`; returns how many.
pub fn decode_mp4(path: &Path) -> Result<u64, StreamingError> {
    if !path.is_file() {
        return Err(StreamingError::Config(format!(
            "{}: no such file",
            path.display()
        )));
    }
    crate::pipeline::init()?;
    let pipeline = Owned(gst::Pipeline::with_name("mp4-check"));
    let src = make("filesrc", "file")?;
    src.set_property("location", path.to_string_lossy().as_ref());
    let demux = make("qtdemux", "demux")?;
    let parse = make("h264parse", "parse")?;
    let decoder = make("avdec_h264", "decoder")?;
    let frames = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&frames);
    let sink = gst_app::AppSink::builder()
        .name("frames")
        .sync(false)
        .callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |sink| {
                    sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    counted.fetch_add(1, Ordering::Relaxed);
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        )
        .build();
    add_chain(&pipeline.0, &[&src, &demux])?;
    add_chain(&pipeline.0, &[&parse, &decoder, sink.upcast_ref()])?;
    // The demuxer makes its pads once it has read the file's header.
    let parse_sink = parse
        .static_pad("sink")
        .ok_or_else(|| StreamingError::Build("h264parse has no sink pad".to_owned()))?;
    demux.connect_pad_added(move |_, pad| {
        let is_video = pad
            .current_caps()
            .and_then(|caps| {
                caps.structure(0)
                    .map(|s| s.name().starts_with("video/x-h264"))
            })
            .unwrap_or(false);
        if is_video
            && !parse_sink.is_linked()
            && let Err(e) = pad.link(&parse_sink)
        {
            tracing::warn!(error = ?e, "could not link the MP4's video track");
        }
    });
    set_state(&pipeline.0, gst::State::Playing)?;
    wait_eos(&pipeline.0, Duration::from_secs(120))?;
    set_state(&pipeline.0, gst::State::Null)?;
    Ok(frames.load(Ordering::Relaxed))
}
