//! The clip of each round: one row per round that has one, written once; and for a
//! round without one, why (one row, the first said, until a clip arrives after all).

use super::{Store, on_pool};
use crate::error::ArchiveError;

/// A round's clip as stored: the file's name in the clip folder, its size and SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClipRow {
    pub path: String,
    pub size_bytes: i64,
    /// Lowercase hex.
    pub sha256: String,
}

/// Why a stored round has no clip: the reason in snake case (`no_video`, `missed`, …,
/// as `ClipMissingReason` names it) and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingClipRow {
    pub reason: String,
    pub detail: String,
}

/// What recording a clip did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClipPut {
    Stored,
    /// The same clip was already recorded.
    Same,
    /// The round already has a different clip, kept as it is.
    Different(ClipRow),
}

impl Store {
    /// Records `clip` for the stored round `round_id`, unless it has one.
    pub async fn put_clip(&self, round_id: &str, clip: &ClipRow) -> Result<ClipPut, ArchiveError> {
        if let Some(existing) = self.clip(round_id).await? {
            return Ok(if existing == *clip {
                ClipPut::Same
            } else {
                ClipPut::Different(existing)
            });
        }
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO clips (round_id, path, size_bytes, sha256) VALUES ($1, $2, $3, $4)",
            )
            .bind(round_id)
            .bind(&clip.path)
            .bind(clip.size_bytes)
            .bind(&clip.sha256)
            .execute(&mut *tx)
            .await?;
            // The clip came after all (a round sent again): it no longer lacks one.
            sqlx::query("DELETE FROM clips_missing WHERE round_id = $1")
                .bind(round_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok(ClipPut::Stored)
    }

    /// Records why the stored round `round_id` has no clip, unless it has a clip or a
    /// reason already (the first word stands).
    pub async fn put_clip_missing(
        &self,
        round_id: &str,
        missing: &MissingClipRow,
    ) -> Result<(), ArchiveError> {
        // One statement, so a clip stored meanwhile is never joined by a reason.
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO clips_missing (round_id, reason, detail)
                 SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM clips WHERE round_id = $1)
                 ON CONFLICT (round_id) DO NOTHING",
            )
            .bind(round_id)
            .bind(&missing.reason)
            .bind(&missing.detail)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Why `round_id` has no clip, if that was said.
    pub async fn clip_missing(
        &self,
        round_id: &str,
    ) -> Result<Option<MissingClipRow>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            let row: Option<(String, String)> =
                sqlx::query_as("SELECT reason, detail FROM clips_missing WHERE round_id = $1")
                    .bind(round_id)
                    .fetch_optional(pool)
                    .await?;
            row.map(|(reason, detail)| MissingClipRow { reason, detail })
        }))
    }

    /// The clip recorded for `round_id`, if any.
    pub async fn clip(&self, round_id: &str) -> Result<Option<ClipRow>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            let row: Option<(String, i64, String)> =
                sqlx::query_as("SELECT path, size_bytes, sha256 FROM clips WHERE round_id = $1")
                    .bind(round_id)
                    .fetch_optional(pool)
                    .await?;
            row.map(|(path, size_bytes, sha256)| ClipRow {
                path,
                size_bytes,
                sha256,
            })
        }))
    }
}
