//! The `banco` command as an auditor or operator runs it: a separate process, stdin and
//! stdout, exit codes.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::process::{Output, Stdio};

use banco_e2e::banco;
use serde_json::Value;

fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = banco()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn judge_replays_hands_and_names_the_bad_lines() {
    let input = concat!(
        "{\"cards\": [\"QC\",\"8D\",\"4C\",\"TH\"]}\n",
        "{\"cards\": [\"6h\",\"2♥\",\"5S\",\"10d\",\"8s\",\"7C\"]}\n",
        "{\"cards\": [\"QC\",\"8D\",\"4C\",\"TH\",\"KH\"]}\n",
        "{\"cards\": [\"QC\",\"8D\",\"4C\"]}\n",
        "{\"cards\": [\"QC\",\"1H\",\"4C\",\"TH\"]}\n",
        "not json\n",
        "{\"cards\": [\"9S\",\"KD\",\"9H\",\"KD\"]}\n",
    );
    let out = run(&["rules", "judge"], input);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed line makes the exit status 1"
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 7, "one line out per line in");

    let first = &lines[0];
    assert_eq!(first["player"], serde_json::json!(["QC", "4C"]));
    assert_eq!(first["banker"], serde_json::json!(["8D", "TH"]));
    assert_eq!(first["player_total"], 4);
    assert_eq!(first["banker_total"], 8);
    assert_eq!(first["winner"], "banker");
    assert_eq!(first["natural"], true);
    assert_eq!(first["cards_dealt"], 4);

    // 6+5 = 1 draws 8 → 9; Banker 2+0 = 2 draws anything: 7 → 9. A tie with six cards.
    let second = &lines[1];
    assert_eq!(second["player"], serde_json::json!(["6H", "5S", "8S"]));
    assert_eq!(second["banker"], serde_json::json!(["2H", "TD", "7C"]));
    assert_eq!(second["winner"], "tie");
    assert_eq!(second["cards_dealt"], 6);

    for (index, needle) in [(2, "KH"), (3, "incomplete"), (4, "1H"), (5, "JSON")] {
        let line = &lines[index];
        assert_eq!(line["line"], index + 1, "{line}");
        let error = line["error"].as_str().unwrap();
        assert!(error.contains(needle), "line {}: {error}", index + 1);
    }

    let last = &lines[6];
    // Dealt P B P B: Player 9S 9H (a pair of nines, suits differ), Banker KD KD.
    assert_eq!(last["player"], serde_json::json!(["9S", "9H"]));
    assert_eq!(last["player_pair"], true);
    assert_eq!(last["banker_pair"], true);
    assert_eq!(last["perfect_pair"], true, "KD KD is a perfect pair");
    assert_eq!(last["winner"], "player", "a natural 8 beats 0");
}

#[test]
fn judge_exits_zero_when_every_line_is_a_legal_hand() {
    let out = run(
        &["rules", "judge"],
        "{\"cards\":[\"AS\",\"2S\",\"3S\",\"4S\",\"5S\"]}\n\n",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_lines(&out).len(), 1, "blank lines are skipped");
}

#[test]
fn odds_json_reproduces_the_published_eight_deck_figures() {
    let out = run(&["odds", "--decks", "8", "--json"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &report["probabilities"];
    for (key, expected) in [
        ("banker", 0.458597),
        ("player", 0.446247),
        ("tie", 0.095156),
    ] {
        let got = p[key].as_f64().unwrap();
        assert!((got - expected).abs() < 5e-7, "{key}: {got}");
    }
    let keys = [
        "banker",
        "player",
        "tie",
        "player_pair",
        "banker_pair",
        "either_pair",
        "perfect_pair",
        "big",
        "small",
    ];
    for key in keys {
        assert!(p[key].is_f64(), "probabilities.{key}");
        let rtp = report["rtp"][key].as_f64().unwrap();
        assert!((0.5..1.0).contains(&rtp), "rtp.{key} = {rtp}");
    }
}

#[test]
fn odds_refuses_a_card_the_shoe_no_longer_holds() {
    let out = run(&["odds", "--decks", "1", "--remove", "AS,AS"], "");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("AS"), "{stderr}");
}

#[test]
fn roads_json_from_stdin() {
    let out = run(&["roads", "--json"], "B B P\nT P B\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let roads: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        roads["big_road"],
        serde_json::json!([
            [{"side": "B", "ties": 0}, {"side": "B", "ties": 0}],
            [{"side": "P", "ties": 1}, {"side": "P", "ties": 0}],
            [{"side": "B", "ties": 0}],
        ])
    );
    // Big Eye Boy starts at the second column's second entry (the second P): the column
    // before it (B B) reaches that row → red. The last B opens a new column: the two
    // columns before it are both 2 deep → red.
    assert_eq!(roads["big_eye_boy"], serde_json::json!(["R", "R"]));
    assert_eq!(roads["small_road"], serde_json::json!([]));
}

#[test]
fn roads_refuses_a_letter_that_is_not_a_result() {
    let out = run(&["roads", "BPX"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains('X'));
}

#[test]
fn demo_replays_the_same_shoe_for_the_same_seed() {
    let demo = || {
        banco_e2e::banco_sim()
            .args(["demo", "rules", "--seed", "11"])
            .output()
            .unwrap()
    };
    let (a, b) = (demo(), demo());
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    assert!(String::from_utf8_lossy(&a.stdout).contains("shoe ended after"));
}

/// The demo's children are told to stop with it by their environment; a value that is not
/// a process id, or names a parent already gone, stops the command before it does
/// anything, saying so.
#[test]
fn stop_with_parent_refuses_a_bad_pid_or_a_parent_already_gone() {
    let with = |value: &str| {
        banco()
            .arg("--version")
            .env("BANCO_STOP_WITH_PARENT", value)
            .output()
            .unwrap()
    };
    let out = with("soon");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("BANCO_STOP_WITH_PARENT=\"soon\": not a process id"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    // This test is the parent, not process 1.
    let out = with("1");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("process 1, has already exited"), "{stderr}");
    // Its real parent: it runs.
    let out = with(&std::process::id().to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// What each client exits with, against a real validator and broadcaster: 1 when the
/// table refuses, 2 for bad input (refused before anything is sent), 3 when the server
/// cannot be reached; and README's by-hand flow (bets while betting is open, then close,
/// then deal) works in its order.
#[test]
fn exit_codes_say_refused_bad_input_or_unreachable() {
    use banco_e2e::procs::{BroadcasterSetup, Keys, start_validator};

    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = 100_000;
    let broadcaster = setup.start();
    let url = broadcaster.url();
    let token = |role: &str, sub: &str| {
        let path = dir.path().join(format!("{sub}.token"));
        std::fs::write(&path, keys.issue(role, sub, "1h")).unwrap();
        path.display().to_string()
    };
    let croupier_token = token("croupier", "maria");
    let alice = token("player", "alice");
    let auditor = token("auditor", "regulator");
    // A port nothing listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let exits = |args: &[&str], code: i32, says: &str| {
        let out = run(args, "");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(
            out.status.code(),
            Some(code),
            "banco {args:?}\nstdout: {stdout}\nstderr: {stderr}"
        );
        assert!(
            stdout.contains(says) || stderr.contains(says),
            "banco {args:?}: `{says}` in neither\nstdout: {stdout}\nstderr: {stderr}"
        );
    };
    let croupier = |args: &[&str]| {
        let mut all = vec![
            "croupier",
            "--server",
            &url,
            "--token-file",
            &croupier_token,
        ];
        all.extend_from_slice(args);
        all.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let player = |server: &str, args: &[&str]| {
        let mut all = vec!["player", "--server", server, "--token-file", &alice];
        all.extend_from_slice(args);
        all.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };

    // The table refuses: 1.
    exits(&strs(&croupier(&["deal", "9S"])), 1, "REFUSED:");
    exits(
        &strs(&player(&url, &["bet", "banker=25"])),
        1,
        "betting is not open",
    );
    // Bad input, nothing sent: 2.
    exits(&strs(&croupier(&["deal", "9X"])), 2, "`9X` is not a card");
    exits(
        &strs(&player(&url, &["bet", "banker=2.555"])),
        2,
        "2 decimals",
    );
    exits(
        &["croupier", "--token-file", &croupier_token, "dance"],
        2,
        "unrecognized subcommand",
    );
    // Nobody there: 3.
    let mut unreachable = vec![
        "croupier",
        "--server",
        &closed,
        "--token-file",
        &croupier_token,
    ];
    unreachable.push("state");
    exits(&unreachable, 3, "could not connect");
    exits(&strs(&player(&closed, &["balance"])), 3, "Unavailable");
    exits(
        &[
            "audit",
            "--server",
            &closed,
            "--token-file",
            &auditor,
            "verify",
        ],
        3,
        "could not connect",
    );

    // Before any bet, the balance holds the welcome credit that is due.
    exits(&strs(&player(&url, &["balance"])), 0, "balance 1000.00 EUR");

    // README's flow, in its order: the shoe, betting open, the bets, then close and deal.
    for step in [&["open-shoe"][..], &["burn", "7H"], &["open-betting"]] {
        exits(&strs(&croupier(step)), 0, "table T01");
    }
    exits(
        &strs(&player(&url, &["bet", "banker=25", "tie=5"])),
        0,
        "accepted banker",
    );
    exits(
        &strs(&croupier(&["close-betting"])),
        0,
        "phase betting closed",
    );
    exits(&strs(&croupier(&["deal", "QC"])), 0, "due: a Banker card");
    exits(
        &strs(&croupier(&["state"])),
        0,
        "bets: banker €25.00 (1 bettor), tie €5.00 (1 bettor)",
    );
}
