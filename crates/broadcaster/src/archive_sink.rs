//! The table's outbox delivering to the archive service (ArchiveService.Append, or
//! AppendBatch for a backlog), the table's own hash chain and signature carried as they are.
//!
//! The outbox calls this in round order and retries a failure until it succeeds, so the
//! archive never misses a round: a refusal for a gap or a conflict is logged (it needs an
//! operator) and retried like an unreachable archive.
//!
//! Each round's clip is uploaded before its record. A clip the archive did not take
//! (unreachable, failing) fails the delivery, so the outbox retries the round, clip and
//! all; a clip that can never go (lost by the recorder, its file gone, refused for good)
//! lets the record go with `clip_missing` saying why, and is counted and logged once.

use std::sync::Arc;
use std::time::Duration;

use banco_auth::client::ClientError;
use banco_auth::{BearerToken, ClientTls};
use banco_records::hex::{from_hex, to_hex as hex};
use banco_table::actor::{
    ArchiveSink, BoxFuture, Checkpoint, ClipFacts, SealedRound, SinkError, TableSigner,
    clip_statement,
};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use sha2::{Digest as _, Sha256};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::metrics::VideoMetricFamilies;
use crate::video::clip_store::{ClipFile, ClipMissing, ClipStore, MissingReason, RoundClip};

/// How long the sink waits for a round's clip still being written (or for the recorder
/// to hear of the round) before it appends the round without one, as lost (the clip ends
/// [`crate::CLIP_TAIL`] after the result; the round is sealed when it is settled, usually
/// later).
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
    /// The table's key, sealing what each record says of its clip.
    signer: Option<Arc<TableSigner>>,
}

impl ArchiveClient {
    /// A client of the archive at `url` (`https://` needs the CA in `tls`), calling with
    /// `token` (role service). Connects on first use and reconnects by itself.
    pub fn connect(
        url: &str,
        token: &str,
        tls: Option<ClientTls>,
        timeout: Duration,
    ) -> Result<ArchiveClient, ClientError> {
        let endpoint = banco_auth::client::endpoint_trusting(url, tls.as_ref())?
            .connect_timeout(timeout)
            .timeout(timeout);
        let token = banco_auth::client::bearer(token)?;
        Ok(ArchiveClient {
            client: ArchiveServiceClient::with_interceptor(endpoint.connect_lazy(), token),
            clips: None,
            metrics: VideoMetricFamilies::default(),
            signer: None,
        })
    }

    /// Uploads each round's clip from `store` (when it has one) before its record, and
    /// sets the record's `clip`, or its `clip_missing` saying why there is none.
    #[must_use]
    pub fn with_clips(mut self, store: Arc<ClipStore>) -> ArchiveClient {
        self.clips = Some(store);
        self
    }

    /// Seals each record's clip (or why it has none) with the table's key, as the table
    /// signs its rounds: see `RoundRecord.clip_signature`.
    #[must_use]
    pub fn with_signer(mut self, signer: Arc<TableSigner>) -> ArchiveClient {
        self.signer = Some(signer);
        self
    }

    /// Puts `attached` in `round`'s record, sealed if this client has the table's key.
    fn attach(
        &self,
        round: &SealedRound,
        attached: &Attached,
        record: &mut pb::RoundRecord,
    ) -> Result<(), SinkError> {
        attached.attach(record);
        if let Some(signer) = &self.signer {
            let sha256;
            let facts = match attached {
                Attached::Clip(clip) => {
                    sha256 = hex(&clip.sha256);
                    ClipFacts::Clip {
                        sha256: &sha256,
                        size_bytes: clip.size_bytes,
                    }
                }
                Attached::Missing(missing) => ClipFacts::Missing {
                    reason: missing.reason.label(),
                },
                Attached::Nothing => return Ok(()),
            };
            let statement = clip_statement(&record.round_id, &round.hash, facts);
            record.clip_signature = unhex(&signer.seal_clip(&statement)).map_err(SinkError)?;
        }
        Ok(())
    }

    /// Counts the clips the archive accepts into `families` (`banco_video_clips_uploaded`).
    #[must_use]
    pub fn with_video_metrics(mut self, families: &VideoMetricFamilies) -> ArchiveClient {
        self.metrics = families.clone();
        self
    }

    /// What goes with `round`'s record: its clip, uploaded to the archive, or why it has
    /// none. Waits while the clip is being recorded (or while the recorder has not heard
    /// of the round yet). An upload the archive may take later is an error, so that the
    /// outbox retries the round; a clip it will never take is lost, and said so.
    async fn clip_for(&self, round: &SealedRound) -> Result<Attached, SinkError> {
        let Some(store) = &self.clips else {
            return Ok(Attached::Nothing);
        };
        let (table_id, round_id) = (&round.round.table, round.round.round_id.as_str());
        if round.round.betting_closed_at.is_none() {
            return Ok(Attached::Missing(ClipMissing::new(
                MissingReason::NoVideo,
                "betting never closed on the round: nothing was dealt",
            )));
        }
        match store.clip(table_id, round_id, CLIP_WAIT).await {
            RoundClip::Written(file) => self.upload_clip(table_id, round_id, &file).await,
            RoundClip::Missing(missing) => Ok(Attached::Missing(missing)),
        }
    }

    async fn upload_clip(
        &self,
        table_id: &str,
        round_id: &str,
        clip: &ClipFile,
    ) -> Result<Attached, SinkError> {
        let gone = |detail: String| {
            Ok(Attached::Missing(ClipMissing::new(
                MissingReason::FileGone,
                detail,
            )))
        };
        let bytes = match tokio::fs::read(&clip.path).await {
            Ok(bytes) => bytes,
            Err(e) => return gone(format!("{}: {e}", clip.path.display())),
        };
        if bytes.len() as u64 != clip.size_bytes || Sha256::digest(&bytes)[..] != clip.sha256[..] {
            return gone(format!(
                "{} has changed since it was written ({} bytes; it had {})",
                clip.path.display(),
                bytes.len(),
                clip.size_bytes
            ));
        }
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
        let answer = self
            .client
            .clone()
            .upload_clip(futures::stream::iter(messages))
            .await;
        match answer {
            Ok(stored) => {
                self.metrics.for_table(table_id).clips_uploaded.inc();
                match stored.into_inner().clip {
                    Some(clip) => Ok(Attached::Clip(clip)),
                    None => Err(SinkError(format!(
                        "clip of round {round_id}: the archive took it without saying where it is"
                    ))),
                }
            }
            Err(s) if refused_for_good(s.code()) => {
                tracing::warn!(round = round_id, code = ?s.code(), message = s.message(), "the archive refused the round's clip for good: the round goes without it");
                Ok(Attached::Missing(ClipMissing::new(
                    MissingReason::Refused,
                    format!(
                        "the archive refused the clip: {:?}: {}",
                        s.code(),
                        s.message()
                    ),
                )))
            }
            Err(s) => {
                tracing::error!(round = round_id, code = ?s.code(), message = s.message(), "the archive did not take the round's clip; retrying");
                Err(SinkError(format!(
                    "clip of round {round_id}: {:?}: {}",
                    s.code(),
                    s.message()
                )))
            }
        }
    }

    /// The archive has `round` with `attached`: the store forgets it, and a clip lost is
    /// counted and logged, once (not again when the archive already had the round).
    fn delivered(&self, round: &SealedRound, attached: &Attached, duplicate: bool) {
        let (table_id, round_id) = (&round.round.table, round.round.round_id.as_str());
        if let Some(store) = &self.clips {
            store.delivered(table_id, round_id);
        }
        if let Attached::Missing(missing) = attached
            && missing.reason.lost()
            && !duplicate
        {
            self.metrics.clip_lost(table_id, missing.reason);
            tracing::warn!(
                round = round_id,
                reason = missing.reason.label(),
                detail = %missing.detail,
                "round archived without its clip: the clip is lost"
            );
        }
    }
}

/// What goes with a round's record.
#[derive(Debug)]
enum Attached {
    /// The clip, as the archive keeps it.
    Clip(pb::ClipRef),
    /// Why there is none.
    Missing(ClipMissing),
    /// This broadcaster records no clips.
    Nothing,
}

impl Attached {
    fn attach(&self, record: &mut pb::RoundRecord) {
        match self {
            Attached::Clip(clip) => record.clip = Some(clip.clone()),
            Attached::Missing(missing) => {
                record.clip_missing = Some(crate::wire::clip_missing_to_pb(missing));
            }
            Attached::Nothing => {}
        }
    }
}

/// Refusals of an upload that the same upload would meet again: the archive keeps no
/// clips, holds another one for the round, or finds the bytes wrong. Anything else (the
/// archive unreachable, failing, or overloaded) may pass later.
fn refused_for_good(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::InvalidArgument
            | tonic::Code::FailedPrecondition
            | tonic::Code::AlreadyExists
            | tonic::Code::OutOfRange
            | tonic::Code::Unimplemented
    )
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
    from_hex(text).ok_or_else(|| format!("`{text}` is not hex"))
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
    fn checkpoint<'a>(
        &'a self,
        checkpoint: &'a Checkpoint,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        Box::pin(async move {
            let request = pb::TableCheckpoint {
                table_id: checkpoint.table.clone(),
                chain_seq: checkpoint.chain_seq,
                head_hash: unhex(&checkpoint.head_hash).map_err(SinkError)?,
                at_unix_ms: checkpoint.at,
                signature: unhex(&checkpoint.signature).map_err(SinkError)?,
                key_id: checkpoint.key_id.clone(),
            };
            self.client
                .clone()
                .put_checkpoint(request)
                .await
                .map(|_| ())
                .map_err(|s| SinkError(format!("checkpoint: {:?}: {}", s.code(), s.message())))
        })
    }

    fn append_many<'a>(
        &'a self,
        rounds: &'a [SealedRound],
    ) -> BoxFuture<'a, Result<usize, SinkError>> {
        Box::pin(async move {
            let mut records = Vec::new();
            let mut attached = Vec::new();
            let mut bytes = 0;
            for round in rounds {
                let mut record = round_record(round).map_err(SinkError)?;
                bytes += record.table_record.len();
                if !records.is_empty() && bytes > BATCH_BYTES {
                    break;
                }
                // A clip not ready to go ends the batch before its round: the rounds
                // collected so far (their clips already uploaded) go now, and the retry
                // starts at this one rather than sending their clips again.
                let clip = match self.clip_for(round).await {
                    Ok(clip) => clip,
                    Err(error) if records.is_empty() => return Err(error),
                    Err(_) => break,
                };
                self.attach(round, &clip, &mut record)?;
                records.push(record);
                attached.push(clip);
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
            for ((round, clip), ack) in rounds.iter().zip(&attached).zip(&acks).take(taken) {
                self.delivered(round, clip, ack.duplicate);
            }
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
            let clip = self.clip_for(round).await?;
            self.attach(round, &clip, &mut record)?;
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
                None => {
                    self.delivered(round, &clip, ack.duplicate);
                    Ok(())
                }
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

    #[tokio::test]
    async fn a_clip_file_gone_or_changed_is_lost_not_retried_for_ever() {
        let dir = tempfile::tempdir().unwrap();
        // Nothing is sent: the file is read and checked first.
        let client =
            ArchiveClient::connect("http://127.0.0.1:9", "t", None, Duration::from_secs(1))
                .unwrap();
        let path = dir.path().join("T01-S0001-H001.mp4");
        let clip = ClipFile {
            path: path.clone(),
            size_bytes: 3,
            sha256: Sha256::digest(b"abc").to_vec(),
        };
        let lost = |attached: Attached| match attached {
            Attached::Missing(missing) => missing,
            other => panic!("{other:?}"),
        };
        let gone = lost(
            client
                .upload_clip("T01", "T01-S0001-H001", &clip)
                .await
                .unwrap(),
        );
        assert_eq!(gone.reason, MissingReason::FileGone);
        assert!(
            gone.detail.contains("T01-S0001-H001.mp4"),
            "{}",
            gone.detail
        );
        std::fs::write(&path, b"abd").unwrap();
        let changed = lost(
            client
                .upload_clip("T01", "T01-S0001-H001", &clip)
                .await
                .unwrap(),
        );
        assert_eq!(changed.reason, MissingReason::FileGone);
        assert!(changed.detail.contains("has changed"), "{}", changed.detail);
    }

    #[test]
    fn a_long_detail_is_cut_to_what_the_archive_takes_on_a_character() {
        let detail = format!(
            "{}€€",
            "x".repeat(banco_wire::MAX_CLIP_MISSING_DETAIL_BYTES - 4)
        );
        let sent =
            crate::wire::clip_missing_to_pb(&ClipMissing::new(MissingReason::Missed, detail));
        assert_eq!(sent.reason(), pb::ClipMissingReason::Missed);
        assert_eq!(
            sent.detail.len(),
            banco_wire::MAX_CLIP_MISSING_DETAIL_BYTES - 1
        );
        assert!(sent.detail.ends_with('€'));
    }

    #[test]
    fn hex_fields_become_bytes_and_garbage_is_named() {
        assert_eq!(unhex("00ff10").unwrap(), vec![0, 255, 16]);
        assert_eq!(unhex("").unwrap(), Vec::<u8>::new());
        assert!(unhex("0").unwrap_err().contains("`0`"));
        assert!(unhex("zz").is_err());
    }
}
