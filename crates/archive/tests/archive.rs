//! The archive suite, on SQLite always and again on PostgreSQL when `DATABASE_URL` is set.
#![allow(clippy::unwrap_used)]

mod support;

use banco_archive::ingest::append;
use banco_archive::{Appended, ArchiveError, query, record, stats, verify};
use banco_rules::Coup;
use banco_wire::pb;
use support::*;

async fn append_and_every_refusal(db: TestDb) {
    let store = open(&db).await;
    let keys = trusted();
    let sealed = seal(&play("T01", 4, 1_700_000_000_000));
    // First round stored; the same again is a duplicate.
    let first = record(&sealed[0]);
    assert!(matches!(
        append(&store, &keys, &first).await.unwrap(),
        Appended::Stored { .. }
    ));
    assert!(matches!(
        append(&store, &keys, &first).await.unwrap(),
        Appended::Duplicate { .. }
    ));
    // Garbage table_record names the field.
    let mut garbage = record(&sealed[1]);
    garbage.table_record = b"{not json".to_vec();
    let e = append(&store, &keys, &garbage).await.unwrap_err();
    assert!(e.to_string().contains("record.table_record"), "{e}");
    // round_id disagreeing with the table's record.
    let mut wrong_id = record(&sealed[1]);
    wrong_id.round_id = "T01-S0001-H099".into();
    assert!(
        append(&store, &keys, &wrong_id)
            .await
            .unwrap_err()
            .to_string()
            .contains("record.round_id")
    );
    // Wrong hash.
    let mut wrong_hash = record(&sealed[1]);
    wrong_hash.hash[0] ^= 1;
    assert!(matches!(
        append(&store, &keys, &wrong_hash).await.unwrap_err(),
        ArchiveError::HashMismatch { .. }
    ));
    // A table_record edited but hash left: mismatch too.
    let mut edited = record(&sealed[1]);
    let mut round = sealed[1].round.clone();
    round.finished_at += 1;
    edited.table_record = serde_json::to_vec(&round).unwrap();
    assert!(matches!(
        append(&store, &keys, &edited).await.unwrap_err(),
        ArchiveError::HashMismatch { .. }
    ));
    // Bad signature.
    let mut bad_sig = record(&sealed[1]);
    bad_sig.signature[5] ^= 1;
    assert!(matches!(
        append(&store, &keys, &bad_sig).await.unwrap_err(),
        ArchiveError::BadSignature { .. }
    ));
    // Bytes that parse to the round but are not the table's encoding of it (pretty
    // printed), hashed as they are and unsigned: an archive with no table key to check
    // them against refuses them by re-encoding the round; one with keys, as unsigned.
    let mut pretty = record(&sealed[1]);
    pretty.table_record = serde_json::to_vec_pretty(&sealed[1].round).unwrap();
    let hash =
        banco_table::actor::SealedRound::hash_encoded(&sealed[1].prev_hash, &pretty.table_record)
            .unwrap();
    pretty.hash = banco_records::hex::from_hex(&hash).unwrap();
    pretty.signature.clear();
    pretty.key_id.clear();
    let e = append(&store, &banco_archive::TrustedKeys::default(), &pretty)
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("not the table's canonical encoding of the round"),
        "{e}"
    );
    assert!(matches!(
        append(&store, &keys, &pretty).await.unwrap_err(),
        ArchiveError::BadSignature { .. }
    ));
    // Unknown key.
    let other =
        banco_archive::TrustedKeys::new([
            ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]).verifying_key()
        ]);
    assert!(matches!(
        append(&store, &other, &record(&sealed[1]))
            .await
            .unwrap_err(),
        ArchiveError::UnknownKey { .. }
    ));
    // Gap: round 3 before round 2, named.
    match append(&store, &keys, &record(&sealed[2])).await.unwrap() {
        Appended::Gap {
            last: Some(last),
            expected_prev_hash,
            expected_seq,
        } => {
            assert_eq!(last.round_id, sealed[0].round.round_id.as_str());
            assert_eq!(expected_prev_hash, sealed[0].hash);
            assert_eq!(expected_seq, 2);
        }
        other => panic!("{other:?}"),
    }
    // Nothing of the refused ones was stored.
    assert!(
        store
            .get_round(sealed[1].round.round_id.as_str())
            .await
            .unwrap()
            .is_none()
    );
    // In order, they go in.
    for s in &sealed[1..] {
        assert!(matches!(
            append(&store, &keys, &record(s)).await.unwrap(),
            Appended::Stored { .. }
        ));
    }
    // Conflict: a different record (another chain's round 1) under a stored id.
    let mut fork = play("T01", 1, 1_800_000_000_000);
    let forked = support::seal(&fork.split_off(0));
    assert!(matches!(
        append(&store, &keys, &record(&forked[0])).await.unwrap(),
        Appended::Conflict { .. }
    ));
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    assert!(v.ok, "{v:?}");
    assert_eq!(v.records_checked, 4);
    assert_eq!(v.head_round_id, sealed[3].round.round_id.as_str());
}

async fn get_round_is_derived_from_the_record(db: TestDb) {
    let (store, sealed) = filled(&db, 6).await;
    let r = query::get_round(&store, "T01-S0001-H002").await.unwrap();
    assert_eq!(r.shoe_id, "T01-S0001");
    assert_eq!(r.corrections.len(), 1);
    assert_eq!(r.corrections[0].by, "pit-boss");
    // Credited to who confirmed it, not to who corrected a card.
    assert_eq!(r.croupier, support::CROUPIER);
    assert!(r.result.is_some());
    assert_eq!(r.bets.len(), 3);
    assert!(r.bets.iter().all(|b| b.settlement.is_some()));
    // Each bet carries the key and time of the request that placed it, not the player's
    // last request or the close of betting.
    let bet = |kind: pb::BetKind| r.bets.iter().find(|b| b.kind() == kind).unwrap();
    let (player, tie) = (bet(pb::BetKind::Player), bet(pb::BetKind::Tie));
    assert_eq!(player.idempotency_key, "p2-T01-S0001-H002");
    assert_eq!(tie.idempotency_key, "p2-T01-S0001-H002-tie");
    assert_eq!(
        bet(pb::BetKind::Banker).idempotency_key,
        "p1-T01-S0001-H002"
    );
    let ms = |b: &pb::PlayerBet| b.placed_at.as_ref().map(record::timestamp_ms).unwrap();
    assert_eq!(ms(tie) - ms(player), 1_000, "placed a second apart");
    assert!(
        ms(tie)
            < r.betting_closed_at
                .as_ref()
                .map(record::timestamp_ms)
                .unwrap()
    );
    assert_eq!(
        tie.placements
            .iter()
            .map(|p| (p.idempotency_key.as_str(), p.amount_minor))
            .collect::<Vec<_>>(),
        [("p2-T01-S0001-H002-tie", 500)],
        "raised to the Tie minimum"
    );
    assert_eq!(r.chain_seq, 2);
    assert_eq!(
        r.table_record,
        serde_json::to_vec(&sealed[1].round).unwrap()
    );
    assert_eq!(r.signature.len(), 64);
    let void = query::get_round(&store, "T01-S0001-H003").await.unwrap();
    assert!(void.voided);
    assert_eq!(void.void_reason, "scanner fault");
    assert!(void.result.is_none());
    assert!(
        void.bets
            .iter()
            .all(|b| b.refunded_minor == b.stake_minor && b.settlement.is_none())
    );
    let missing = query::get_round(&store, "T01-S0001-H999")
        .await
        .unwrap_err();
    assert!(matches!(missing, ArchiveError::NotFound(_)));
}

async fn list_rounds_filters_and_pages(db: TestDb) {
    let (store, _) = filled(&db, 12).await;
    let list = |filter: pb::RoundFilter, size: u32, token: String| {
        let store = store.clone();
        async move {
            query::list_rounds(
                &store,
                &pb::ListRoundsRequest {
                    filter: Some(filter),
                    page_size: size,
                    page_token: token,
                },
            )
            .await
            .unwrap()
        }
    };
    let all = list(pb::RoundFilter::default(), 0, String::new()).await;
    assert_eq!(all.rounds.len(), 17);
    // Newest first.
    assert!(
        all.rounds
            .windows(2)
            .all(|w| w[0].finished_at.unwrap().seconds >= w[1].finished_at.unwrap().seconds)
    );
    let t01 = list(
        pb::RoundFilter {
            table_id: "T01".into(),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(t01.rounds.len(), 12);
    // Paging: 5 + 5 + 2, no duplicate, none lost.
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = list(
            pb::RoundFilter {
                table_id: "T01".into(),
                ..Default::default()
            },
            5,
            token,
        )
        .await;
        seen.extend(page.rounds.iter().map(|r| r.round_id.clone()));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let expected: Vec<String> = t01.rounds.iter().map(|r| r.round_id.clone()).collect();
    assert_eq!(seen, expected);
    let shoe = list(
        pb::RoundFilter {
            shoe_id: "T02-S0001".into(),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(shoe.rounds.len(), 5);
    let voided = list(
        pb::RoundFilter {
            voided_only: true,
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(voided.rounds.len(), 2);
    let corrected = list(
        pb::RoundFilter {
            corrected_only: true,
            table_id: "T01".into(),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(
        corrected
            .rounds
            .iter()
            .map(|r| r.round_id.as_str())
            .collect::<Vec<_>>(),
        ["T01-S0001-H002"]
    );
    let banker = list(
        pb::RoundFilter {
            winner: pb::Winner::Banker.into(),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert!(!banker.rounds.is_empty());
    assert!(
        banker
            .rounds
            .iter()
            .all(|r| r.result.as_ref().unwrap().winner == i32::from(pb::Winner::Banker))
    );
    let p1 = list(
        pb::RoundFilter {
            player_id: "p1".into(),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(p1.rounds.len(), 17);
    let nobody = list(
        pb::RoundFilter {
            player_id: "nobody".into(),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert!(nobody.rounds.is_empty());
    // Time range [from, to): T01 started at 1_700_000_000 s, T02 at 1_700_100_000 s.
    let from = banco_wire::Timestamp {
        seconds: 1_700_050_000,
        nanos: 0,
    };
    let later = list(
        pb::RoundFilter {
            from: Some(from),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(later.rounds.len(), 5);
    let earlier = list(
        pb::RoundFilter {
            to: Some(from),
            ..Default::default()
        },
        0,
        String::new(),
    )
    .await;
    assert_eq!(earlier.rounds.len(), 12);
    let bad = query::list_rounds(
        &store,
        &pb::ListRoundsRequest {
            filter: None,
            page_size: 5000,
            page_token: String::new(),
        },
    )
    .await;
    assert!(bad.unwrap_err().to_string().contains("page_size"));
    let bad = query::list_rounds(
        &store,
        &pb::ListRoundsRequest {
            filter: None,
            page_size: 5,
            page_token: "junk".into(),
        },
    )
    .await;
    assert!(bad.unwrap_err().to_string().contains("page_token"));
}

async fn collect_export(
    store: &banco_archive::Store,
    filter: pb::RoundFilter,
    format: banco_archive::export::Format,
) -> String {
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let sql = query::filter_sql(Some(&filter)).unwrap();
    tokio::spawn(banco_archive::export::run(store.clone(), sql, format, tx));
    let mut out = Vec::new();
    let mut last = false;
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.unwrap();
        out.extend(chunk.data);
        last = chunk.last;
    }
    assert!(last, "the export ended without its last chunk");
    String::from_utf8(out).unwrap()
}

async fn export_jsonl_replays_and_csv_has_a_row_per_bet(db: TestDb) {
    let (store, sealed) = filled(&db, 30).await;
    let jsonl = collect_export(
        &store,
        pb::RoundFilter {
            shoe_id: "T01-S0001".into(),
            ..Default::default()
        },
        banco_archive::export::Format::Jsonl,
    )
    .await;
    let lines: Vec<&str> = jsonl.lines().collect();
    assert_eq!(lines.len(), 30);
    for (line, s) in lines.iter().zip(&sealed) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["round_id"], s.round.round_id.as_str());
        let cards: Vec<banco_rules::Card> = v["cards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().parse().unwrap())
            .collect();
        match &s.round.result {
            Some(result) => {
                let judged = Coup::judge(&cards).unwrap();
                assert_eq!(&judged, result, "{line}");
                let stored = query::get_round(&store, s.round.round_id.as_str())
                    .await
                    .unwrap();
                assert_eq!(stored.result, Some(pb::HandResult::from(&judged)));
                assert_eq!(
                    v["winner"],
                    banco_archive::record::winner_name(judged.winner())
                );
            }
            None => assert_eq!(v["voided"], true),
        }
    }
    // Every line is what the contract names: an ExportLine in the proto3 JSON mapping,
    // read by a generic parser from the descriptors alone, with no field it does not know.
    let pool = prost_reflect::DescriptorPool::decode(banco_wire::FILE_DESCRIPTOR_SET).unwrap();
    let line_type = pool.get_message_by_name("banco.v1.ExportLine").unwrap();
    let mut voided = 0;
    for (line, s) in lines.iter().zip(&sealed) {
        let mut parser = serde_json::Deserializer::from_str(line);
        let message = prost_reflect::DynamicMessage::deserialize(line_type.clone(), &mut parser)
            .unwrap_or_else(|e| panic!("not an ExportLine ({e}): {line}"));
        let field = |name: &str| message.get_field_by_name(name).unwrap().into_owned();
        assert_eq!(field("round_id").as_str(), Some(s.round.round_id.as_str()));
        assert_eq!(field("chain_seq").as_u64(), Some(s.seq));
        assert_eq!(field("hash").as_str(), Some(s.hash.as_str()));
        let rows = banco_archive::record::bet_rows(&s.round);
        let bets = field("bets");
        let bets = bets.as_list().unwrap();
        assert_eq!(bets.len(), rows.len(), "{line}");
        let staked: i64 = bets
            .iter()
            .map(|b| {
                let b = b.as_message().unwrap();
                b.get_field_by_name("stake_minor")
                    .unwrap()
                    .as_i64()
                    .unwrap()
            })
            .sum();
        let expected: i64 = rows.iter().map(|b| b.stake).sum();
        assert_eq!(staked, expected, "{line}");
        if s.round.result.is_none() {
            voided += 1;
            assert!(!message.has_field_by_name("winner"), "{line}");
            assert!(field("voided").as_bool().unwrap());
        }
    }
    assert!(
        voided > 0,
        "the shoe holds a voided round, whose absent fields are null"
    );
    let csv = collect_export(
        &store,
        pb::RoundFilter {
            table_id: "T01".into(),
            ..Default::default()
        },
        banco_archive::export::Format::Csv,
    )
    .await;
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], banco_archive::export::CSV_HEADER.trim_end());
    assert_eq!(rows.len(), 1 + 30 * 3);
    let columns = rows[0].split(',').count();
    assert!(rows.iter().all(|r| r.split(',').count() == columns));
}

async fn verify_finds_an_edit_and_a_deletion(db: TestDb) {
    let (store, _) = filled(&db, 10).await;
    let keys = trusted();
    assert!(verify::verify(&store, &keys, "").await.unwrap().ok);
    store.close().await;
    // Edit a stored column, then delete a round, with the database's own tool.
    let exec = |sql: &str| {
        if let Some(path) = db.sqlite_path() {
            // The file can still be locked for a moment after the pool is closed (CI
            // once failed here with "database is locked"): wait for the lock, as a
            // person at the tool would, instead of failing at once.
            let out = std::process::Command::new("sqlite3")
                .args(["-cmd", ".timeout 10000"])
                .arg(&path)
                .arg(sql)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        } else {
            let url = db.url.clone();
            let sql = sql.to_owned();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Runtime::new().unwrap();
                rt.block_on(async {
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    sqlx::query(&sql).execute(&pool).await.unwrap();
                    pool.close().await;
                });
            })
            .join()
            .unwrap();
        }
    };
    exec("UPDATE rounds SET winner = 'player' WHERE round_id = 'T01-S0001-H005'");
    let store = open(&db).await;
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    assert!(!v.ok);
    let bad = v.first_bad.unwrap();
    assert_eq!(bad.round_id, "T01-S0001-H005");
    assert!(bad.problem.contains("disagree"), "{}", bad.problem);
    assert_eq!(v.head_round_id, "T01-S0001-H004");
    store.close().await;
    // The record itself edited: unpacked, changed, packed again and written back, as a
    // forger who knows the format would.
    let store = open(&db).await;
    let stored = store.get_round("T01-S0001-H003").await.unwrap().unwrap();
    let text = String::from_utf8(stored.table_record().unwrap()).unwrap();
    assert!(text.contains("scanner fault"));
    let forged =
        banco_archive::packed::pack(text.replace("scanner fault", "scanner fauLt").as_bytes());
    let hex = banco_records::hex::to_hex(&forged);
    let literal = if db.sqlite_path().is_some() {
        format!("X'{hex}'")
    } else {
        format!("decode('{hex}', 'hex')")
    };
    store.close().await;
    exec(&format!(
        "UPDATE round_records SET table_record = {literal} WHERE round_id = 'T01-S0001-H003'"
    ));
    let store = open(&db).await;
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    let bad = v.first_bad.unwrap();
    assert_eq!(bad.round_id, "T01-S0001-H003");
    assert_eq!(bad.problem, "hash mismatch");
    store.close().await;
    for table in ["bets", "round_exports", "round_records", "rounds"] {
        exec(&format!(
            "DELETE FROM {table} WHERE round_id IN ('T01-S0001-H003', 'T01-S0001-H005')"
        ));
    }
    let store = open(&db).await;
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    let bad = v.first_bad.unwrap();
    assert_eq!(bad.round_id, "T01-S0001-H004");
    assert!(
        bad.problem
            .starts_with("gap: chain_seq 4 follows 2 (T01-S0001-H002)"),
        "{}",
        bad.problem
    );
    // The other table is untouched.
    assert!(verify::verify(&store, &keys, "T02").await.unwrap().ok);
}

async fn stats_shoe_report_and_player_bets(db: TestDb) {
    let (store, sealed) = filled(&db, 30).await;
    let s = stats::stats(
        &store,
        &pb::StatsRequest {
            scope: pb::StatsScope::Table.into(),
            key: "T01".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(s.rounds, 30);
    assert_eq!(s.voided, 1);
    assert_eq!(s.corrections, 1);
    assert_eq!(s.banker_wins + s.player_wins + s.ties, 29);
    let results: Vec<_> = sealed
        .iter()
        .filter_map(|r| r.round.result.as_ref())
        .collect();
    assert_eq!(
        s.naturals,
        results.iter().filter(|r| r.is_natural()).count() as u64
    );
    assert_eq!(
        s.banker_pairs,
        results.iter().filter(|r| r.banker_pair()).count() as u64
    );
    let staked: i64 = sealed
        .iter()
        .filter(|r| r.round.void.is_none())
        .flat_map(|r| r.round.bets.values().flat_map(|b| b.values()))
        .sum();
    let returned: i64 = sealed
        .iter()
        .flat_map(|r| r.round.settlements.values().flatten())
        .map(|x| x.returned)
        .sum();
    assert_eq!(s.house_gross_win_minor, staked - returned);
    let banker = s
        .positions
        .iter()
        .find(|p| p.kind == i32::from(pb::BetKind::Banker))
        .unwrap();
    assert_eq!(banker.bets, 29);
    assert!(
        banker.theoretical_rtp > 0.98 && banker.theoretical_rtp < 0.99,
        "{}",
        banker.theoretical_rtp
    );
    assert!(s.longest_banker_streak >= 1 && s.longest_player_streak >= 1);
    let board = banco_rules::Scoreboard::from_results(
        &results.iter().map(|r| r.winner()).collect::<Vec<_>>(),
    );
    assert_eq!(s.longest_banker_streak, board.stats().longest_banker);
    assert_eq!(s.longest_player_streak, board.stats().longest_player);
    let by_croupier = stats::stats(
        &store,
        &pb::StatsRequest {
            scope: pb::StatsScope::Croupier.into(),
            key: support::CROUPIER.into(),
        },
    )
    .await
    .unwrap();
    let credited = sealed
        .iter()
        .filter(|s| banco_archive::record::croupier(&s.round) == support::CROUPIER)
        .count();
    // T01's rounds, and those of the second table the fixture also fills.
    assert!(
        by_croupier.rounds >= credited as u64,
        "{}",
        by_croupier.rounds
    );
    assert!(credited >= 29, "{credited}");
    let nobody = stats::stats(
        &store,
        &pb::StatsRequest {
            scope: pb::StatsScope::Croupier.into(),
            key: "nobody".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(nobody.rounds, 0);
    let day = banco_archive::record::utc_day(1_700_000_000_000);
    let by_day = stats::stats(
        &store,
        &pb::StatsRequest {
            scope: pb::StatsScope::Day.into(),
            key: day,
        },
    )
    .await
    .unwrap();
    assert_eq!(by_day.rounds, 30);
    let by_shoe = stats::stats(
        &store,
        &pb::StatsRequest {
            scope: pb::StatsScope::Shoe.into(),
            key: "T02-S0001".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(by_shoe.rounds, 5);
    assert!(
        stats::stats(
            &store,
            &pb::StatsRequest {
                scope: pb::StatsScope::Day.into(),
                key: "2024-13-01".into()
            }
        )
        .await
        .unwrap_err()
        .to_string()
        .contains("`key`")
    );

    let shoe = query::shoe_report(&store, "T01-S0001").await.unwrap();
    assert_eq!(shoe.rounds, 30);
    assert_eq!(shoe.voided, 1);
    assert_eq!(shoe.results.len(), 29);
    assert!(shoe.roads.is_some());
    assert_eq!(shoe.roads, Some(pb::Roads::from(&board)));

    let bets = query::player_bets(
        &store,
        &pb::PlayerBetsRequest {
            player_id: "p2".into(),
            page_size: 10,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(bets.entries.len(), 20); // 10 rounds, two positions each
    assert!(!bets.next_page_token.is_empty());
    assert!(
        bets.entries
            .iter()
            .all(|e| e.bet.as_ref().unwrap().player_id == "p2")
    );
}

/// Rounds stored by the schema of version 1 (the record in `rounds`, bets in a rowid
/// table, no aggregates yet) are carried over by migrations 2 to 4: the aggregates are
/// filled from them, and they verify, and export and read back exactly as the same rounds
/// appended today.
async fn migrations_carry_stored_rounds_over(db: TestDb) {
    let sealed = seal(&play("T01", 12, 1_700_000_000_000));
    let old = banco_archive::Store::open_at_version(&db.url, 1)
        .await
        .unwrap();
    macro_rules! insert_v2 {
        ($pool:expr) => {{
            for s in &sealed {
                let row = banco_archive::record::round_row(&s.round);
                sqlx::query(
                    "INSERT INTO rounds (round_id, table_id, chain_seq, shoe_id, shoe, hand,
                        croupier, betting_opened_at, betting_closed_at, finished_at, day, winner,
                        is_natural, player_pair, banker_pair, voided, corrections, cards, bets,
                        total_stake, total_returned, total_refunded, prev_hash, hash, signature,
                        key_id, table_record)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                        $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)",
                )
                .bind(&row.round_id)
                .bind(&row.table_id)
                .bind(i64::try_from(s.seq).unwrap())
                .bind(&row.shoe_id)
                .bind(row.shoe)
                .bind(row.hand)
                .bind(&row.croupier)
                .bind(row.betting_opened_at)
                .bind(row.betting_closed_at)
                .bind(row.finished_at)
                .bind(&row.day)
                .bind(&row.winner)
                .bind(row.natural)
                .bind(row.player_pair)
                .bind(row.banker_pair)
                .bind(row.voided)
                .bind(row.corrections)
                .bind(row.cards)
                .bind(row.bets)
                .bind(row.total_stake)
                .bind(row.total_returned)
                .bind(row.total_refunded)
                .bind(&s.prev_hash)
                .bind(&s.hash)
                .bind(&s.signature)
                .bind(&s.key_id)
                .bind(serde_json::to_vec(&s.round).unwrap())
                .execute($pool)
                .await
                .unwrap();
                for b in banco_archive::record::bet_rows(&s.round) {
                    sqlx::query(
                        "INSERT INTO bets (round_id, player_id, position, stake, returned,
                            refunded, won, rounding_remainder, rounding_denominator, finished_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(&row.round_id)
                    .bind(&b.player_id)
                    .bind(&b.position)
                    .bind(b.stake)
                    .bind(b.returned)
                    .bind(b.refunded)
                    .bind(b.won)
                    .bind(b.rounding_remainder)
                    .bind(b.rounding_denominator)
                    .bind(row.finished_at)
                    .execute($pool)
                    .await
                    .unwrap();
                }
            }
        }};
    }
    match old.db() {
        banco_archive::store::Db::Sqlite(pool) => insert_v2!(pool),
        banco_archive::store::Db::Postgres(pool) => insert_v2!(pool),
    }
    old.close().await;

    let migrated = open(&db).await;
    let keys = trusted();
    let v = verify::verify(&migrated, &keys, "T01").await.unwrap();
    assert!(v.ok, "{:?}", v.first_bad);
    assert_eq!(v.records_checked, 12);
    let fresh_db = support::sqlite();
    let fresh = open(&fresh_db).await;
    for s in &sealed {
        append(&fresh, &keys, &record(s)).await.unwrap();
    }
    for format in [
        banco_archive::export::Format::Jsonl,
        banco_archive::export::Format::Csv,
    ] {
        let everything = pb::RoundFilter::default();
        let was = collect_export(&migrated, everything.clone(), format).await;
        assert!(!was.is_empty());
        assert_eq!(was, collect_export(&fresh, everything, format).await);
    }
    let id = sealed[3].round.round_id.to_string();
    assert_eq!(
        query::get_round(&migrated, &id).await.unwrap(),
        query::get_round(&fresh, &id).await.unwrap()
    );
    // Appends carry on from the migrated chain.
    let next = seal(&play("T01", 13, 1_700_000_000_000));
    assert!(matches!(
        append(&migrated, &keys, &record(&next[12])).await.unwrap(),
        Appended::Stored { .. }
    ));
}

/// Runs `sql` on the store's own pool.
/// What Export writes is kept rendered beside the record: verify names a forged line and
/// a line left behind for a deleted round.
async fn verify_finds_a_forged_export(db: TestDb) {
    let (store, sealed) = filled(&db, 10).await;
    let keys = trusted();
    let target = &sealed[3];
    let line = banco_archive::export::render(
        &banco_archive::record::round_row(&target.round),
        &banco_archive::record::bet_rows(&target.round),
        target.seq,
        &target.hash,
    )
    .0;
    let text = String::from_utf8(line).unwrap();
    assert!(text.contains("\"stake_minor\":"), "{text}");
    let forged = banco_archive::packed::pack(
        text.replacen("\"stake_minor\":", "\"stake_minor\":1", 1)
            .as_bytes(),
    );
    let hex = banco_records::hex::to_hex(&forged);
    let literal = if db.sqlite_path().is_some() {
        format!("X'{hex}'")
    } else {
        format!("decode('{hex}', 'hex')")
    };
    exec(
        &store,
        &format!(
            "UPDATE round_exports SET jsonl = {literal} WHERE round_id = '{}'",
            target.round.round_id
        ),
    )
    .await;
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    let bad = v.first_bad.unwrap();
    assert_eq!(bad.round_id, target.round.round_id.to_string());
    assert!(bad.problem.contains("Export"), "{}", bad.problem);

    // The last round deleted everywhere but in what Export keeps.
    let other = support::sqlite();
    let (store, sealed) = filled(&other, 6).await;
    let last = sealed.last().unwrap().round.round_id.to_string();
    for table in ["bets", "round_records", "rounds"] {
        exec(
            &store,
            &format!("PRAGMA foreign_keys = OFF; DELETE FROM {table} WHERE round_id = '{last}'"),
        )
        .await;
    }
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    let bad = v.first_bad.unwrap();
    assert_eq!(bad.round_id, last);
    assert!(bad.problem.contains("not stored"), "{}", bad.problem);
}

/// Stats serves its aggregates, not the records: an edit there (the house's result raised
/// by €1,000.00, a position's stakes, a row made up) leaves every record intact, and
/// Verify must still name it.
async fn verify_finds_an_edited_aggregate(db: TestDb) {
    let (store, _) = filled(&db, 10).await;
    let keys = trusted();
    let v = verify::verify(&store, &keys, "").await.unwrap();
    assert!(v.ok, "{:?}", v.first_bad);
    // Every signature was checked; without the tables' keys, none is, and it says so.
    assert_eq!(v.signatures_checked, v.records_checked);
    let unkeyed = banco_archive::ingest::TrustedKeys::new([]);
    let v = verify::verify(&store, &unkeyed, "").await.unwrap();
    assert!(
        v.ok && v.records_checked > 0 && v.signatures_checked == 0,
        "{v:?}"
    );
    // Unless the caller accepted unchecked signatures, that chain is not ok, and the
    // answer says how many records went unchecked; a signed one stays ok.
    let refused = verify::require_signatures(v.clone());
    let bad = refused.first_bad.as_ref().expect("a reason");
    assert!(!refused.ok, "{refused:?}");
    assert!(
        bad.problem.starts_with(&format!(
            "{} of {} records' table signatures were not checked",
            v.records_checked, v.records_checked
        )),
        "{}",
        bad.problem
    );
    let signed = verify::verify(&store, &keys, "").await.unwrap();
    assert!(verify::require_signatures(signed).ok);
    exec(
        &store,
        "UPDATE stats_totals SET house = house + 100000 WHERE scope = 'table'",
    )
    .await;
    for table in ["", "T01"] {
        let v = verify::verify(&store, &keys, table).await.unwrap();
        assert!(!v.ok, "{table:?}: {v:?}");
        assert!(v.records_checked >= 10, "every record checked first: {v:?}");
        let bad = v.first_bad.unwrap();
        assert_eq!(bad.round_id, "");
        assert!(
            bad.problem
                .starts_with("stats_totals (table T01, table T01) disagrees with the records: records say house: ")
                && bad.problem.contains("the row says house: "),
            "{}",
            bad.problem
        );
    }
    exec(
        &store,
        "UPDATE stats_totals SET house = house - 100000 WHERE scope = 'table'",
    )
    .await;
    assert!(verify::verify(&store, &keys, "").await.unwrap().ok);

    // Positions add up over every table: checked when every table is verified.
    exec(
        &store,
        "UPDATE stats_positions SET staked = staked + 1 WHERE scope = 'shoe' AND position = 'player'",
    )
    .await;
    let v = verify::verify(&store, &keys, "").await.unwrap();
    let problem = v.first_bad.unwrap().problem;
    assert!(
        problem.starts_with("stats_positions (shoe T01-S0001, position player) disagrees"),
        "{problem}"
    );
    exec(
        &store,
        "UPDATE stats_positions SET staked = staked - 1 WHERE scope = 'shoe' AND position = 'player'",
    )
    .await;

    // A row no record accounts for.
    exec(
        &store,
        "INSERT INTO stats_totals (id, scope, scope_key, table_id, rounds, voided, corrections,
            banker, player, tie, naturals, player_pairs, banker_pairs, house, run_winner,
            run_length, longest_banker, longest_player)
         VALUES ('made-up', 'day', '2020-01-01', 'T01', 1, 0, 0, 1, 0, 0, 0, 0, 0, 500,
            'banker', 1, 1, 0)",
    )
    .await;
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    let problem = v.first_bad.unwrap().problem;
    assert_eq!(
        problem,
        "stats_totals row (day 2020-01-01, table T01) counts rounds that no record has"
    );
}

/// AppendBatch: one bad signature refuses the whole batch and stores nothing; otherwise
/// each record gets its own answer, in order, and a table's records after a gap are gaps.
async fn append_batch_checks_all_then_answers_each(db: TestDb) {
    use std::sync::Arc;
    let store = open(&db).await;
    let keys = Arc::new(trusted());
    let sealed = seal(&play("T01", 40, 1_700_000_000_000));
    let records: Vec<pb::RoundRecord> = sealed.iter().map(record).collect();

    let mut forged = records[..30].to_vec();
    forged[17].signature[3] ^= 1;
    let e = banco_archive::ingest::append_batch(&store, &keys, forged)
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("records[17]") && text.contains(&records[17].round_id),
        "{text}"
    );
    assert!(matches!(
        tonic::Status::from(e).code(),
        tonic::Code::PermissionDenied
    ));
    assert!(
        matches!(
            query::get_round(&store, &records[0].round_id).await,
            Err(ArchiveError::NotFound(_))
        ),
        "nothing of the refused batch was stored"
    );

    // 0..10 stored; then a batch of 5..15 (5 duplicates, 5 new), then one that skips 20.
    let answers = banco_archive::ingest::append_batch(&store, &keys, records[..10].to_vec())
        .await
        .unwrap();
    assert!(answers.iter().all(|a| matches!(a, Appended::Stored { .. })));
    let answers = banco_archive::ingest::append_batch(&store, &keys, records[5..15].to_vec())
        .await
        .unwrap();
    assert!(
        answers[..5]
            .iter()
            .all(|a| matches!(a, Appended::Duplicate { .. }))
    );
    assert!(
        answers[5..]
            .iter()
            .all(|a| matches!(a, Appended::Stored { .. }))
    );
    let mut skipping = records[15..20].to_vec();
    skipping.extend_from_slice(&records[21..25]);
    let answers = banco_archive::ingest::append_batch(&store, &keys, skipping)
        .await
        .unwrap();
    assert!(
        answers[..5]
            .iter()
            .all(|a| matches!(a, Appended::Stored { .. }))
    );
    assert!(
        answers[5..]
            .iter()
            .all(|a| matches!(a, Appended::Gap { .. }))
    );
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    assert!(v.ok && v.records_checked == 20, "{v:?}");
}

/// Verify while a table's outbox catches up: every answer is ok, whatever number of the
/// rounds being appended it saw. The aggregates and the heads are read in one snapshot, so
/// rounds stored after it are neither walked nor counted against the aggregates (found by
/// CI on PostgreSQL: 5 records walked against a stats row already at 105).
async fn verify_during_appends_is_ok_at_every_point(db: TestDb) {
    use std::sync::Arc;
    let store = open(&db).await;
    let keys = Arc::new(trusted());
    let records: Vec<pb::RoundRecord> = seal(&play("T01", 60, 1_700_000_000_000))
        .iter()
        .map(record)
        .collect();
    banco_archive::ingest::append_batch(&store, &keys, records[..5].to_vec())
        .await
        .unwrap();
    let appending = {
        let (store, keys) = (store.clone(), Arc::clone(&keys));
        let rest = records[5..].to_vec();
        tokio::spawn(async move {
            for chunk in rest.chunks(2) {
                banco_archive::ingest::append_batch(&store, &keys, chunk.to_vec())
                    .await
                    .unwrap();
            }
        })
    };
    let mut seen = std::collections::BTreeSet::new();
    while !appending.is_finished() {
        for table in ["", "T01"] {
            let v = verify::verify(&store, &keys, table).await.unwrap();
            assert!(
                v.ok,
                "after {} records: {:?}",
                v.records_checked, v.first_bad
            );
            seen.insert(v.records_checked);
        }
    }
    appending.await.unwrap();
    let v = verify::verify(&store, &keys, "").await.unwrap();
    assert!(v.ok && v.records_checked == 60, "{v:?}");
    assert!(seen.len() > 1, "verified while appending: {seen:?}");
}

/// Checkpoints: PutCheckpoint keeps the newest of a table only if the chain holds its round
/// with its hash and the table's key signed it; Verify then finds a tail of rounds removed
/// under a checkpoint kept (the rounds deleted, the checkpoint not), and, against a head
/// the auditor brings, a tail removed with its checkpoint.
async fn a_removed_tail_is_found_against_a_checkpoint(db: TestDb) {
    use banco_archive::checkpoints;
    use banco_table::actor::TableSigner;

    let store = open(&db).await;
    let keys = trusted();
    let sealed = seal(&play("T01", 6, 1_700_000_000_000));
    for s in &sealed[..4] {
        append(&store, &keys, &record(s)).await.unwrap();
    }
    let signer = TableSigner::new(table_key());
    let at_6 = signer.checkpoint("T01", 6, &sealed[5].hash, 1_700_000_100_000);
    let at_4 = signer.checkpoint("T01", 4, &sealed[3].hash, 1_700_000_090_000);
    // Not in the chain (yet): refused. Another key, or another hash: refused.
    let refused = checkpoints::put(&store, &keys, &checkpoints::to_pb(&at_6))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ArchiveError::NotInChain(why) if why.contains("round 6 of table T01")),
        "{refused}"
    );
    let other = TableSigner::new(ed25519_dalek::SigningKey::from_bytes(&[8; 32]));
    let forged = other.checkpoint("T01", 4, &sealed[3].hash, 1_700_000_090_000);
    assert!(matches!(
        checkpoints::put(&store, &keys, &checkpoints::to_pb(&forged)).await,
        Err(ArchiveError::BadCheckpoint(_))
    ));
    let mut wrong = checkpoints::to_pb(&at_4);
    wrong.chain_seq = 3;
    assert!(checkpoints::put(&store, &keys, &wrong).await.is_err());
    assert!(
        checkpoints::put(&store, &keys, &checkpoints::to_pb(&at_4))
            .await
            .unwrap()
    );
    let v = verify::verify(&store, &keys, "T01").await.unwrap();
    assert!(v.ok, "{:?}", v.first_bad);
    assert_eq!(v.heads_checked.len(), 1);

    // Rounds 5 and 6 arrive, with their checkpoint; an older one no longer replaces it.
    for s in &sealed[4..] {
        append(&store, &keys, &record(s)).await.unwrap();
    }
    assert!(
        checkpoints::put(&store, &keys, &checkpoints::to_pb(&at_6))
            .await
            .unwrap()
    );
    assert!(
        !checkpoints::put(&store, &keys, &checkpoints::to_pb(&at_4))
            .await
            .unwrap()
    );
    assert!(verify::verify(&store, &keys, "T01").await.unwrap().ok);

    // The same archive without rounds 5 and 6, whoever removed them leaving the
    // checkpoint: every record left is intact, and Verify names the missing head.
    let tail_db = support::sqlite();
    let cut = open(&tail_db).await;
    for s in &sealed[..4] {
        append(&cut, &keys, &record(s)).await.unwrap();
    }
    let row = store.checkpoint("T01").await.unwrap().unwrap();
    assert!(cut.put_checkpoint(&row).await.unwrap());
    let v = verify::verify(&cut, &keys, "T01").await.unwrap();
    assert!(!v.ok);
    let problem = v.first_bad.unwrap().problem;
    assert!(
        problem.contains("the newest checkpoint the archive keeps (signed by the table, round 6"),
        "{problem}"
    );
    assert!(problem.contains("round 6 of table T01"), "{problem}");

    // Removed with the checkpoint too: the archive alone cannot tell; the table's head,
    // brought by the auditor, can.
    let bare_db = support::sqlite();
    let bare = open(&bare_db).await;
    for s in &sealed[..4] {
        append(&bare, &keys, &record(s)).await.unwrap();
    }
    assert!(verify::verify(&bare, &keys, "T01").await.unwrap().ok);
    let v = verify::verify_with_heads(&bare, &keys, "T01", std::slice::from_ref(&at_6))
        .await
        .unwrap();
    assert!(!v.ok);
    assert!(
        v.first_bad
            .unwrap()
            .problem
            .contains("the head given by the auditor"),
    );
    let v = verify::verify_with_heads(&bare, &keys, "T01", std::slice::from_ref(&at_4))
        .await
        .unwrap();
    assert!(v.ok, "{:?}", v.first_bad);
}

/// The golden records of format version 1 (`crates/records/tests/golden/v1`), as a table
/// of that version sealed them: every later archive stores them, derives the same rows,
/// verifies their chain and signatures, and takes their checkpoint.
async fn golden_records_of_version_1_are_stored_and_verify(db: TestDb) {
    use banco_archive::checkpoints;
    use banco_records::chain::{Checkpoint, SealedRound};

    let golden =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../records/tests/golden/v1");
    let key = banco_auth::keys::signing_key_from_seed(&[42; 32]).verifying_key();
    let keys = banco_archive::TrustedKeys::new([key]);
    let store = open(&db).await;
    let text = std::fs::read_to_string(golden.join("rounds.jsonl")).unwrap();
    for line in text.lines() {
        let sealed: SealedRound = serde_json::from_str(line).unwrap();
        let appended = append(&store, &keys, &record(&sealed)).await.unwrap();
        assert!(matches!(appended, Appended::Stored { .. }), "{appended:?}");
    }
    let checkpoint = Checkpoint::read(&golden.join("T01.checkpoint.json")).unwrap();
    assert!(
        checkpoints::put(&store, &keys, &checkpoints::to_pb(&checkpoint))
            .await
            .unwrap()
    );
    let v = verify::verify(&store, &keys, "").await.unwrap();
    assert!(v.ok, "{:?}", v.first_bad);
    assert_eq!(v.records_checked, text.lines().count() as u64);
    assert_eq!(v.signatures_checked, v.records_checked);
    let voided = query::get_round(&store, "T01-S0001-H003").await.unwrap();
    assert!(voided.voided);
    let report = query::shoe_report(&store, "T02-S0001").await.unwrap();
    assert_eq!(report.commitment.len(), 64);
    assert_eq!(report.shuffle_key.len(), 64);
}

banco_testdb::both_backends!(
    file = "archive.db";
    append_batch_checks_all_then_answers_each,
    verify_finds_a_forged_export,
    verify_finds_an_edited_aggregate,
    migrations_carry_stored_rounds_over,
    append_and_every_refusal,
    get_round_is_derived_from_the_record,
    list_rounds_filters_and_pages,
    export_jsonl_replays_and_csv_has_a_row_per_bet,
    verify_finds_an_edit_and_a_deletion,
    stats_shoe_report_and_player_bets,
    a_removed_tail_is_found_against_a_checkpoint,
    golden_records_of_version_1_are_stored_and_verify,
    verify_during_appends_is_ok_at_every_point
);
