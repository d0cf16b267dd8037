//! # banco-streaming
//!
//! The table's live video with GStreamer (docs/src/architecture/index.md, "streaming"):
//!
//! - [`Encoder`]: the camera (V4L2) or a moving test pattern, with the round's state burnt
//!   in ([`Overlay`]), encoded to low-latency H.264 (x264 `zerolatency`, or OpenH264) into
//!   numbered access units that carry their capture time.
//! - [`Publisher`]: sends the units to the broadcaster's VideoIngest and reconnects by
//!   itself, starting each connection at a fresh keyframe; it never blocks the encoder.
//! - [`Recorder`]: the viewer's end, and the broadcaster's round clips: units written to
//!   MP4 without re-encoding and/or decoded (frame count and size).
//!
//! The pipelines (encoder, recorder, MP4 checks) are the default feature `gstreamer`;
//! without it the crate keeps what needs no GStreamer libraries: [`h264`] and [`sps`]
//! parsing, the [`Overlay`]'s text and the [`Publisher`].
//!
//! Every pipeline is built from explicit elements; a missing plugin is a
//! [`StreamingError::MissingElement`] naming it, and bus errors are typed
//! [`StreamingError::Pipeline`]s.

#[cfg(feature = "gstreamer")]
mod encoder;
mod error;
pub mod h264;
#[cfg(feature = "gstreamer")]
mod mp4_check;
mod overlay;
#[cfg(feature = "gstreamer")]
mod pipeline;
mod publisher;
#[cfg(feature = "gstreamer")]
mod recorder;
pub mod sps;

#[cfg(feature = "gstreamer")]
pub use encoder::{Encoder, EncoderConfig, EncoderKind, VideoSource};
pub use error::StreamingError;
#[cfg(feature = "gstreamer")]
pub use mp4_check::{decode_mp4, mp4_sps};
pub use overlay::Overlay;
#[cfg(feature = "gstreamer")]
pub use pipeline::{has_element, init};
pub use publisher::{Publisher, PublisherStats};
#[cfg(feature = "gstreamer")]
pub use recorder::{Recorder, RecorderOptions, RecordingSummary};
