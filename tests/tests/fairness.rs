//! Issue 18's provably fair automated shoes on real processes: an automated one-deck
//! table plays its first shoe to the end, delivering its signed rounds to the archive;
//! `banco audit fairness` re-deals the shoe from the key revealed in the archive and
//! finds every card where the key's order has it. Then one card of a stored record is
//! changed in the archive's database (re-packed as the archive stores it): fairness names
//! that round and card and exits 1 (and Verify, on its own, finds the record broken).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use banco_archive::packed;
use banco_e2e::archive::{Auditor, sqlite3};
use banco_e2e::procs::{BroadcasterSetup, Keys, SignedArchive, start_archive, start_validator};
use banco_e2e::{output_text, poll_blocking};

const SHOE: &str = "T01-S0001";

#[test]
fn an_automated_shoe_checks_against_its_key_and_a_changed_card_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let db = dir.path().join("archive.db");
    let db_url = format!("sqlite://{}", db.display());
    let mut archive = SignedArchive::start(&keys, &db_url, dir.path());
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.decks = 1;
    setup.betting_seconds = Some(1);
    setup.archive_url = Some(archive.service.url());
    setup.table_key = Some(archive.table_keys.signing_key());
    setup
        .extra_args
        .extend(["--pacing", "automated", "--no-clips"].map(str::to_owned));
    let mut broadcaster = setup.start();
    let auditor = Auditor::new(&keys, &archive.service.url(), dir.path());

    // About six rounds of six seconds (betting, then the draw delay) until the shoe ends
    // and the round that ends it reaches the archive with the key.
    let fair = poll_blocking(
        Duration::from_secs(180),
        Duration::from_secs(2),
        || auditor.run(&["fairness", SHOE]),
        |out| out.status.success(),
    );
    let text = output_text(&fair);
    eprintln!("{text}");
    assert!(fair.status.success(), "{text}");
    assert!(
        text.contains("FAIR: the key is the one committed to"),
        "{text}"
    );
    let shoe = auditor.ok(&["shoe", SHOE]);
    let cards: u64 = shoe
        .lines()
        .next()
        .and_then(|l| l.split("cards ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{shoe}"));
    assert!(
        text.contains(&format!("all {} cards out", cards + 1)),
        "the burn card and the {cards} dealt: {text}"
    );
    broadcaster.kill();

    // One card of the shoe's second round changed in the stored record.
    let round = format!("{SHOE}-H002");
    archive.service.kill();
    let stored = sqlite3(
        &db,
        &format!("SELECT hex(table_record) FROM round_records WHERE round_id = '{round}'"),
    );
    let bytes: Vec<u8> = (0..stored.trim().len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&stored.trim()[i..i + 2], 16).unwrap())
        .collect();
    let mut record: serde_json::Value =
        serde_json::from_slice(&packed::unpack(&bytes, "record").unwrap()).unwrap();
    let first = record["cards"][0]["card"].as_str().unwrap().to_owned();
    let forged = if first == "AS" { "2S" } else { "AS" };
    record["cards"][0]["card"] = forged.into();
    let repacked = packed::pack(&serde_json::to_vec(&record).unwrap());
    let hex: String = repacked.iter().map(|b| format!("{b:02X}")).collect();
    sqlite3(
        &db,
        &format!("UPDATE round_records SET table_record = X'{hex}' WHERE round_id = '{round}'"),
    );
    let _archive = start_archive(
        &keys,
        &db_url,
        "127.0.0.1:0",
        Some(&archive.table_keys.public_key()),
    );
    let auditor = Auditor::new(&keys, &_archive.url(), dir.path());
    let unfair = auditor.run(&["fairness", SHOE]);
    let text = output_text(&unfair);
    eprintln!("{text}");
    assert_eq!(unfair.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "NOT FAIR: round {round}, card 1: the key's order has {first}, the record says {forged}"
        )),
        "{text}"
    );
    let verify = auditor.run(&["verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", output_text(&verify));
}
