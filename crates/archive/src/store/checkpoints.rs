//! The newest signed checkpoint of each table's chain head: one row per table, replaced
//! only by a later one.

use super::{Store, on_pool};
use crate::error::ArchiveError;

/// A table's checkpoint as stored (hashes and signature in lowercase hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRow {
    pub table_id: String,
    pub chain_seq: i64,
    pub head_hash: String,
    pub at_ms: i64,
    pub signature: String,
    pub key_id: String,
}

impl Store {
    /// Keeps `checkpoint` unless one at least as new is kept for its table: whether it was.
    pub async fn put_checkpoint(&self, checkpoint: &CheckpointRow) -> Result<bool, ArchiveError> {
        // One statement: two tables' outboxes never race on the same row, but a table
        // restarted may send while its old outbox's last call is still in flight.
        let changed = on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO checkpoints (table_id, chain_seq, head_hash, at_ms, signature, key_id)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (table_id) DO UPDATE SET chain_seq = excluded.chain_seq,
                    head_hash = excluded.head_hash, at_ms = excluded.at_ms,
                    signature = excluded.signature, key_id = excluded.key_id
                 WHERE excluded.at_ms > checkpoints.at_ms",
            )
            .bind(&checkpoint.table_id)
            .bind(checkpoint.chain_seq)
            .bind(&checkpoint.head_hash)
            .bind(checkpoint.at_ms)
            .bind(&checkpoint.signature)
            .bind(&checkpoint.key_id)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(changed > 0)
    }

    /// The newest checkpoint kept of `table_id`.
    pub async fn checkpoint(&self, table_id: &str) -> Result<Option<CheckpointRow>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            let row: Option<(i64, String, i64, String, String)> = sqlx::query_as(
                "SELECT chain_seq, head_hash, at_ms, signature, key_id
                 FROM checkpoints WHERE table_id = $1",
            )
            .bind(table_id)
            .fetch_optional(pool)
            .await?;
            row.map(
                |(chain_seq, head_hash, at_ms, signature, key_id)| CheckpointRow {
                    table_id: table_id.to_owned(),
                    chain_seq,
                    head_hash,
                    at_ms,
                    signature,
                    key_id,
                },
            )
        }))
    }

    /// The stored hash of round `chain_seq` of `table_id`, if that round is stored.
    pub async fn hash_at(
        &self,
        table_id: &str,
        chain_seq: i64,
    ) -> Result<Option<String>, ArchiveError> {
        Ok(on_pool!(self, |pool| {
            sqlx::query_scalar("SELECT hash FROM rounds WHERE table_id = $1 AND chain_seq = $2")
                .bind(table_id)
                .bind(chain_seq)
                .fetch_optional(pool)
                .await?
        }))
    }
}
