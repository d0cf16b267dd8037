//! Round clips in the store, on SQLite always and again on PostgreSQL when `DATABASE_URL`
//! is set: a clip is recorded once per stored round, the same again is accepted, another
//! is refused and the first kept, and GetRound returns it; a round without one keeps why,
//! checked on Append, until its clip comes after all.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_archive::ingest::append;
use banco_archive::store::{ClipPut, ClipRow};
use banco_archive::{ServeOptions, query, serve};
use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Issuer, Role};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use sha2::{Digest as _, Sha256};
use support::*;
use tonic::transport::Channel;

async fn a_round_keeps_its_first_clip(db: TestDb) {
    let store = open(&db).await;
    let sealed = seal(&play("T01", 2, 1_700_000_000_000));
    let first = record(&sealed[0]);
    append(&store, &trusted(), &first).await.unwrap();
    let round_id = first.round_id.clone();
    assert_eq!(store.clip(&round_id).await.unwrap(), None);
    assert_eq!(
        query::get_round(&store, &round_id).await.unwrap().clip,
        None
    );

    let clip = ClipRow {
        path: format!("{round_id}.mp4"),
        size_bytes: 123_456,
        sha256: "ab".repeat(32),
    };
    assert_eq!(
        store.put_clip(&round_id, &clip, None).await.unwrap(),
        ClipPut::Stored
    );
    assert_eq!(
        store.put_clip(&round_id, &clip, None).await.unwrap(),
        ClipPut::Same
    );
    let other = ClipRow {
        sha256: "cd".repeat(32),
        ..clip.clone()
    };
    assert_eq!(
        store.put_clip(&round_id, &other, None).await.unwrap(),
        ClipPut::Different(clip.clone())
    );
    assert_eq!(store.clip(&round_id).await.unwrap(), Some(clip.clone()));

    let shown = query::get_round(&store, &round_id)
        .await
        .unwrap()
        .clip
        .unwrap();
    assert_eq!(shown.path, clip.path);
    assert_eq!(shown.size_bytes, 123_456);
    assert_eq!(shown.sha256, vec![0xab; 32]);

    // Only a stored round can have a clip.
    assert!(store.put_clip("T01-S0009-H001", &clip, None).await.is_err());
}

/// A round's clip, or why it has none, is stored in the round's own transaction: nobody
/// reads the round without it.
async fn the_clip_is_stored_with_its_round(db: TestDb) {
    let store = open(&db).await;
    let sealed = seal(&play("T01", 3, 1_700_000_000_000));
    let mut with_clip = record(&sealed[0]);
    with_clip.clip = Some(pb::ClipRef {
        path: format!("{}.mp4", with_clip.round_id),
        size_bytes: 42,
        sha256: vec![0xab; 32],
    });
    let with_clip = clip_sealed(with_clip, &sealed[0]);
    append(&store, &trusted(), &with_clip).await.unwrap();
    assert_eq!(
        store.clip(&with_clip.round_id).await.unwrap(),
        Some(ClipRow {
            path: format!("{}.mp4", with_clip.round_id),
            size_bytes: 42,
            sha256: "ab".repeat(32),
        })
    );
    let mut lost = vec![record(&sealed[1]), record(&sealed[2])];
    lost[0].clip_missing = missing(pb::ClipMissingReason::NotFinished, "still being written");
    lost[1].clip_missing = missing(pb::ClipMissingReason::FileGone, "no file");
    let lost: Vec<pb::RoundRecord> = lost
        .into_iter()
        .zip(&sealed[1..])
        .map(|(r, s)| clip_sealed(r, s))
        .collect();
    banco_archive::ingest::append_batch(&store, &Arc::new(trusted()), lost.clone())
        .await
        .unwrap();
    for record in &lost {
        let shown = query::get_round(&store, &record.round_id).await.unwrap();
        assert_eq!(shown.clip_missing, record.clip_missing);
        assert_eq!(shown.clip, None);
    }
    let stored = store
        .clip_missing(&lost[0].round_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.reason, "not_finished");
}

type Client =
    ArchiveServiceClient<tonic::service::interceptor::InterceptedService<Channel, BearerToken>>;

/// The archive served on 127.0.0.1:0 with a clip folder; a service's client and an
/// auditor's.
async fn served(db: &TestDb, clips: &std::path::Path) -> (Client, Client) {
    let issuer = Issuer::new(signing_key_from_seed(&[9; 32]), "banco").unwrap();
    let options = ServeOptions {
        verifier: Arc::new(issuer.verifier()),
        store: open(db).await,
        table_keys: trusted(),
        tls: None,
        clips: Some(clips.to_owned()),
        metrics: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, options, std::future::pending()));
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_lazy();
    let client = |sub: &str, role: Role| {
        let token = issuer
            .issue(sub, role, Duration::from_secs(600), SystemTime::now())
            .unwrap();
        ArchiveServiceClient::with_interceptor(channel.clone(), BearerToken::new(&token).unwrap())
    };
    (
        client("broadcaster", Role::Service),
        client("ada", Role::Auditor),
    )
}

fn missing(reason: pb::ClipMissingReason, detail: &str) -> Option<pb::ClipMissing> {
    Some(pb::ClipMissing {
        reason: reason.into(),
        detail: detail.to_owned(),
    })
}

async fn a_round_without_its_clip_says_why(db: TestDb) {
    let dir = tempfile::tempdir().unwrap();
    let (mut service, mut auditor) = served(&db, dir.path()).await;
    let sealed = seal(&play("T01", 3, 1_700_000_000_000));
    let appender = service.clone();
    let append_record = |record: pb::RoundRecord| {
        let mut service = appender.clone();
        async move {
            service
                .append(pb::AppendRequest {
                    record: Some(record),
                })
                .await
        }
    };

    // Bad words about the clip are refused, naming the field, and store nothing.
    let mut both = record(&sealed[0]);
    both.clip = Some(pb::ClipRef {
        path: format!("{}.mp4", both.round_id),
        size_bytes: 1,
        sha256: vec![0; 32],
    });
    both.clip_missing = missing(pb::ClipMissingReason::NoVideo, "no camera");
    let mut unspecified = record(&sealed[0]);
    unspecified.clip_missing = missing(pb::ClipMissingReason::Unspecified, "");
    let mut unknown = record(&sealed[0]);
    unknown.clip_missing = Some(pb::ClipMissing {
        reason: 99,
        detail: String::new(),
    });
    let mut long = record(&sealed[0]);
    long.clip_missing = missing(pb::ClipMissingReason::Missed, &"x".repeat(1001));
    for (bad, field) in [
        (both, "record.clip_missing"),
        (unspecified, "record.clip_missing.reason"),
        (unknown, "record.clip_missing.reason"),
        (long, "record.clip_missing.detail"),
    ] {
        let refused = append_record(bad).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
        assert!(refused.message().contains(field), "{}", refused.message());
    }
    let mut batch = vec![record(&sealed[0]), record(&sealed[1])];
    batch[1].clip_missing = missing(pb::ClipMissingReason::Unspecified, "");
    let refused = service
        .append_batch(pb::AppendBatchRequest { records: batch })
        .await
        .unwrap_err();
    assert!(
        refused.message().contains("records[1]"),
        "{}",
        refused.message()
    );
    let listed = auditor
        .list_rounds(pb::ListRoundsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(listed.rounds.is_empty(), "nothing stored");

    // A round without video, and one whose clip was lost: each keeps why.
    let mut no_video = record(&sealed[0]);
    no_video.clip_missing = missing(pb::ClipMissingReason::NoVideo, "no camera was publishing");
    let mut lost = record(&sealed[1]);
    lost.clip_missing = missing(pb::ClipMissingReason::RecorderFailed, "the recorder failed");
    let (no_video, lost) = (
        clip_sealed(no_video, &sealed[0]),
        clip_sealed(lost, &sealed[1]),
    );
    let acks = service
        .append_batch(pb::AppendBatchRequest {
            records: vec![no_video.clone(), lost.clone()],
        })
        .await
        .unwrap()
        .into_inner()
        .acks;
    assert!(acks.iter().all(|a| a.refusal.is_none()), "{acks:?}");
    let reader = auditor.clone();
    let get = |round_id: String| {
        let mut auditor = reader.clone();
        async move {
            auditor
                .get_round(pb::GetRoundRequest { round_id })
                .await
                .unwrap()
                .into_inner()
        }
    };
    let got = get(no_video.round_id.clone()).await;
    assert_eq!(got.clip, None);
    assert_eq!(got.clip_missing, no_video.clip_missing);
    let got = get(lost.round_id.clone()).await;
    assert_eq!(got.clip_missing, lost.clip_missing);

    // Sent again with other words, the first stand; sent again with its clip (found
    // after all), the clip replaces them.
    let mut again = lost.clone();
    again.clip_missing = missing(pb::ClipMissingReason::Missed, "other words");
    let again = clip_sealed(again, &sealed[1]);
    assert!(append_record(again).await.unwrap().into_inner().duplicate);
    let got = get(lost.round_id.clone()).await;
    assert_eq!(got.clip_missing, lost.clip_missing);
    assert_eq!(
        got.clip_signature, lost.clip_signature,
        "the first seal stands with it"
    );
    let data = b"the clip after all".to_vec();
    let sha256 = Sha256::digest(&data).to_vec();
    let stored = service
        .upload_clip(futures::stream::iter([pb::ClipUpload {
            round_id: lost.round_id.clone(),
            size_bytes: data.len() as u64,
            sha256,
            data,
        }]))
        .await
        .unwrap()
        .into_inner();
    let mut with_clip = lost.clone();
    with_clip.clip_missing = None;
    with_clip.clip = stored.clip;
    let with_clip = clip_sealed(with_clip, &sealed[1]);
    assert!(
        append_record(with_clip.clone())
            .await
            .unwrap()
            .into_inner()
            .duplicate
    );
    let got = get(lost.round_id.clone()).await;
    assert_eq!(got.clip, with_clip.clip);
    assert_eq!(got.clip_missing, None, "the clip came after all");

    // A record that says nothing of its clip (a broadcaster recording none) has neither.
    let silent = record(&sealed[2]);
    append_record(silent.clone()).await.unwrap();
    let got = get(silent.round_id.clone()).await;
    assert_eq!((got.clip, got.clip_missing), (None, None));
}

/// The table seals what each record says of its clip: a seal that does not match is
/// refused, and a clip swapped or a seal removed in the database afterwards is named by
/// Verify (before seals, both went unseen: the clip's hash sat beside the record, outside
/// the chain).
async fn a_swapped_clip_or_a_removed_seal_is_found_by_verify(db: TestDb) {
    let store = open(&db).await;
    let keys = trusted();
    let sealed = seal(&play("T01", 3, 1_700_000_000_000));
    let clip = |sha: u8| pb::ClipRef {
        path: format!("{}.mp4", sealed[0].round.round_id),
        size_bytes: 42,
        sha256: vec![sha; 32],
    };
    let mut with_clip = record(&sealed[0]);
    with_clip.clip = Some(clip(0xab));
    let with_clip = clip_sealed(with_clip, &sealed[0]);
    // Sealed for one clip, sent with another: refused.
    let mut swapped = with_clip.clone();
    swapped.clip = Some(clip(0xcd));
    let refused = append(&store, &keys, &swapped).await.unwrap_err();
    assert!(refused.to_string().contains("clip_signature"), "{refused}");
    // A signed round's clip without a seal: refused.
    let mut unsealed = with_clip.clone();
    unsealed.clip_signature.clear();
    let refused = append(&store, &keys, &unsealed).await.unwrap_err();
    assert!(refused.to_string().contains("missing"), "{refused}");
    append(&store, &keys, &with_clip).await.unwrap();
    let mut lost = record(&sealed[1]);
    lost.clip_missing = missing(pb::ClipMissingReason::Missed, "behind");
    append(&store, &keys, &clip_sealed(lost, &sealed[1]))
        .await
        .unwrap();
    append(&store, &keys, &record(&sealed[2])).await.unwrap();
    let v = banco_archive::verify::verify(&store, &keys, "T01")
        .await
        .unwrap();
    assert!(v.ok, "{:?}", v.first_bad);
    assert_eq!((v.records_checked, v.clip_seals_checked), (3, 2));

    let round = sealed[0].round.round_id.to_string();
    exec(
        &store,
        &format!(
            "UPDATE clips SET sha256 = '{}' WHERE round_id = '{round}'",
            "cd".repeat(32)
        ),
    )
    .await;
    let v = banco_archive::verify::verify(&store, &keys, "T01")
        .await
        .unwrap();
    let bad = v.first_bad.unwrap();
    assert!(!v.ok);
    assert_eq!(bad.round_id, round);
    assert!(
        bad.problem.contains("clip seal does not match"),
        "{}",
        bad.problem
    );

    exec(
        &store,
        &format!(
            "UPDATE clips SET sha256 = '{}' WHERE round_id = '{round}'",
            "ab".repeat(32)
        ),
    )
    .await;
    let missing_round = sealed[1].round.round_id.to_string();
    exec(
        &store,
        &format!("DELETE FROM clip_seals WHERE round_id = '{missing_round}'"),
    )
    .await;
    let v = banco_archive::verify::verify(&store, &keys, "T01")
        .await
        .unwrap();
    let bad = v.first_bad.unwrap();
    assert_eq!(bad.round_id, missing_round);
    assert!(bad.problem.contains("not sealed"), "{}", bad.problem);
}

banco_testdb::both_backends!(
    file = "archive.db";
    a_round_keeps_its_first_clip,
    the_clip_is_stored_with_its_round,
    a_round_without_its_clip_says_why,
    a_swapped_clip_or_a_removed_seal_is_found_by_verify
);
