//! The broadcaster's own wire helpers: the server's clock as the wire tells it, and why a
//! round has no clip. The table's types convert in `banco_table::convert`.

use std::time::{SystemTime, UNIX_EPOCH};

use banco_wire::{Timestamp, pb};

use crate::video::clip_store::{ClipMissing, MissingReason};

/// The server's clock now, in unix milliseconds.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why a round has no clip, as the archive keeps it (the detail cut to what it takes).
pub(crate) fn clip_missing_to_pb(missing: &ClipMissing) -> pb::ClipMissing {
    let mut end = missing
        .detail
        .len()
        .min(banco_wire::MAX_CLIP_MISSING_DETAIL_BYTES);
    while !missing.detail.is_char_boundary(end) {
        end -= 1;
    }
    let reason = match missing.reason {
        MissingReason::NoVideo => pb::ClipMissingReason::NoVideo,
        MissingReason::RecorderFailed => pb::ClipMissingReason::RecorderFailed,
        MissingReason::Missed => pb::ClipMissingReason::Missed,
        MissingReason::NotFinished => pb::ClipMissingReason::NotFinished,
        MissingReason::FileGone => pb::ClipMissingReason::FileGone,
        MissingReason::Refused => pb::ClipMissingReason::Refused,
    };
    pb::ClipMissing {
        reason: reason.into(),
        detail: missing.detail[..end].to_owned(),
    }
}

/// The server's clock now.
pub(crate) fn now() -> Timestamp {
    Timestamp::from(SystemTime::now())
}
