//! The clip of each round: one row per round that has one, written once.

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
            sqlx::query(
                "INSERT INTO clips (round_id, path, size_bytes, sha256) VALUES ($1, $2, $3, $4)",
            )
            .bind(round_id)
            .bind(&clip.path)
            .bind(clip.size_bytes)
            .bind(&clip.sha256)
            .execute(pool)
            .await?;
        });
        Ok(ClipPut::Stored)
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
