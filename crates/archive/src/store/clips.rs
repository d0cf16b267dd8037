//! The clip of each round: one row per round that has one, written once; and for a
//! round without one, why (one row, the first said, until a clip arrives after all).

use std::collections::HashMap;

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

/// What is stored of one round's clip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredClip {
    pub clip: Option<ClipRow>,
    pub missing: Option<MissingClipRow>,
    /// The table's seal of `clip` or `missing`, hex.
    pub seal: Option<String>,
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
    /// Records `clip` for the stored round `round_id`, unless it has one, with the table's
    /// `seal` of it (which replaces the seal of a reason it had no clip).
    pub async fn put_clip(
        &self,
        round_id: &str,
        clip: &ClipRow,
        seal: Option<&str>,
    ) -> Result<ClipPut, ArchiveError> {
        if let Some(existing) = self.clip(round_id).await? {
            if existing != *clip {
                return Ok(ClipPut::Different(existing));
            }
            // The same clip: its seal, if it was stored without one.
            if let Some(seal) = seal {
                on_pool!(self, |pool| {
                    sqlx::query(
                        "INSERT INTO clip_seals (round_id, seal) VALUES ($1, $2)
                         ON CONFLICT (round_id) DO NOTHING",
                    )
                    .bind(round_id)
                    .bind(seal)
                    .execute(pool)
                    .await?;
                });
            }
            return Ok(ClipPut::Same);
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
            // The clip came after all (a round sent again): it no longer lacks one, and the
            // seal of why it had none goes with it.
            sqlx::query("DELETE FROM clips_missing WHERE round_id = $1")
                .bind(round_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM clip_seals WHERE round_id = $1")
                .bind(round_id)
                .execute(&mut *tx)
                .await?;
            if let Some(seal) = seal {
                sqlx::query("INSERT INTO clip_seals (round_id, seal) VALUES ($1, $2)")
                    .bind(round_id)
                    .bind(seal)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        });
        Ok(ClipPut::Stored)
    }

    /// Records why the stored round `round_id` has no clip, unless it has a clip or a
    /// reason already (the first word stands), with the table's `seal` of the reason when
    /// that reason is the one kept and no seal is.
    pub async fn put_clip_missing(
        &self,
        round_id: &str,
        missing: &MissingClipRow,
        seal: Option<&str>,
    ) -> Result<(), ArchiveError> {
        // One statement each, so a clip stored meanwhile is never joined by a reason, nor
        // its seal replaced.
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
            if let Some(seal) = seal {
                sqlx::query(
                    "INSERT INTO clip_seals (round_id, seal)
                     SELECT $1, $2 WHERE EXISTS
                        (SELECT 1 FROM clips_missing WHERE round_id = $1 AND reason = $3)
                     ON CONFLICT (round_id) DO NOTHING",
                )
                .bind(round_id)
                .bind(seal)
                .bind(&missing.reason)
                .execute(pool)
                .await?;
            }
        });
        Ok(())
    }

    /// The table's seal of what is stored of `round_id`'s clip, if it has one.
    pub async fn clip_seal(&self, round_id: &str) -> Result<Option<String>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            let row: Option<(String,)> =
                sqlx::query_as("SELECT seal FROM clip_seals WHERE round_id = $1")
                    .bind(round_id)
                    .fetch_optional(pool)
                    .await?;
            row.map(|(seal,)| seal)
        }))
    }

    /// What is stored of the clips of `round_ids`: the clip or the reason there is none,
    /// and the seal, for each round that has any.
    pub async fn clips_of_rounds(
        &self,
        round_ids: &[String],
    ) -> Result<HashMap<String, StoredClip>, ArchiveError> {
        let mut out: HashMap<String, StoredClip> = HashMap::new();
        if round_ids.is_empty() {
            return Ok(out);
        }
        let marks: Vec<String> = (1..=round_ids.len()).map(|n| format!("${n}")).collect();
        let marks = marks.join(", ");
        let clips_sql = format!(
            "SELECT round_id, path, size_bytes, sha256 FROM clips WHERE round_id IN ({marks})"
        );
        let missing_sql = format!(
            "SELECT round_id, reason, detail FROM clips_missing WHERE round_id IN ({marks})"
        );
        let seals_sql =
            format!("SELECT round_id, seal FROM clip_seals WHERE round_id IN ({marks})");
        on_pool!(self, |pool| {
            let mut q = sqlx::query_as::<_, (String, String, i64, String)>(&clips_sql);
            for id in round_ids {
                q = q.bind(id);
            }
            for (round_id, path, size_bytes, sha256) in q.fetch_all(pool).await? {
                out.entry(round_id).or_default().clip = Some(ClipRow {
                    path,
                    size_bytes,
                    sha256,
                });
            }
            let mut q = sqlx::query_as::<_, (String, String, String)>(&missing_sql);
            for id in round_ids {
                q = q.bind(id);
            }
            for (round_id, reason, detail) in q.fetch_all(pool).await? {
                out.entry(round_id).or_default().missing = Some(MissingClipRow { reason, detail });
            }
            let mut q = sqlx::query_as::<_, (String, String)>(&seals_sql);
            for id in round_ids {
                q = q.bind(id);
            }
            for (round_id, seal) in q.fetch_all(pool).await? {
                out.entry(round_id).or_default().seal = Some(seal);
            }
        });
        Ok(out)
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
