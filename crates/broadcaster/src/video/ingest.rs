//! VideoIngest.Publish: the camera's stream into the table's relay, each unit checked.

use std::sync::Arc;

use banco_auth::caller;
use banco_streaming::h264;
use banco_wire::pb;
use tonic::{Request, Response, Status, Streaming};

use crate::hosted::Tables;

/// Largest access unit taken (a 4K keyframe at a high bitrate stays well below).
const MAX_UNIT_BYTES: usize = 4 << 20;

/// The VideoIngest service over the hosted tables.
#[derive(Debug)]
pub(crate) struct VideoIngestServer {
    tables: Arc<Tables>,
}

impl VideoIngestServer {
    pub(crate) fn new(tables: Arc<Tables>) -> VideoIngestServer {
        VideoIngestServer { tables }
    }
}

#[tonic::async_trait]
impl pb::video_ingest_server::VideoIngest for VideoIngestServer {
    async fn publish(
        &self,
        request: Request<Streaming<pb::VideoAccessUnit>>,
    ) -> Result<Response<pb::PublishSummary>, Status> {
        let publisher = caller(&request)?.sub.clone();
        let mut units = request.into_inner();
        let mut summary = pb::PublishSummary::default();
        let Some(first) = units.message().await? else {
            return Ok(Response::new(summary));
        };
        let table = Arc::clone(self.tables.get(&first.table_id)?);
        let _guard = table.video().claim()?;
        let mut closed = std::pin::pin!(table.video().closed());
        tracing::info!(table = table.id(), %publisher, "video publisher connected");
        let mut next = Some(first);
        let outcome = loop {
            let Some(unit) = next.take() else {
                break Ok(());
            };
            let previous = (summary.units_received > 0).then_some(summary.last_sequence);
            check_unit(table.id(), &unit, previous)?;
            if let Some(previous) = previous {
                summary.sequence_gaps += unit.sequence - previous - 1;
            }
            summary.units_received += 1;
            summary.bytes_received += unit.data.len() as u64;
            summary.keyframes += u64::from(unit.keyframe);
            summary.last_sequence = unit.sequence;
            table.video_unit(&unit);
            let received = tokio::select! {
                biased;
                () = &mut closed => break Err(Status::unavailable(
                    "the broadcaster is shutting down; publish again when it is back",
                )),
                received = units.message() => received,
            };
            match received {
                Ok(unit) => next = unit,
                Err(status) => break Err(status),
            }
        };
        tracing::info!(
            table = table.id(),
            %publisher,
            units = summary.units_received,
            gaps = summary.sequence_gaps,
            ended = ?outcome.as_ref().err().map(|s| s.message().to_owned()),
            "video publisher gone"
        );
        outcome?;
        Ok(Response::new(summary))
    }
}

/// Checks one unit of the stream for `table_id` that last relayed `previous`.
pub(crate) fn check_unit(
    table_id: &str,
    unit: &pb::VideoAccessUnit,
    previous: Option<u64>,
) -> Result<(), Status> {
    let n = unit.sequence;
    let bad = |why: String| Err(Status::invalid_argument(format!("video unit {n}: {why}")));
    if unit.table_id != table_id {
        return bad(format!(
            "is for table `{}`, but this stream is table {table_id}'s",
            unit.table_id.chars().take(64).collect::<String>()
        ));
    }
    if unit.codec != "h264" {
        return bad(format!(
            "codec `{}`: only h264 is relayed",
            unit.codec.chars().take(32).collect::<String>()
        ));
    }
    if let Some(previous) = previous
        && n <= previous
    {
        return bad(format!("sequence does not follow {previous}"));
    }
    if unit.data.is_empty() {
        return bad("no data".to_owned());
    }
    if unit.data.len() > MAX_UNIT_BYTES {
        return bad(format!(
            "{} bytes: at most {MAX_UNIT_BYTES}",
            unit.data.len()
        ));
    }
    if !h264::is_annex_b(&unit.data) {
        return bad("data is not H.264 in Annex-B format (no start code)".to_owned());
    }
    if unit.keyframe {
        if !h264::is_idr(&unit.data) {
            return bad("marked keyframe but holds no IDR slice".to_owned());
        }
        let config = unit.codec_config.as_deref().unwrap_or_default();
        if h264::parameter_sets(config).is_none() {
            return bad("a keyframe must carry its SPS and PPS in codec_config".to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPS_PPS: &[u8] = &[0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce];

    fn keyframe() -> pb::VideoAccessUnit {
        pb::VideoAccessUnit {
            table_id: "T01".to_owned(),
            sequence: 5,
            keyframe: true,
            codec: "h264".to_owned(),
            data: [SPS_PPS, &[0, 0, 1, 0x65, 0x88]].concat(),
            codec_config: Some(SPS_PPS.to_vec()),
            ..Default::default()
        }
    }

    fn refusal(unit: &pb::VideoAccessUnit, previous: Option<u64>) -> String {
        let status = check_unit("T01", unit, previous).expect_err("refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        status.message().to_owned()
    }

    #[test]
    fn a_well_formed_keyframe_passes() {
        check_unit("T01", &keyframe(), Some(4)).expect("accepted");
        check_unit("T01", &keyframe(), None).expect("accepted");
    }

    #[test]
    fn each_fault_is_named() {
        let mut u = keyframe();
        u.table_id = "T02".to_owned();
        assert_eq!(
            refusal(&u, None),
            "video unit 5: is for table `T02`, but this stream is table T01's"
        );
        let mut u = keyframe();
        u.codec = "vp9".to_owned();
        assert!(refusal(&u, None).contains("codec `vp9`"));
        assert!(refusal(&keyframe(), Some(5)).contains("does not follow 5"));
        let mut u = keyframe();
        u.data = vec![0x65, 1, 2];
        assert!(refusal(&u, None).contains("Annex-B"));
        let mut u = keyframe();
        u.data = vec![0, 0, 1, 0x41, 1];
        assert!(refusal(&u, None).contains("no IDR"));
        let mut u = keyframe();
        u.codec_config = None;
        assert!(refusal(&u, None).contains("SPS and PPS"));
        let mut u = keyframe();
        u.data.clear();
        assert!(refusal(&u, None).contains("no data"));
    }
}
