//! The tonic service: each handler checks the caller's role, converts, calls the module
//! that does the work, converts back.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use banco_auth::{Role, caller};
use banco_wire::pb;
use banco_wire::pb::archive_service_server::ArchiveService;
use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::clips::{ClipFolder, clip_of};
use crate::error::ArchiveError;
use crate::export::{self, Format};
use crate::hexbytes::hex_to_bytes_lossy;
use crate::ingest::{self, TrustedKeys};
use crate::metrics::ArchiveMetrics;
use crate::store::{Appended, ClipOf, ClipPut, Store};
use crate::{query, stats, verify};

/// Every role the interceptor lets through; each handler then admits its own.
pub const ALLOWED_ROLES: [Role; 3] = [Role::Service, Role::Auditor, Role::Player];

/// The ArchiveService implementation.
#[derive(Clone, Debug)]
pub struct ArchiveServer {
    store: Store,
    keys: Arc<TrustedKeys>,
    clips: Option<ClipFolder>,
    metrics: Option<ArchiveMetrics>,
}

impl ArchiveServer {
    pub fn new(store: Store, keys: TrustedKeys) -> ArchiveServer {
        ArchiveServer {
            store,
            keys: Arc::new(keys),
            clips: None,
            metrics: None,
        }
    }

    /// Keeps round clips in `folder` (UploadClip, GetClip, Append with a clip).
    pub fn with_clips(mut self, folder: ClipFolder) -> ArchiveServer {
        self.clips = Some(folder);
        self
    }

    /// Counts every request into `metrics`.
    pub fn with_metrics(mut self, metrics: ArchiveMetrics) -> ArchiveServer {
        self.metrics = Some(metrics);
        self
    }

    fn count<T>(&self, rpc: &'static str, result: &Result<T, Status>, started: Instant) {
        if let Some(metrics) = &self.metrics {
            metrics.request(rpc, result, started.elapsed());
        }
    }

    fn clips(&self) -> Result<&ClipFolder, ArchiveError> {
        self.clips.as_ref().ok_or(ArchiveError::NoClipFolder)
    }

    /// What a record says of its clip reads, and the clip it names is the one uploaded:
    /// checked before anything is stored.
    async fn check_clip(&self, record: &pb::RoundRecord) -> Result<(), ArchiveError> {
        if let ClipOf::Clip(clip) = clip_of(record)? {
            self.clips()?.check(&record.round_id, &clip).await?;
        }
        Ok(())
    }

    /// A round stored now has its clip (or why not) stored with it. One sent again (a
    /// duplicate) may say more than when it was stored (its clip found after all): that
    /// is kept, but never a clip other than the one recorded.
    async fn keep_clip(
        &self,
        record: &pb::RoundRecord,
        appended: &Appended,
    ) -> Result<(), ArchiveError> {
        if !matches!(appended, Appended::Duplicate { .. }) {
            return Ok(());
        }
        let round_id = &record.round_id;
        // Checked with the record before it was stored, or now: a duplicate's seal too.
        let clip = clip_of(record)?;
        let sealed = crate::ingest::sealed_from_pb(record)?;
        let seal = self.keys.check_clip_seal(&sealed, record, &clip)?;
        match clip {
            ClipOf::Unsaid => {}
            ClipOf::Missing(missing) => {
                self.store
                    .put_clip_missing(round_id, &missing, seal.as_deref())
                    .await?;
            }
            ClipOf::Clip(clip) => {
                if let ClipPut::Different(kept) = self
                    .store
                    .put_clip(round_id, &clip, seal.as_deref())
                    .await?
                {
                    return Err(ArchiveError::ClipExists(format!(
                        "round {round_id} is recorded with another clip ({} bytes, sha256 {}); it is kept",
                        kept.size_bytes, kept.sha256
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Refuses a caller whose role is not `role`.
fn require<T>(request: &Request<T>, role: Role) -> Result<(), Status> {
    banco_serving::require_role(request, &[role])
}

fn refusal(code: pb::RefusalCode, message: String) -> pb::Refusal {
    pb::Refusal {
        code: code.into(),
        message,
        field: "record.prev_hash".to_owned(),
    }
}

/// The ack of one record's append.
fn ack_of(record: &pb::RoundRecord, appended: Appended) -> pb::AppendAck {
    let round_id = record.round_id.clone();
    match appended {
        Appended::Stored { hash } => pb::AppendAck {
            round_id,
            hash: hex_to_bytes_lossy(&hash),
            ..Default::default()
        },
        Appended::Duplicate { hash } => pb::AppendAck {
            round_id,
            hash: hex_to_bytes_lossy(&hash),
            duplicate: true,
            ..Default::default()
        },
        Appended::Conflict { stored_hash } => pb::AppendAck {
            refusal: Some(pb::Refusal {
                code: pb::RefusalCode::Conflict.into(),
                message: format!(
                    "round {round_id} is already stored with hash {stored_hash}; this record differs"
                ),
                field: "record.hash".to_owned(),
            }),
            round_id,
            ..Default::default()
        },
        Appended::Gap {
            last,
            expected_prev_hash,
            expected_seq,
        } => {
            let given = banco_records::hex::to_hex(&record.prev_hash);
            let message = match &last {
                Some(l) => format!(
                    "chain gap at table {}: round {round_id} (chain_seq {}) has prev_hash {given}, but the last stored round is {} (chain_seq {}) with hash {expected_prev_hash}: expected chain_seq {expected_seq}",
                    record.table_id, record.chain_seq, l.round_id, l.chain_seq
                ),
                None => format!(
                    "chain gap at table {}: round {round_id} (chain_seq {}) has prev_hash {given}, but the table has no stored round: expected chain_seq 1 from the genesis hash {expected_prev_hash}",
                    record.table_id, record.chain_seq
                ),
            };
            pb::AppendAck {
                refusal: Some(refusal(pb::RefusalCode::ChainGap, message)),
                gap: Some(pb::ChainGap {
                    last_round_id: last.map(|l| l.round_id).unwrap_or_default(),
                    expected_prev_hash: hex_to_bytes_lossy(&expected_prev_hash),
                    given_prev_hash: record.prev_hash.clone(),
                }),
                round_id,
                ..Default::default()
            }
        }
    }
}

type ChunkStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl ArchiveService for ArchiveServer {
    async fn append(
        &self,
        request: Request<pb::AppendRequest>,
    ) -> Result<Response<pb::AppendAck>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::AppendAck>, Status> = async {
            require(&request, Role::Service)?;
            let record = request
                .into_inner()
                .record
                .ok_or_else(|| Status::invalid_argument("`record` is missing"))?;
            self.check_clip(&record).await?;
            // Concurrent appends are serialised (and group-committed) by the store.
            let appended = ingest::append(&self.store, &self.keys, &record).await;
            if let Some(metrics) = &self.metrics {
                metrics.batch(1);
                match &appended {
                    Ok(appended) => metrics.appended(appended),
                    Err(e) => metrics.refused(1, e),
                }
            }
            let appended = appended?;
            self.keep_clip(&record, &appended).await?;
            Ok(Response::new(ack_of(&record, appended)))
        }
        .await;
        self.count("append", &result, started);
        result
    }

    async fn append_batch(
        &self,
        request: Request<pb::AppendBatchRequest>,
    ) -> Result<Response<pb::AppendBatchResponse>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::AppendBatchResponse>, Status> = async {
            require(&request, Role::Service)?;
            let records = request.into_inner().records;
            if records.is_empty() {
                return Err(Status::invalid_argument("`records` is empty"));
            }
            for (index, record) in records.iter().enumerate() {
                self.check_clip(record)
                    .await
                    .map_err(|source| ArchiveError::InBatch {
                        index,
                        round_id: record.round_id.clone(),
                        source: Box::new(source),
                    })?;
            }
            // What the acks, and a duplicate's clip, need of each record (not its bytes).
            let heads: Vec<pb::RoundRecord> = records
                .iter()
                .map(|r| pb::RoundRecord {
                    round_id: r.round_id.clone(),
                    table_id: r.table_id.clone(),
                    chain_seq: r.chain_seq,
                    prev_hash: r.prev_hash.clone(),
                    clip: r.clip.clone(),
                    clip_missing: r.clip_missing.clone(),
                    ..Default::default()
                })
                .collect();
            let count = records.len();
            let appended = ingest::append_batch(&self.store, &self.keys, records).await;
            if let Some(metrics) = &self.metrics {
                metrics.batch(count);
                match &appended {
                    Ok(appended) => appended.iter().for_each(|a| metrics.appended(a)),
                    Err(e) => metrics.refused(count, e),
                }
            }
            let appended = appended?;
            for (head, appended) in heads.iter().zip(&appended) {
                self.keep_clip(head, appended).await?;
            }
            let acks = heads
                .iter()
                .zip(appended)
                .map(|(record, appended)| ack_of(record, appended))
                .collect();
            Ok(Response::new(pb::AppendBatchResponse { acks }))
        }
        .await;
        self.count("append_batch", &result, started);
        result
    }

    async fn list_rounds(
        &self,
        request: Request<pb::ListRoundsRequest>,
    ) -> Result<Response<pb::ListRoundsResponse>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::ListRoundsResponse>, Status> = async {
            require(&request, Role::Auditor)?;
            Ok(Response::new(
                query::list_rounds(&self.store, request.get_ref()).await?,
            ))
        }
        .await;
        self.count("list_rounds", &result, started);
        result
    }

    async fn get_round(
        &self,
        request: Request<pb::GetRoundRequest>,
    ) -> Result<Response<pb::RoundRecord>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::RoundRecord>, Status> = async {
            require(&request, Role::Auditor)?;
            Ok(Response::new(
                query::get_round(&self.store, &request.get_ref().round_id).await?,
            ))
        }
        .await;
        self.count("get_round", &result, started);
        result
    }

    async fn shoe_report(
        &self,
        request: Request<pb::ShoeReportRequest>,
    ) -> Result<Response<pb::ShoeReportResponse>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::ShoeReportResponse>, Status> = async {
            require(&request, Role::Auditor)?;
            Ok(Response::new(
                query::shoe_report(&self.store, &request.get_ref().shoe_id).await?,
            ))
        }
        .await;
        self.count("shoe_report", &result, started);
        result
    }

    async fn stats(
        &self,
        request: Request<pb::StatsRequest>,
    ) -> Result<Response<pb::StatsResponse>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::StatsResponse>, Status> = async {
            require(&request, Role::Auditor)?;
            Ok(Response::new(
                stats::stats(&self.store, request.get_ref()).await?,
            ))
        }
        .await;
        self.count("stats", &result, started);
        result
    }

    async fn player_bets(
        &self,
        request: Request<pb::PlayerBetsRequest>,
    ) -> Result<Response<pb::PlayerBetsResponse>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::PlayerBetsResponse>, Status> = async {
            let who = caller(&request)?;
            match who.role {
                Role::Auditor => {}
                Role::Player if who.sub == request.get_ref().player_id => {}
                Role::Player => {
                    return Err(ArchiveError::PermissionDenied(format!(
                        "player `{}` may see only their own bets, not those of `{}`",
                        who.sub,
                        request.get_ref().player_id
                    ))
                    .into());
                }
                other => {
                    return Err(Status::permission_denied(format!(
                        "PlayerBets needs role auditor or player; the token of `{}` has role {other}",
                        who.sub
                    )));
                }
            }
            Ok(Response::new(
                query::player_bets(&self.store, request.get_ref()).await?,
            ))
        }
        .await;
        self.count("player_bets", &result, started);
        result
    }

    type ExportStream = ChunkStream<pb::ExportChunk>;

    async fn export(
        &self,
        request: Request<pb::ExportRequest>,
    ) -> Result<Response<Self::ExportStream>, Status> {
        let started = Instant::now();
        let result: Result<Response<Self::ExportStream>, Status> = async {
            require(&request, Role::Auditor)?;
            let request = request.into_inner();
            let format = match pb::ExportFormat::try_from(request.format) {
                Ok(pb::ExportFormat::Jsonl | pb::ExportFormat::Unspecified) => Format::Jsonl,
                Ok(pb::ExportFormat::Csv) => Format::Csv,
                Err(_) => {
                    return Err(ArchiveError::bad_request(
                        "format",
                        format!("{} is not a known format", request.format),
                    )
                    .into());
                }
            };
            let filter = export::filter(&request)?;
            let (tx, rx) = mpsc::channel(4);
            tokio::spawn(export::run(self.store.clone(), filter, format, tx));
            let stream = ReceiverStream::new(rx).map(|item| item.map_err(Status::from));
            Ok(Response::new(Box::pin(stream) as Self::ExportStream))
        }
        .await;
        self.count("export", &result, started);
        result
    }

    async fn put_checkpoint(
        &self,
        request: Request<pb::TableCheckpoint>,
    ) -> Result<Response<pb::CheckpointAck>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::CheckpointAck>, Status> = async {
            require(&request, Role::Service)?;
            let kept = crate::checkpoints::put(&self.store, &self.keys, request.get_ref()).await?;
            Ok(Response::new(pb::CheckpointAck { kept }))
        }
        .await;
        self.count("put_checkpoint", &result, started);
        result
    }

    async fn verify(
        &self,
        request: Request<pb::VerifyRequest>,
    ) -> Result<Response<pb::VerifyResponse>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::VerifyResponse>, Status> = async {
            require(&request, Role::Auditor)?;
            let request = request.get_ref();
            let heads = request
                .heads
                .iter()
                .enumerate()
                .map(|(i, head)| crate::checkpoints::from_pb(head, &format!("heads[{i}]"), false))
                .collect::<Result<Vec<_>, _>>()?;
            let answer =
                verify::verify_with_heads(&self.store, &self.keys, &request.table_id, &heads)
                    .await?;
            Ok(Response::new(if request.accept_unsigned {
                answer
            } else {
                verify::require_signatures(answer)
            }))
        }
        .await;
        self.count("verify", &result, started);
        result
    }

    type GetClipStream = ChunkStream<pb::ClipChunk>;

    async fn get_clip(
        &self,
        request: Request<pb::GetClipRequest>,
    ) -> Result<Response<Self::GetClipStream>, Status> {
        let started = Instant::now();
        let result: Result<Response<Self::GetClipStream>, Status> = async {
            require(&request, Role::Auditor)?;
            let round_id = request.into_inner().round_id;
            if round_id.is_empty() {
                return Err(ArchiveError::bad_request("round_id", "empty").into());
            }
            let Some(clip) = self.store.clip(&round_id).await? else {
                let why = if self.store.get_round(&round_id).await?.is_some() {
                    format!("round `{round_id}` has no clip")
                } else {
                    format!("no round `{round_id}` in the archive")
                };
                return Err(ArchiveError::NotFound(why).into());
            };
            let (mut file, total_size) = self.clips()?.open_checked(&round_id, &clip).await?;
            let (sender, receiver) = mpsc::channel(4);
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt as _;
                let mut offset = 0u64;
                loop {
                    let mut data = vec![0u8; crate::clips::CHUNK_BYTES];
                    let n = match file.read(&mut data).await {
                        Ok(0) => return,
                        Ok(n) => n,
                        Err(e) => {
                            let _ = sender
                                .send(Err(Status::internal(format!("reading the clip: {e}"))))
                                .await;
                            return;
                        }
                    };
                    data.truncate(n);
                    let chunk = pb::ClipChunk {
                        data,
                        offset,
                        total_size,
                    };
                    offset += n as u64;
                    if sender.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
            });
            Ok(Response::new(
                Box::pin(ReceiverStream::new(receiver)) as Self::GetClipStream
            ))
        }
        .await;
        self.count("get_clip", &result, started);
        result
    }

    async fn upload_clip(
        &self,
        request: Request<tonic::Streaming<pb::ClipUpload>>,
    ) -> Result<Response<pb::ClipStored>, Status> {
        let started = Instant::now();
        let result: Result<Response<pb::ClipStored>, Status> = async {
            require(&request, Role::Service)?;
            let received = self.clips()?.receive(request.into_inner()).await?;
            Ok(Response::new(pb::ClipStored {
                clip: Some(pb::ClipRef::from(&received.clip)),
                duplicate: received.duplicate,
            }))
        }
        .await;
        self.count("upload_clip", &result, started);
        result
    }
}
