//! Live video: the table camera's access units in through VideoIngest, out to every
//! viewer through WatchVideo.
//!
//! - [`ingest`]: Publish, role `service`; one publisher per table; each unit checked
//!   strictly (table, codec, Annex-B, keyframes with their SPS/PPS, sequence increasing).
//! - [`relay`]: per table, the current GOP (from the last keyframe) and a broadcast of
//!   each unit, encoded to protobuf once for every viewer.
//! - [`viewer`]: one viewer's stream: the GOP first, so the picture appears at once, then
//!   live units; a viewer that falls behind skips to the next keyframe, alone.
//! - [`clips`]: an MP4 of every round, betting closed to result, for the archive.
//! - [`clip_store`]: what each round's clip is (coming, written, or missing and why),
//!   where the archive sink asks for it.

pub(crate) mod clip_store;
#[cfg(feature = "clips")]
pub(crate) mod clips;
#[cfg(all(test, feature = "clips"))]
mod delivery_tests;
pub(crate) mod ingest;
pub(crate) mod relay;
#[cfg(all(test, feature = "clips"))]
pub(crate) mod test_table;
mod viewer;

pub(crate) use ingest::VideoIngestServer;
pub(crate) use relay::VideoRelay;
pub(crate) use viewer::{VideoBytes, VideoStream, decoded};
