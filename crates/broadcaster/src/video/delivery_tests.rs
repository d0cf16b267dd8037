//! A round's clip on its way to a real archive (served here on 127.0.0.1:0): an upload the
//! archive did not take is sent again with the round, never dropped; a clip that cannot
//! go is recorded as lost in the round's record, counted and logged once.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Issuer, Role};
use banco_table::RoundId;
use banco_table::actor::{ActorConfig, ArchiveSink, Clock, LocalRules, TableHandle, spawn};
use banco_table::metrics::TableMetricFamilies;
use banco_table::{Pacing, TableConfig};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use prometheus_client::registry::Registry;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::VideoRelay;
use super::clip_store::{ClipStore, hash_file};
use super::clips::TableClips;
use super::test_table::{camera_units, close_betting, deal_and_confirm, open_betting, open_shoe};
use crate::archive_sink::ArchiveClient;
use crate::metrics::VideoMetricFamilies;

type Auditor = ArchiveServiceClient<InterceptedService<Channel, BearerToken>>;

/// A broadcaster's table T01 with its clip recorder, delivering to a real archive.
struct Rig {
    table: TableHandle,
    relay: Arc<VideoRelay>,
    recorder: Arc<TableClips>,
    auditor: Auditor,
    /// The archive's clip folder.
    archive_clips: std::path::PathBuf,
    /// The broadcaster's.
    clips: Arc<ClipStore>,
    registry: Registry,
    _actor: banco_table::actor::ActorTask,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// `archive_keeps_clips`: the archive was given a clip folder.
    async fn start(archive_keeps_clips: bool) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let issuer = Issuer::new(signing_key_from_seed(&[5; 32]), "banco").unwrap();
        let token = |sub: &str, role: Role| {
            issuer
                .issue(sub, role, Duration::from_secs(600), SystemTime::now())
                .unwrap()
        };
        let archive_clips = dir.path().join("archive-clips");
        let db = format!("sqlite://{}", dir.path().join("archive.db").display());
        let options = banco_archive::ServeOptions {
            verifier: Arc::new(issuer.verifier()),
            store: banco_archive::Store::open(&db).await.unwrap(),
            table_keys: banco_archive::TrustedKeys::default(),
            tls: None,
            clips: archive_keeps_clips.then(|| archive_clips.clone()),
            metrics: None,
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(banco_archive::serve(
            listener,
            options,
            std::future::pending(),
        ));

        let mut registry = Registry::default();
        let table_metrics = TableMetricFamilies::register(&mut registry);
        let video_metrics = VideoMetricFamilies::register(&mut registry);
        let clips = ClipStore::open(&dir.path().join("clips")).unwrap();
        let sink = ArchiveClient::connect(
            &url,
            &token("broadcaster", Role::Service),
            None,
            Duration::from_secs(5),
        )
        .unwrap()
        .with_clips(Arc::clone(&clips))
        .with_video_metrics(&video_metrics);
        let mut config = ActorConfig::in_dir(TableConfig::new("T01", Pacing::Live), dir.path());
        config.metrics = table_metrics.for_table("T01");
        let (table, actor) = spawn(
            config,
            Arc::new(LocalRules),
            Arc::new(sink) as Arc<dyn ArchiveSink>,
            Clock::system(),
        )
        .await
        .unwrap();
        let relay = Arc::new(VideoRelay::new("T01", video_metrics.for_table("T01")));
        let recorder = TableClips::new("T01", Arc::clone(&clips), video_metrics.for_table("T01"));
        tokio::spawn(Arc::clone(&recorder).run(table.clone(), Arc::clone(&relay)));
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect_lazy();
        let auditor = ArchiveServiceClient::with_interceptor(
            channel,
            BearerToken::new(&token("ada", Role::Auditor)).unwrap(),
        );
        open_shoe(&table).await;
        Rig {
            table,
            relay,
            recorder,
            auditor,
            archive_clips,
            clips,
            registry,
            _actor: actor,
            _dir: dir,
        }
    }

    /// A unit from the camera: relayed, and into the clip being recorded (as the
    /// broadcaster's hosted table hands it on).
    fn unit(&self, unit: &pb::VideoAccessUnit) {
        self.relay.relay(unit);
        self.recorder.unit(unit);
    }

    /// A round with `before` from the camera before betting closes and `during` after.
    async fn round(
        &self,
        before: &[pb::VideoAccessUnit],
        during: &[pb::VideoAccessUnit],
    ) -> RoundId {
        let round = open_betting(&self.table).await;
        before.iter().for_each(|u| self.unit(u));
        close_betting(&self.table).await;
        // The recorder hears of the close on its own channel: these go into the clip from
        // when it is recording (it starts with the GOP cache, so it decodes either way).
        during.iter().for_each(|u| self.unit(u));
        let cards = match round.as_str() {
            "T01-S0001-H001" => ["9S", "2H", "KD", "3C"],
            "T01-S0001-H002" => ["8S", "2D", "QD", "4C"],
            _ => ["9D", "3H", "KS", "5C"],
        };
        deal_and_confirm(&self.table, &round, cards).await;
        round
    }

    /// The metric samples on lines starting with `line_start`, summed.
    fn sample(&self, line_start: &str) -> f64 {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).unwrap();
        text.lines()
            .filter(|l| l.starts_with(line_start))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// The round's record, once the archive has it.
    async fn archived(&self, round: &RoundId) -> pb::RoundRecord {
        loop {
            let got = self
                .auditor
                .clone()
                .get_round(pb::GetRoundRequest {
                    round_id: round.to_string(),
                })
                .await;
            match got {
                Ok(record) => return record.into_inner(),
                Err(s) if s.code() == tonic::Code::NotFound => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(s) => panic!("GetRound: {s:?}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clip_the_archive_did_not_take_is_sent_again_with_its_round() {
    let Some(units) = camera_units(40) else {
        return;
    };
    let rig = Rig::start(true).await;
    let _camera = rig.relay.claim().unwrap();
    // The archive cannot write the clip it receives (as with a full or broken disk): it
    // answers INTERNAL, and takes it once that is over.
    let part = rig
        .archive_clips
        .join(format!(".T01-S0001-H001.{}.part", std::process::id()));
    std::fs::create_dir_all(&part).unwrap();
    let round = rig.round(&units[..10], &units[10..]).await;
    let failures = "banco_outbox_delivery_failures_total{table=\"T01\"}";
    while rig.sample(failures) < 2.0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let early = rig
        .auditor
        .clone()
        .get_round(pb::GetRoundRequest {
            round_id: round.to_string(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        early.code(),
        tonic::Code::NotFound,
        "the record waits for its clip: {early:?}"
    );
    std::fs::remove_dir(&part).unwrap();

    let record = rig.archived(&round).await;
    let clip = record
        .clip
        .expect("the round reached the archive with its clip");
    assert_eq!(record.clip_missing, None);
    let archived = rig.archive_clips.join(&clip.path);
    let local = rig.clips.dir().join(format!("{round}.mp4"));
    assert_eq!(hash_file(&archived).unwrap(), hash_file(&local).unwrap());
    assert_eq!(hash_file(&local).unwrap(), (clip.size_bytes, clip.sha256));
    assert_eq!(
        rig.sample("banco_video_clips_uploaded_total{table=\"T01\"}"),
        1.0
    );
    assert_eq!(rig.sample("banco_video_clips_lost_total{"), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clip_lost_goes_in_the_record_as_lost_and_a_round_without_video_does_not() {
    let Some(units) = camera_units(30) else {
        return;
    };
    // An archive that keeps no clips refuses every upload, for good.
    let rig = Rig::start(false).await;

    // The camera publishes, but what it sends cannot be recorded.
    let camera = rig.relay.claim().unwrap();
    let garbage = pb::VideoAccessUnit {
        table_id: "T01".to_owned(),
        sequence: 1,
        keyframe: true,
        codec: "h264".to_owned(),
        data: vec![1, 2, 3, 4],
        ..Default::default()
    };
    // Each round reaches the archive before the next is played: what the camera does
    // next is no part of it.
    let failed = rig.round(&[garbage], &[]).await;
    let failed = rig.archived(&failed).await;
    drop(camera);
    let no_video = rig.round(&[], &[]).await;
    let no_video = rig.archived(&no_video).await;
    let _camera = rig.relay.claim().unwrap();
    let refused = rig.round(&units[..10], &units[10..]).await;
    let refused = rig.archived(&refused).await;

    for (record, reason, says) in [
        (
            failed,
            pb::ClipMissingReason::RecorderFailed,
            "recorder failed",
        ),
        (no_video, pb::ClipMissingReason::NoVideo, "no camera"),
        (refused, pb::ClipMissingReason::Refused, "keeps no clips"),
    ] {
        let round = &record.round_id;
        assert_eq!(record.clip, None);
        let missing = record.clip_missing.unwrap();
        assert_eq!(missing.reason(), reason, "{round}: {missing:?}");
        assert!(missing.detail.contains(says), "{round}: {}", missing.detail);
    }
    let lost = |reason: &str| {
        rig.sample(&format!(
            "banco_video_clips_lost_total{{table=\"T01\",reason=\"{reason}\"}}"
        ))
    };
    assert_eq!(lost("recorder_failed"), 1.0);
    assert_eq!(lost("refused"), 1.0);
    assert_eq!(lost("no_video"), 0.0, "no camera is not a clip lost");
    assert_eq!(rig.sample("banco_video_clips_lost_total{"), 2.0);
}
