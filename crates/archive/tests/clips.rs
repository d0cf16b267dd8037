//! Round clips in the store, on SQLite always and again on PostgreSQL when `DATABASE_URL`
//! is set: a clip is recorded once per stored round, the same again is accepted, another
//! is refused and the first kept, and GetRound returns it.
#![allow(clippy::unwrap_used)]

mod support;

use banco_archive::ingest::append;
use banco_archive::query;
use banco_archive::store::{ClipPut, ClipRow};
use support::*;

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
        store.put_clip(&round_id, &clip).await.unwrap(),
        ClipPut::Stored
    );
    assert_eq!(
        store.put_clip(&round_id, &clip).await.unwrap(),
        ClipPut::Same
    );
    let other = ClipRow {
        sha256: "cd".repeat(32),
        ..clip.clone()
    };
    assert_eq!(
        store.put_clip(&round_id, &other).await.unwrap(),
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
    assert!(store.put_clip("T01-S0009-H001", &clip).await.is_err());
}

both_backends!(a_round_keeps_its_first_clip);
