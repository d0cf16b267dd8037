//! `banco player` as a player runs it: a separate process against a real validator and
//! broadcaster on loopback, a round driven by `banco croupier`, and the output and exit
//! code of each command checked: the lobby, bets (accepted, raised, refused over the
//! limit, and a bad amount refused before anything is sent), balance, clear, rebet, and
//! the live event feed.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Output, Stdio};

use banco_e2e::banco;
use banco_e2e::procs::{BroadcasterSetup, Keys, Service, croupier_cli, start_validator};

/// 1,000.00 credited to each player on its first bet.
const WELCOME: i64 = 100_000;

struct Table {
    _dir: tempfile::TempDir,
    _validator: Service,
    _broadcaster: Service,
    url: String,
    croupier_token: PathBuf,
    dir: PathBuf,
    keys: Keys,
}

impl Table {
    /// Validator and broadcaster (live pacing, welcome credit), a shoe opened and burned.
    fn start() -> Table {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_owned();
        let keys = Keys::generate(&path.join("keys"));
        let validator = start_validator(&keys);
        let mut setup = BroadcasterSetup::new(&keys, &validator, &path.join("data"));
        setup.welcome_credit = WELCOME;
        let broadcaster = setup.start();
        let croupier_token = path.join("croupier.token");
        std::fs::write(&croupier_token, keys.issue("croupier", "ada", "1h")).unwrap();
        let table = Table {
            url: broadcaster.url(),
            _dir: dir,
            _validator: validator,
            _broadcaster: broadcaster,
            croupier_token,
            dir: path,
            keys,
        };
        table.croupier(&["open-shoe"]);
        table.croupier(&["burn", "2C"]);
        table
    }

    /// `banco croupier …`, which must succeed; its stdout.
    fn croupier(&self, args: &[&str]) -> String {
        croupier_cli(&self.url, &self.croupier_token, args)
    }

    /// Opens betting (at a live table, until the croupier closes it); the round.
    fn open_betting(&self) -> String {
        let state = self.croupier(&["open-betting"]);
        state
            .lines()
            .find_map(|l| l.strip_prefix("round "))
            .unwrap_or_else(|| panic!("no round in {state}"))
            .trim()
            .to_owned()
    }

    /// Closes betting and deals a Player natural: Player 9S KD (9), Banker 2H 3C (5).
    fn deal_player_natural(&self) {
        self.croupier(&["close-betting"]);
        for card in ["9S", "2H", "KD", "3C"] {
            self.croupier(&["deal", card]);
        }
        self.croupier(&["confirm"]);
    }

    fn player_token(&self, name: &str) -> PathBuf {
        let path = self.dir.join(format!("{name}.token"));
        if !path.exists() {
            std::fs::write(&path, self.keys.issue("player", name, "1h")).unwrap();
        }
        path
    }

    /// `banco player --token-file <name's> …`.
    fn player(&self, name: &str, args: &[&str]) -> Run {
        let out = banco()
            .args(["player", "--server", &self.url, "--token-file"])
            .arg(self.player_token(name))
            .args(args)
            .output()
            .unwrap();
        Run::from(&out, args)
    }
}

/// A finished `banco player` run.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn from(out: &Output, args: &[&str]) -> Run {
        let run = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        eprintln!(
            "$ banco player {}\n{}{}",
            args.join(" "),
            run.stdout,
            run.stderr
        );
        run
    }

    fn ok(self) -> Run {
        assert_eq!(self.code, Some(0), "{self:?}");
        self
    }

    fn has(&self, needle: &str) -> &Run {
        assert!(
            self.stdout.contains(needle),
            "`{needle}` not in stdout:\n{}\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

fn balance(table: &Table, name: &str) -> String {
    let run = table.player(name, &["balance"]).ok();
    run.stdout.trim().to_owned()
}

#[test]
fn lobby_bets_refusals_clear_and_rebet() {
    let table = Table::start();
    let round = table.open_betting();
    assert_eq!(round, "T01-S0001-H001");

    let lobby = table.player("alice", &["tables"]).ok();
    lobby
        .has("table T01")
        .has("live, betting open, 8 decks, seats unlimited")
        .has("limits (EUR): player 5.00-102.00, banker 5.00-102.00")
        .has("paytable standard: player 1:1, banker 0.95:1, tie 8:1")
        .has("last results: none yet");

    // Before a first bet the balance already holds the welcome credit that is due.
    assert_eq!(balance(&table, "alice"), "balance 1000.00 EUR");

    // Accepted, one of them raised to the position's minimum.
    let bet = table
        .player(
            "alice",
            &["bet", "--round", &round, "player=25", "tie=2.50"],
        )
        .ok();
    bet.has(&format!("round {round}"))
        .has("accepted player 25.00; on player in all: 25.00")
        .has("accepted tie 5.00 (asked 2.50, raised to the minimum)")
        .has("balance 970.00 EUR (30.00 in play)");
    assert_eq!(
        balance(&table, "alice"),
        "balance 970.00 EUR (30.00 in play)"
    );

    // A bad amount is refused before anything is sent: exit 2, the argument named.
    let bad = table.player("alice", &["bet", "--round", &round, "player=2.555"]);
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(bad.stderr.contains("`player=2.555`"), "{bad:?}");
    assert!(bad.stderr.contains("2 decimals"), "{bad:?}");
    for args in [
        &["bet", "--round", &round, "dragon=5"][..],
        &["bet", "--round", &round, "banker=-5"][..],
    ] {
        let bad = table.player("alice", args);
        assert_eq!(bad.code, Some(2), "{bad:?}");
        assert!(bad.stderr.contains(args[3]), "{bad:?}");
    }
    assert_eq!(
        balance(&table, "alice"),
        "balance 970.00 EUR (30.00 in play)"
    );

    // Over the maximum: the table refuses it, naming the reason; exit 1; nothing changes.
    let over = table.player("alice", &["bet", "--round", &round, "banker=500"]);
    assert_eq!(over.code, Some(1), "{over:?}");
    over.has("refused: REFUSED: AboveMaximum")
        .has("balance 970.00 EUR (30.00 in play)");

    // Clear takes every bet back.
    let clear = table.player("alice", &["clear", "--round", &round]).ok();
    clear
        .has("cleared player 25.00")
        .has("cleared tie 5.00")
        .has("balance 1000.00 EUR");
    assert_eq!(balance(&table, "alice"), "balance 1000.00 EUR");

    // A bet for a round that is not open is refused by the table.
    let wrong = table.player("alice", &["bet", "--round", "T01-S0001-H002", "banker=20"]);
    assert_eq!(wrong.code, Some(1), "{wrong:?}");
    wrong.has("refused: REFUSED:");

    // Banker 20, and the round goes to Player: the stake is lost.
    table
        .player("alice", &["bet", "--round", &round, "banker=20"])
        .ok()
        .has("balance 980.00 EUR (20.00 in play)");
    table.deal_player_natural();
    assert_eq!(balance(&table, "alice"), "balance 980.00 EUR");
    table
        .player("alice", &["tables"])
        .ok()
        .has("last results: P");

    // Rebet repeats the previous round's bets on the next round.
    let next = table.open_betting();
    assert_eq!(next, "T01-S0001-H002");
    let rebet = table.player("alice", &["rebet", "--round", &next]).ok();
    rebet
        .has(&format!("round {next} (rebet)"))
        .has("accepted banker 20.00")
        .has("balance 960.00 EUR (20.00 in play)");
    // A player who never bet has nothing to rebet.
    let nothing = table.player("bob", &["rebet", "--round", &next]);
    assert_ne!(nothing.code, Some(0), "{nothing:?}");

    // Without --round the client asks the table (Subscribe's snapshot) which round is
    // open; a broadcaster without Subscribe gets a clear request for --round instead.
    let auto = table.player("alice", &["bet", "player=5"]);
    match auto.code {
        Some(0) => {
            auto.has(&format!("round {next}"));
        }
        _ => assert!(auto.stderr.contains("--round"), "{auto:?}"),
    }
}

#[test]
fn watch_prints_a_round_as_it_happens() {
    let table = Table::start();
    let token = table.player_token("carol");
    let mut watch = banco()
        .args(["player", "--server", &table.url, "--token-file"])
        .arg(&token)
        .args(["watch", "--once", "--until-rounds", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // The subscription is live once its snapshot is printed.
    let first = lines.next().map(Result::unwrap);
    let Some(first) = first else {
        let out = watch.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        panic!("watch printed nothing: {stderr}");
    };
    assert!(first.contains("snapshot:"), "{first}");
    let round = table.open_betting();
    table
        .player("carol", &["bet", "--round", &round, "banker=10"])
        .ok();
    table.deal_player_natural();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = watch.wait().unwrap();
    assert!(status.success(), "{rest:?}");
    let text = rest.join("\n");
    eprintln!("{first}\n{text}");
    for needle in [
        &format!("  {round}  betting open until the croupier closes it")[..],
        "card 9S to Player (Player 9, Banker 0); next: Banker",
        "card 3C to Banker (Player 9, Banker 5); next: nothing, the hand is complete",
        "result Player wins, Player 9 – Banker 5 (natural)",
    ] {
        assert!(text.contains(needle), "`{needle}` not in:\n{text}");
    }
    // Once the hand is complete and settled, nothing claims a next card it cannot name.
    assert!(!text.contains("next: ?"), "{text}");
    // Every line is new: seqs are never shown twice (checked in JSON below), and the
    // private events are the caller's own.
    assert!(!text.contains("alice"), "{text}");
    let json = table.player("carol", &["watch", "--once", "--json", "--max-events", "1"]);
    if json.code == Some(0) {
        let value: serde_json::Value = serde_json::from_str(json.stdout.trim()).unwrap();
        assert_eq!(value["event"], "snapshot");
        assert!(value["seq"].as_u64().is_some());
    }
}
