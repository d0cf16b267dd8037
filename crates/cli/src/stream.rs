//! `banco stream`: the table camera (or a moving test pattern) with the round burnt in,
//! encoded to low-latency H.264 and published to the broadcaster's VideoIngest.
//!
//! Three tasks: the GStreamer pipeline (its own threads), which hands each access unit to
//! the publisher without waiting; the publisher, which keeps one Publish stream open and
//! reconnects by itself; and the overlay, which watches the table (WatchTable, with the
//! same service token) and redraws the text four times a second for the countdown.
//!
//! The pipeline is GStreamer's ([`camera`], the `gstreamer` feature); a build without it
//! still has the command, which refuses naming the feature.

use std::path::PathBuf;
#[cfg(not(feature = "gstreamer"))]
use std::process::ExitCode;

use crate::player::connect::ServerArgs;

#[cfg(feature = "gstreamer")]
mod camera;

#[cfg(feature = "gstreamer")]
pub(crate) use camera::run;

#[derive(Debug, clap::Args)]
pub(crate) struct StreamArgs {
    /// The table whose camera this is.
    #[arg(long, default_value = "T01")]
    table: String,
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    ops: crate::ops::OpsArgs,
    /// File holding a `service` token (`banco token issue --role service --sub camera-T01`).
    #[arg(long)]
    token_file: PathBuf,
    /// A V4L2 camera, e.g. /dev/video0 (default: a moving test pattern).
    #[arg(long, value_name = "DEVICE")]
    camera: Option<PathBuf>,
    #[command(flatten)]
    encode: EncodeArgs,
    /// Do not watch the table: the picture carries no round overlay.
    #[arg(long)]
    no_overlay: bool,
    /// Stop once this many units reached the broadcaster (tests, demos); default: run
    /// until interrupted.
    #[arg(long, value_name = "N")]
    frames: Option<u64>,
}

/// How the picture is encoded (`banco stream`'s flags, which `banco-bench video` passes on).
#[derive(Debug, Clone, clap::Args)]
pub struct EncodeArgs {
    #[arg(long, default_value_t = 1280)]
    width: u32,
    #[arg(long, default_value_t = 720)]
    height: u32,
    #[arg(long, default_value_t = 30)]
    pub fps: u32,
    #[arg(long, default_value_t = 2_500)]
    bitrate_kbps: u32,
    /// Frames from one keyframe to the next: how long a new viewer may wait for a picture
    /// (the broadcaster's cache makes it appear at once) and how far a lagging one skips.
    #[arg(long, default_value_t = 30, value_name = "FRAMES")]
    keyframe_interval: u32,
    /// x264 (`x264enc tune=zerolatency`), openh264, or auto (x264 when installed).
    #[arg(long, default_value = "auto")]
    encoder: String,
}

impl EncodeArgs {
    /// The same settings as `banco stream` flags.
    pub fn flags(&self) -> Vec<String> {
        [
            ("--width", self.width.to_string()),
            ("--height", self.height.to_string()),
            ("--fps", self.fps.to_string()),
            ("--bitrate-kbps", self.bitrate_kbps.to_string()),
            ("--keyframe-interval", self.keyframe_interval.to_string()),
            ("--encoder", self.encoder.clone()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_owned(), value])
        .collect()
    }

    /// One line for a report: `1280x720 at 30 fps, 2500 kbit/s, keyframe every 30 frames`.
    pub fn describe(&self) -> String {
        format!(
            "{}x{} at {} fps, {} kbit/s, keyframe every {} frames",
            self.width, self.height, self.fps, self.bitrate_kbps, self.keyframe_interval
        )
    }
}

/// Encoding takes GStreamer, which this build left out.
#[cfg(not(feature = "gstreamer"))]
pub(crate) fn run(_: &StreamArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "banco stream: encoding the camera's video needs the `gstreamer` feature, which this \
         build of banco left out"
    )
}
