//! # banco-broadcaster
//!
//! The gRPC face of the table actors one broadcaster hosts (docs/src/architecture/index.md,
//! "Processes and data flow"):
//!
//! - **TableService** (role `croupier`): each request is read strictly, turned into a table
//!   [`banco_table::Command`] whose `by` is the croupier's token subject, and submitted to
//!   the table's actor with the request's `command_id`; the reply carries the table's state
//!   after it, or the table's refusal. `WatchTable` streams the state after every change
//!   (also to role `service`: the camera's overlay).
//! - **PlayerService** (role `player`): the lobby, subscriptions, bets, seats, history,
//!   balance, chat and live video. The player is always the token's subject.
//! - [`serve`]: every service with gRPC health and reflection, plaintext only on loopback.
//!   The broadcaster speaks HTTP/2 itself: each connection's task writes the Subscribe
//!   streams of that connection (one wake-up and one write per event for all of them);
//!   every other call goes through tonic's routes, as hyper would serve it.
//! - **VideoIngest** (role `service`) and `WatchVideo`: the table camera's H.264 relayed
//!   to every viewer with a GOP cache and a keyframe-skip drop policy; a clip of every
//!   round ([`ClipStore`]) uploaded to the archive with the round's record.
//! - [`OutboxFile`]: an archive sink that appends each finished round as one JSON line,
//!   until the archive service exists.
//! - [`EventLog`] (`--events`): every event of each table also published, in order and
//!   exactly once, to the table's own stream on NATS JetStream, with the table's record
//!   (owner, lobby entry, public snapshot) beside it; a restart resumes subscribers from
//!   the stream.
//! - [`serve_edge`] (`banco edge`): PlayerService served from those streams by a process
//!   that holds no table state, on the same fan-out and HTTP/2 serving, bets and the rest
//!   forwarded to the table's broadcaster in the player's name.
//!
//! Handlers never touch table state: they ask the actor ([`banco_table::actor::TableHandle`]),
//! the only writer. One `From<BroadcasterError> for Status` decides every gRPC code.

mod archive_sink;
#[cfg(feature = "jetstream")]
mod edge;
mod error;
mod events;
mod history;
mod hosted;
// The modules below hold helpers for the edge and the event streams (`jetstream`) or the
// clip recorder (`clips`), which go unused when that feature is left out; dead code in them
// is caught in the default build, which has every feature.
#[cfg_attr(not(feature = "jetstream"), allow(dead_code))]
mod hub;
#[cfg_attr(not(feature = "jetstream"), allow(dead_code))]
mod limits;
#[cfg_attr(not(all(feature = "clips", feature = "jetstream")), allow(dead_code))]
mod metrics;
mod outbox;
mod player_service;
mod routing;
mod serve;
mod subscribe;
mod table_routes;
mod table_service;
#[cfg_attr(not(all(feature = "clips", feature = "jetstream")), allow(dead_code))]
mod video;
mod web;
mod wire;

pub use archive_sink::{ArchiveClient, round_record};
pub use banco_auth::{ServerTls, TlsError};
#[cfg(feature = "jetstream")]
pub use edge::{EdgeOptions, EdgeStartError, serve_edge};
pub use error::BroadcasterError;
pub use events::EventOptions;
#[cfg(feature = "jetstream")]
pub use events::{EventLog, EventsError};
pub use hosted::HostedTable;
pub use hub::{FanoutLimits, HubError};
pub use limits::{Rate, RequestLimits};
pub use metrics::{
    EdgeMetricFamilies, EventMetricFamilies, HubMetricFamilies, VideoMetricFamilies,
};
pub use outbox::OutboxFile;
pub use player_service::{PlayerServer, WelcomeCredit};
pub use serve::{CONNECTION_DRAIN, ServeError, ServeOptions, StartError, serve, table_workers};
pub use table_service::TableServer;
pub use video::clip_store::{
    ClipFile, ClipMissing, ClipStore, ClipStoreError, MissingReason, RoundClip, clip_name,
};
#[cfg(feature = "clips")]
pub use video::clips::CLIP_TAIL;
pub use web::{Origin, OriginError, WebOptions};
