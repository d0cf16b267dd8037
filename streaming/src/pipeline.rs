//! What every pipeline here shares: GStreamer initialised once, elements made by name with
//! a clear error when a plugin is missing, and bus errors turned into [`StreamingError`].

use std::sync::OnceLock;
use std::time::Duration;

use gstreamer as gst;
use gstreamer::prelude::*;

use crate::error::StreamingError;

/// Initialises GStreamer once per process; later calls return the first outcome.
pub fn init() -> Result<(), StreamingError> {
    static INIT: OnceLock<Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| gst::init().map_err(|e| e.to_string()))
        .clone()
        .map_err(StreamingError::Init)
}

/// Where Debian ships each element this crate uses, for the error that names it.
fn package_of(factory: &str) -> &'static str {
    match factory {
        "x264enc" => "gstreamer1.0-plugins-ugly",
        "openh264enc" | "h264parse" | "v4l2src" => "gstreamer1.0-plugins-bad / -good",
        "avdec_h264" => "gstreamer1.0-libav",
        "mp4mux" => "gstreamer1.0-plugins-good",
        _ => "gstreamer1.0-plugins-base",
    }
}

/// Whether the element factory `name` is installed.
pub fn has_element(name: &str) -> bool {
    init().is_ok() && gst::ElementFactory::find(name).is_some()
}

/// Makes an element of `factory`, named `name` in the pipeline.
pub(crate) fn make(factory: &'static str, name: &str) -> Result<gst::Element, StreamingError> {
    init()?;
    if gst::ElementFactory::find(factory).is_none() {
        return Err(StreamingError::MissingElement {
            element: factory,
            package: package_of(factory),
        });
    }
    gst::ElementFactory::make(factory)
        .name(name)
        .build()
        .map_err(|e| StreamingError::Build(format!("{factory}: {e}")))
}

/// Adds `elements` to `pipeline` and links them in order.
pub(crate) fn add_chain(
    pipeline: &gst::Pipeline,
    elements: &[&gst::Element],
) -> Result<(), StreamingError> {
    pipeline
        .add_many(elements.iter().copied())
        .map_err(|e| StreamingError::Build(e.to_string()))?;
    gst::Element::link_many(elements.iter().copied()).map_err(|e| {
        let names: Vec<String> = elements.iter().map(|e| e.name().to_string()).collect();
        StreamingError::Build(format!("could not link {}: {e}", names.join(" ! ")))
    })
}

/// Sets the pipeline's state, naming the state on failure (and the bus error, if any).
pub(crate) fn set_state(pipeline: &gst::Pipeline, state: gst::State) -> Result<(), StreamingError> {
    if let Err(e) = pipeline.set_state(state) {
        // The element that refused usually said why on the bus.
        if let Some(error) = pending_error(pipeline) {
            return Err(error);
        }
        return Err(StreamingError::StateChange {
            state: state_name(state),
            detail: e.to_string(),
        });
    }
    Ok(())
}

fn state_name(state: gst::State) -> &'static str {
    match state {
        gst::State::Null => "NULL",
        gst::State::Ready => "READY",
        gst::State::Paused => "PAUSED",
        gst::State::Playing => "PLAYING",
        _ => "VOID_PENDING",
    }
}

/// The first error already posted on the bus, if any.
fn pending_error(pipeline: &gst::Pipeline) -> Option<StreamingError> {
    let bus = pipeline.bus()?;
    while let Some(message) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let Some(error) = bus_error(&message) {
            return Some(error);
        }
    }
    None
}

/// The error a bus message carries, if it is one.
pub(crate) fn bus_error(message: &gst::Message) -> Option<StreamingError> {
    match message.view() {
        gst::MessageView::Error(err) => Some(StreamingError::Pipeline {
            element: err
                .src()
                .map_or_else(|| "pipeline".to_owned(), |s| s.path_string().to_string()),
            message: err.error().to_string(),
            debug: err.debug().map(|d| d.to_string()),
        }),
        _ => None,
    }
}

/// Waits for end-of-stream (or the first error) on the bus, for at most `timeout`.
pub(crate) fn wait_eos(pipeline: &gst::Pipeline, timeout: Duration) -> Result<(), StreamingError> {
    let bus = pipeline
        .bus()
        .ok_or_else(|| StreamingError::Build("the pipeline has no bus".to_owned()))?;
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(StreamingError::Timeout(timeout));
        }
        let Some(message) = bus.timed_pop_filtered(
            gst::ClockTime::from_nseconds(u64::try_from(left.as_nanos()).unwrap_or(u64::MAX)),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        ) else {
            return Err(StreamingError::Timeout(timeout));
        };
        if let Some(error) = bus_error(&message) {
            return Err(error);
        }
        if matches!(message.view(), gst::MessageView::Eos(_)) {
            return Ok(());
        }
    }
}

/// A pipeline set to NULL when dropped, so that no streaming thread outlives its owner.
#[derive(Debug)]
pub(crate) struct Owned(pub(crate) gst::Pipeline);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.set_state(gst::State::Null);
    }
}
