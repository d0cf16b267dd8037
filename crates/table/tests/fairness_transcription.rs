//! The construction of provably fair shoes, transcribed independently: the Python of
//! `docs/fairness/reshuffle.py` (ChaCha20, Lemire and Fisher–Yates written out from their
//! descriptions, nothing imported but hashlib) must deal, card for card, the order
//! `banco_table::fairness` deals, and hash to the same commitment, for several keys and
//! shoe sizes. What a player outside banco runs is then what banco runs.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use banco_rules::shoe::ShoeConfig;
use banco_table::fairness::ShuffleKey;

fn python(key: &ShuffleKey, decks: u8, table: &str, shoe: u32) -> (String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fairness/reshuffle.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(key.to_hex())
        .arg(decks.to_string())
        .arg(table)
        .arg(shoe.to_string())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 {} (Debian's python3 is needed): {e}",
                script.display()
            )
        });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    (
        lines.next().unwrap().to_owned(),
        lines.next().unwrap().to_owned(),
    )
}

#[test]
fn the_python_transcription_deals_and_commits_as_banco_does() {
    let keys = [
        [0u8; 32],
        [0xff; 32],
        std::array::from_fn(|i| u8::try_from(i * 7 % 256).unwrap()),
        std::array::from_fn(|i| u8::try_from(255 - i).unwrap()),
    ];
    for (n, bytes) in keys.into_iter().enumerate() {
        let key = ShuffleKey::new(bytes);
        for decks in [1, 6, 8] {
            let config = ShoeConfig {
                decks,
                ..ShoeConfig::default()
            };
            let ours: Vec<String> = key
                .order(config)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect();
            let shoe = u32::try_from(n + 1).unwrap();
            let (order, commitment) = python(&key, decks, "T07", shoe);
            assert_eq!(order, ours.join(" "), "key {n}, {decks} decks");
            assert_eq!(commitment, key.commitment("T07", shoe), "key {n}");
        }
    }
}
