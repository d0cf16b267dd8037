//! The table's outbox delivering to the archive service (ArchiveService.Append, or
//! AppendBatch for a backlog), the table's own hash chain and signature carried as they are.
//!
//! The outbox calls this in round order and retries a failure until it succeeds, so the
//! archive never misses a round: a refusal for a gap or a conflict is logged (it needs an
//! operator) and retried like an unreachable archive.

use std::sync::Arc;
use std::time::Duration;

use banco_auth::{BearerToken, ClientTls};
use banco_table::actor::{ArchiveSink, BoxFuture, SealedRound, SinkError};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use crate::metrics::VideoMetricFamilies;
use crate::video::clips::ClipStore;

/// How long the sink waits for a round's clip still being written before it appends the
/// round without one (the clip ends [`crate::CLIP_TAIL`] after the result; the round is
/// sealed when it is settled, usually later).
const CLIP_WAIT: Duration = Duration::from_secs(30);

/// Bytes per UploadClip message.
const UPLOAD_CHUNK: usize = 256 * 1024;

/// An [`ArchiveSink`] over gRPC.
#[derive(Debug, Clone)]
pub struct ArchiveClient {
    client: ArchiveServiceClient<InterceptedService<Channel, BearerToken>>,
    /// Round clips to upload before each round's record.
    clips: Option<Arc<ClipStore>>,
    /// Where accepted uploads are counted, by table.
    metrics: VideoMetricFamilies,
}

/// Why the archive cannot be used as given.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveClientError {
    #[error("archive url `{url}`: {why}")]
    Url { url: String, why: String },
    #[error("archive token: {0}")]
    Token(String),
}

impl ArchiveClient {
    /// A client of the archive at `url` (`https://` needs the CA in `tls`), calling with
    /// `token` (role service). Connects on first use and reconnects by itself.
    pub fn connect(
        url: &str,
        token: &str,
        tls: Option<ClientTls>,
        timeout: Duration,
    ) -> Result<ArchiveClient, ArchiveClientError> {
        let bad = |why: String| ArchiveClientError::Url {
            url: url.to_owned(),
            why,
        };
        let endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| bad(e.to_string()))?
            .connect_timeout(timeout)
            .timeout(timeout);
        let https = endpoint.uri().scheme_str() == Some("https");
        let endpoint = match (tls, https) {
            (Some(tls), true) => endpoint
                .tls_config(tls.config())
                .map_err(|e| bad(format!("TLS unusable: {e}")))?,
            (None, false) => endpoint,
            (None, true) => return Err(bad("https needs --archive-ca".to_owned())),
            (Some(_), false) => {
                return Err(bad(
                    "an archive CA is given, so use https:// (this URL is not)".to_owned(),
                ));
            }
        };
        let token =
            BearerToken::new(token).map_err(|e| ArchiveClientError::Token(e.to_string()))?;
        Ok(ArchiveClient {
            client: ArchiveServiceClient::with_interceptor(endpoint.connect_lazy(), token),
            clips: None,
            metrics: VideoMetricFamilies::default(),
        })
    }

    /// Uploads each round's clip from `store` (when it has one) before its record, and
    /// sets the record's `clip`.
    #[must_use]
    pub fn with_clips(mut self, store: Arc<ClipStore>) -> ArchiveClient {
        self.clips = Some(store);
        self
    }

    /// Counts the clips the archive accepts into `families` (`banco_video_clips_uploaded`).
    #[must_use]
    pub fn with_video_metrics(mut self, families: &VideoMetricFamilies) -> ArchiveClient {
        self.metrics = families.clone();
        self
    }

    /// Uploads the clip of `round_id` at `table_id`, if it has one; the ClipRef the
    /// archive keeps.
    async fn upload_clip(
        &self,
        table_id: &str,
        round_id: &str,
    ) -> Result<Option<pb::ClipRef>, SinkError> {
        let Some(store) = &self.clips else {
            return Ok(None);
        };
        let Some(clip) = store.clip(round_id, CLIP_WAIT).await else {
            return Ok(None);
        };
        let bytes = tokio::fs::read(&clip.path)
            .await
            .map_err(|e| SinkError(format!("clip {}: {e}", clip.path.display())))?;
        let mut messages = Vec::with_capacity(bytes.len() / UPLOAD_CHUNK + 1);
        for (i, chunk) in bytes.chunks(UPLOAD_CHUNK).enumerate() {
            let mut message = pb::ClipUpload {
                data: chunk.to_vec(),
                ..Default::default()
            };
            if i == 0 {
                message.round_id = round_id.to_owned();
                message.size_bytes = clip.size_bytes;
                message.sha256.clone_from(&clip.sha256);
            }
            messages.push(message);
        }
        let stored = self
            .client
            .clone()
            .upload_clip(futures::stream::iter(messages))
            .await
            .map_err(|s| {
                tracing::error!(round = round_id, code = ?s.code(), message = s.message(), "the archive refused the round's clip; retrying");
                SinkError(format!("clip of round {round_id}: {:?}: {}", s.code(), s.message()))
            })?
            .into_inner();
        self.metrics.for_table(table_id).clips_uploaded.inc();
        Ok(stored.clip)
    }
}

/// What the archive is sent of a sealed round: the table's record and its place in the
/// chain; the archive derives everything else from the record.
pub fn round_record(sealed: &SealedRound) -> Result<pb::RoundRecord, String> {
    let table_record = serde_json::to_vec(&sealed.round)
        .map_err(|e| format!("round {}: cannot encode: {e}", sealed.round.round_id))?;
    Ok(pb::RoundRecord {
        round_id: sealed.round.round_id.to_string(),
        table_id: sealed.round.table.clone(),
        chain_seq: sealed.seq,
        prev_hash: unhex(&sealed.prev_hash)?,
        hash: unhex(&sealed.hash)?,
        signature: unhex(&sealed.signature)?,
        key_id: sealed.key_id.clone(),
        table_record,
        ..pb::RoundRecord::default()
    })
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("`{text}` is not hex"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("`{text}` is not hex"))
        })
        .collect()
}

/// An AppendBatch is kept under this many bytes of records (the archive takes 32 MiB).
const BATCH_BYTES: usize = 8 << 20;

/// Why the archive refused a round, for the log and the outbox's retry.
fn refused(round_id: &str, refusal: &pb::Refusal, gap: Option<&pb::ChainGap>) -> SinkError {
    let gap = gap.map(|g| {
        format!(
            "; the archive's last round of the table is {}",
            g.last_round_id
        )
    });
    let why = format!(
        "round {round_id} refused: {}{}",
        refusal.message,
        gap.unwrap_or_default()
    );
    tracing::error!(round = %round_id, %why, "the archive refused a round; retrying");
    SinkError(why)
}

impl ArchiveSink for ArchiveClient {
    fn append_many<'a>(
        &'a self,
        rounds: &'a [SealedRound],
    ) -> BoxFuture<'a, Result<usize, SinkError>> {
        Box::pin(async move {
            let mut records = Vec::new();
            let mut bytes = 0;
            for round in rounds {
                let mut record = round_record(round).map_err(SinkError)?;
                bytes += record.table_record.len();
                if !records.is_empty() && bytes > BATCH_BYTES {
                    break;
                }
                record.clip = self.upload_clip(&record.table_id, &record.round_id).await?;
                records.push(record);
            }
            let acks = self
                .client
                .clone()
                .append_batch(pb::AppendBatchRequest { records })
                .await
                .map_err(|s| SinkError(format!("{:?}: {}", s.code(), s.message())))?
                .into_inner()
                .acks;
            let taken = acks.iter().take_while(|a| a.refusal.is_none()).count();
            match acks.get(taken) {
                Some(ack) if taken == 0 => Err(refused(
                    &ack.round_id,
                    ack.refusal.as_ref().unwrap_or(&pb::Refusal::default()),
                    ack.gap.as_ref(),
                )),
                _ => Ok(taken),
            }
        })
    }

    fn append<'a>(&'a self, round: &'a SealedRound) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let mut record = round_record(round).map_err(SinkError)?;
            record.clip = self.upload_clip(&record.table_id, &record.round_id).await?;
            let ack = self
                .client
                .clone()
                .append(pb::AppendRequest {
                    record: Some(record),
                })
                .await
                .map_err(|s| SinkError(format!("{:?}: {}", s.code(), s.message())))?
                .into_inner();
            match ack.refusal {
                None => Ok(()),
                Some(refusal) => Err(refused(
                    &round.round.round_id.to_string(),
                    &refusal,
                    ack.gap.as_ref(),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hex_fields_become_bytes_and_garbage_is_named() {
        assert_eq!(unhex("00ff10").unwrap(), vec![0, 255, 16]);
        assert_eq!(unhex("").unwrap(), Vec::<u8>::new());
        assert!(unhex("0").unwrap_err().contains("`0`"));
        assert!(unhex("zz").is_err());
    }
}
