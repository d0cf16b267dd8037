//! Issue 8, end to end: a whole shoe played through every part, each in its own process on
//! loopback. The validator; the archive on SQLite; the broadcaster (live pacing, betting
//! closing itself after a second, a welcome credit, rounds signed and sent to the archive);
//! the camera (`banco stream`, test pattern) when GStreamer's plugins are installed (the
//! video part is skipped with a note, not failed, when they are not); 20 `banco-sim bots`; and
//! a croupier driving TableService card by card from a seeded shuffled shoe until the shoe
//! ends by itself after the cut card.
//!
//! Then: `banco audit verify` passes over every round; every bot's balance as PlayerService
//! tells it equals the table ledger's (the broadcaster's journal replayed into a table of
//! its own after the broadcaster stopped) and equals the welcome credit plus the payouts
//! less the stakes the archive's export holds for it; the exported shoe replays through
//! `banco rules judge` with every hand agreeing; video reached a viewer and round clips
//! reached the archive.
//!
//! The shoe is a FULL 8-deck shoe, played to its end: no smaller deck count was needed.
//! Measured on the 2-core machine in a debug build (the headless demo test running beside
//! it): 81 rounds in 94 s (1.16 s a round: 1 s of betting, then the cards), 97 s in all;
//! the test prints its figures each run.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use banco_e2e::archive::{Auditor, Verified, judge};
use banco_e2e::clients::{Croupier, play_the_shoe, player_client, settled_balance};
use banco_e2e::procs::{BroadcasterSetup, Keys, Service, channel, start_archive, start_validator};
use banco_e2e::{banco, banco_sim, poll_blocking};
use banco_rules::Card;
use banco_rules::shoe::{Shoe, ShoeConfig};
use banco_streaming::has_element;
use banco_table::journal::Journal;
use banco_table::{ActorConfig, Clock, JournaledConfig, LocalRules, MemorySink};
use banco_wire::pb;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use serde_json::Value;

const DECKS: u8 = 8;
const BOTS: usize = 20;
const WELCOME: i64 = 100_000;
const SEED: u64 = 2026;
const TABLE: &str = "T01";

/// The first GStreamer element `banco stream` needs that is not installed.
fn missing_video_element() -> Option<&'static str> {
    [
        "videotestsrc",
        "textoverlay",
        "videoconvert",
        "x264enc",
        "h264parse",
        "mp4mux",
    ]
    .into_iter()
    .find(|e| !has_element(e))
}

/// A child process that is interrupted (SIGINT) and reaped when dropped.
struct Proc(Child);

impl Proc {
    fn interrupt(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    fn is_running(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Each bot's net with the table (returns less stakes) in the broadcaster's journal,
/// replayed (after the broadcaster stopped) into a table of its own from a copy, under the
/// configuration journaled first.
async fn ledger_nets(table_dir: &Path, players: &[String]) -> BTreeMap<String, i64> {
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(table_dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
    }
    let journal = copy.path().join(format!("{TABLE}.journal"));
    let (_, records) = Journal::open(&journal).unwrap();
    let first: JournaledConfig = serde_json::from_slice(&records[0].payload).unwrap();
    let table = banco_table::TableConfig::try_from(&first.table).unwrap();
    let mut config = ActorConfig::in_dir(table, copy.path());
    config.default_shoe = first.default_shoe;
    let (table, task) = banco_table::spawn(
        config,
        Arc::new(LocalRules),
        Arc::new(MemorySink::new()),
        Clock::system(),
    )
    .await
    .unwrap();
    let books = table.books().await.unwrap();
    assert_eq!(books.check, Ok(()), "the ledger balances");
    assert_eq!(books.in_play, 0, "no stake left in play after the shoe");
    let nets = players
        .iter()
        .map(|player| (player.clone(), books.nets.get(player).copied().unwrap_or(0)))
        .collect();
    task.shutdown().await;
    nets
}

/// Every bot's payouts less stakes, from the export's bets.
fn archived_net(lines: &[Value]) -> BTreeMap<String, i64> {
    let mut net = BTreeMap::new();
    for line in lines {
        for bet in line["bets"].as_array().unwrap() {
            let player = bet["player_id"].as_str().unwrap().to_owned();
            let change = bet["returned_minor"].as_i64().unwrap()
                + bet["refunded_minor"].as_i64().unwrap()
                - bet["stake_minor"].as_i64().unwrap();
            *net.entry(player).or_insert(0) += change;
        }
    }
    net
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_shoe_through_every_part() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let table_keys = Keys::generate(&dir.path().join("table-key"));
    let validator = start_validator(&keys);
    let db = dir.path().join("archive.db");
    let archive = start_archive(
        &keys,
        &format!("sqlite://{}", db.display()),
        "127.0.0.1:0",
        Some(&table_keys.public_key()),
    );
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.archive_url = Some(archive.url());
    setup.table_key = Some(table_keys.signing_key());
    setup.welcome_credit = WELCOME;
    setup.decks = DECKS;
    setup.betting_seconds = Some(1);
    let mut broadcaster: Service = setup.start();
    let url = broadcaster.url();

    let missing = missing_video_element();
    let camera = match missing {
        Some(element) => {
            banco_testkit::skipped(
                "the video part of the full shoe",
                &format!("GStreamer element {element} is not installed"),
            );
            None
        }
        None => {
            let token = dir.path().join("camera.token");
            std::fs::write(&token, keys.issue("service", "camera-T01", "1h")).unwrap();
            let child = banco()
                .args(["stream", "--table", TABLE, "--server", &url, "--token-file"])
                .arg(&token)
                .args(["--width", "320", "--height", "240", "--fps", "25"])
                .args(["--bitrate-kbps", "400", "--keyframe-interval", "25"])
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            Some(Proc(child))
        }
    };
    // A viewer counts the video units it receives while the shoe is played.
    let units = Arc::new(AtomicU64::new(0));
    let viewer = {
        let token = keys.issue_at(
            banco_auth::Role::Player,
            "viewer",
            Duration::from_secs(3600),
            SystemTime::now(),
        );
        let mut client = player_client(channel(&url).await, &token);
        let units = Arc::clone(&units);
        tokio::spawn(async move {
            loop {
                let request = pb::WatchVideoRequest {
                    table_id: TABLE.to_owned(),
                };
                if let Ok(stream) = client.watch_video(request).await {
                    let mut stream = stream.into_inner();
                    while let Ok(Some(_)) = stream.message().await {
                        units.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };

    let mut bots = Proc(
        banco_sim()
            .args(["bots", "--server", &url, "--table", TABLE, "--signing-key"])
            .arg(keys.signing_key())
            .args(["--players", &BOTS.to_string(), "--seed", "7"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );

    let token = keys.issue("croupier", "maria", "1h");
    let mut croupier = Croupier::new(channel(&url).await, &token, TABLE, "full-shoe");
    let mut rng = ChaCha20Rng::seed_from_u64(SEED);
    let config = ShoeConfig {
        decks: DECKS,
        ..ShoeConfig::default()
    };
    let order = Shoe::shuffled(config, &mut rng).unwrap().order().to_vec();
    let set_up = started.elapsed();
    let shoe_started = Instant::now();
    let played = play_the_shoe(&mut croupier, &order).await;
    let shoe_time = shoe_started.elapsed();
    println!(
        "full shoe: {} rounds of a {DECKS}-deck shoe in {:.1} s ({:.2} s per round; set-up {:.1} s)",
        played.len(),
        shoe_time.as_secs_f64(),
        shoe_time.as_secs_f64() / played.len() as f64,
        set_up.as_secs_f64()
    );
    assert!(
        played.len() >= 50,
        "an 8-deck shoe holds about 80 hands: {}",
        played.len()
    );
    assert!(bots.is_running(), "the bots played the whole shoe");
    bots.interrupt();
    viewer.abort();
    let camera_running = camera.map(|mut c| {
        let running = c.is_running();
        c.interrupt();
        running
    });

    // Every round archived, and the chain verifies.
    let auditor = Auditor::new(&keys, &archive.url(), dir.path());
    let (verified, waited) = auditor.wait_verified(played.len() as u64, Duration::from_secs(60));
    match &verified {
        Verified::Ok { records, .. } => assert_eq!(*records, played.len() as u64, "{verified:?}"),
        other => panic!("banco audit verify: {other:?}"),
    }
    println!(
        "archive: {} rounds verified ({:.1} s after the last result)",
        played.len(),
        waited.as_secs_f64()
    );

    // The export holds exactly the rounds played, with their cards.
    let export = auditor.ok(&["export", "--format", "jsonl"]);
    let lines: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), played.len(), "one exported line per round");
    for (line, dealt) in lines.iter().zip(&played) {
        assert_eq!(line["round_id"].as_str().unwrap(), dealt.round_id);
        let cards: Vec<String> = dealt.cards.iter().map(Card::to_string).collect();
        let exported: Vec<&str> = line["cards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(exported, cards, "{}: the cards dealt", dealt.round_id);
        assert!(!line["voided"].as_bool().unwrap(), "{}", dealt.round_id);
    }

    // The shoe replays through the rules: every hand agrees with the archive.
    let (code, judged) = judge(export.as_bytes());
    assert_eq!(code, Some(0), "banco rules judge accepts every hand");
    assert_eq!(judged.len(), lines.len());
    for (out, line) in judged.iter().zip(&lines) {
        let out: Value = serde_json::from_str(out).unwrap();
        for field in ["winner", "player_total", "banker_total", "natural"] {
            assert_eq!(
                out[field], line[field],
                "{}: {field}, judge vs the archive",
                line["round_id"]
            );
        }
    }

    // Every bot's balance: PlayerService, the archive, then the ledger.
    let net = archived_net(&lines);
    let bets: usize = lines
        .iter()
        .map(|l| l["bets"].as_array().unwrap().len())
        .sum();
    assert!(
        net.len() >= BOTS / 2,
        "most bots bet: {} of {BOTS}",
        net.len()
    );
    let names: Vec<String> = (1..=BOTS).map(|i| format!("bot-{i:03}")).collect();
    let mut told = BTreeMap::new();
    for name in &names {
        let token = keys.issue_at(
            banco_auth::Role::Player,
            name,
            Duration::from_secs(3600),
            SystemTime::now(),
        );
        let mut player = player_client(channel(&url).await, &token);
        let available = settled_balance(&mut player).await;
        let balance = player
            .get_balance(pb::GetBalanceRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(balance.in_play_minor, 0, "{name}: nothing in play");
        told.insert(name.clone(), available);
    }
    for name in &names {
        let balance = told[name];
        match net.get(name) {
            Some(change) => assert_eq!(
                balance,
                WELCOME + change,
                "{name}: PlayerService vs welcome credit + payouts - stakes in the archive"
            ),
            // A bot that only watched has nothing; one whose only bet came too late was
            // credited and kept it all.
            None => assert!(
                balance == 0 || balance == WELCOME,
                "{name}: no bet archived, balance {balance}"
            ),
        }
    }
    assert!(
        broadcaster.interrupt(Duration::from_secs(20)),
        "the broadcaster stops on SIGINT"
    );
    let ledger = ledger_nets(&setup.data_dir.join(TABLE), &names).await;
    let archived: BTreeMap<String, i64> = names
        .iter()
        .map(|name| (name.clone(), net.get(name).copied().unwrap_or(0)))
        .collect();
    assert_eq!(
        ledger, archived,
        "the table's ledger vs the archive, per player"
    );
    let house: i64 = -net.values().sum::<i64>();
    println!(
        "bets: {bets} by {} bots; house result {house} minor units; every balance agrees",
        net.len()
    );

    // The video flowed: a viewer received it and the archive holds round clips.
    if let Some(was_running) = camera_running {
        assert!(was_running, "the camera ran through the shoe");
        let received = units.load(Ordering::Relaxed);
        let clips = std::fs::read_dir(dir.path().join("clips"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "mp4"))
                    .count()
            })
            .unwrap_or(0);
        println!("video: {received} units to a viewer; {clips} round clips in the archive");
        assert!(received > 0, "the viewer received video");
        assert!(clips > 0, "round clips reached the archive");
    }
    println!("total: {:.1} s", started.elapsed().as_secs_f64());
}

/// `banco-sim demo table --headless --rounds 5` plays its rounds, prints the summary, and says
/// the archive verified; run again on the same folder, it starts afresh.
#[test]
fn the_headless_demo_plays_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("demo-data");
    let run = |rounds: &str, extra: &[&str]| {
        let started = Instant::now();
        let out = banco_sim()
            .args(["demo", "table", "--headless", "--rounds", rounds])
            .args(["--betting-seconds", "2", "--data-dir"])
            .arg(&data)
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "banco-sim demo table: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        println!(
            "demo --headless --rounds {rounds} {extra:?}: {:.1} s\n{stdout}",
            started.elapsed().as_secs_f64()
        );
        stdout
    };
    let first = run("5", &[]);
    assert!(
        first.contains("rounds played: 5 (5 settled, 0 voided)"),
        "{first}"
    );
    assert!(first.contains("archive: 5 of 5 rounds stored"), "{first}");
    assert!(first.contains("chain verified OK"), "{first}");
    assert!(first.contains("ledger and archive agree"), "{first}");
    if first.contains("demo: video: test pattern") {
        // Every round filmed, every clip in the archive (a clip lost is exit status 1).
        assert!(
            first.contains("clips: 5 of 5 rounds in the archive\n"),
            "{first}"
        );
    }
    assert!(first.contains("banco audit --token-file"), "{first}");
    // A player's one-time link to the page, beside the bots, and how to make another.
    assert!(
        first.contains(
            "demo: player page for `you` (open once, within 5 minutes): http://127.0.0.1:"
        ) && first.contains("/?code="),
        "{first}"
    );
    assert!(
        first.contains("banco launch --server http://127.0.0.1:"),
        "{first}"
    );
    assert!(data.join("player-page.txt").exists());
    assert!(data.join("archive.db").exists());
    assert!(data.join("logs").join("broadcaster.log").exists());
    the_advice_works_as_printed(&first);

    let again = run("1", &["--no-video"]);
    assert!(again.contains("archive: 1 of 1 rounds stored"), "{again}");
    assert!(again.contains("chain verified OK"), "{again}");
    // No camera: no clip, and none lost.
    assert!(
        again.contains(
            "clips: 0 of 1 rounds in the archive; 1 without video (no camera publishing)\n"
        ),
        "{again}"
    );
}

/// The audit commands the demo prints, run in a shell exactly as printed (with no
/// `banco` on PATH, as after `cargo xtask demo`): the archive on the demo's data, verify,
/// and the export piped into judge, each exiting 0.
fn the_advice_works_as_printed(stdout: &str) {
    let advice: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("To audit it"))
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(advice.len(), 3, "three commands: {stdout}");
    let archive = advice[0]
        .strip_suffix(" &")
        .unwrap_or_else(|| panic!("the archive starts in the background: {}", advice[0]));
    let shell = |line: &str| {
        let mut sh = std::process::Command::new("sh");
        sh.arg("-c").arg(line).env("PATH", "/usr/bin:/bin");
        sh
    };
    let mut server = Proc(
        shell(&format!("exec {archive}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.0.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert!(
        ready.starts_with("archive listening on 127.0.0.1:7103"),
        "{ready}"
    );
    for line in &advice[1..] {
        let out = shell(line).output().unwrap();
        assert!(
            out.status.success(),
            "`{line}`: {:?}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    server.interrupt();
}

/// A folder the demo did not make is refused, and left as it was.
#[test]
fn the_demo_refuses_a_folder_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let out = banco_sim()
        .args(["demo", "table", "--headless", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("did not make"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "mine"
    );
}

/// A second demo on the folder of one that runs is refused, naming the folder and the
/// first demo, and empties nothing: it used to delete the first one's journal and archive
/// under it.
#[test]
fn a_second_demo_on_a_folder_in_use_is_refused() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("demo-data");
    let mut first = Proc(
        banco_sim()
            .args(["demo", "table", "--headless", "--rounds", "1000"])
            .args(["--betting-seconds", "2", "--no-video", "--data-dir"])
            .arg(&data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = first.0.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let playing = lines.any(|line| line.unwrap().contains("the built-in croupier plays"));
    assert!(playing, "the first demo never started playing");
    let out = banco_sim()
        .args(["demo", "table", "--headless", "--rounds", "1", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let data = data.canonicalize().unwrap();
    assert!(
        stderr.contains(&format!(
            "{} is in use by another banco process (pid {}, `banco-sim demo table`)",
            data.display(),
            first.0.id()
        )),
        "{stderr}"
    );
    assert!(
        data.join("archive.db").exists(),
        "the first demo's archive is still there"
    );
    assert!(
        data.join("table").join("T01").exists(),
        "the first demo's journal is still there"
    );
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the first demo plays on"
    );
}

/// The demo killed outright (as when its terminal window is closed: no time to stop its
/// children): every process it started stops by itself, instead of holding its port and
/// the CPU with no one to see it.
#[test]
fn the_demos_processes_stop_when_the_demo_is_killed() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let mut demo = Proc(
        banco_sim()
            .args(["demo", "table", "--headless", "--rounds", "1000"])
            .args(["--betting-seconds", "2", "--no-video", "--data-dir"])
            .arg(dir.path().join("demo-data"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let demo = &mut demo.0;
    let stdout = demo.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    // Every service and the bots are up once the built-in croupier starts.
    let playing = lines.any(|line| line.unwrap().contains("the built-in croupier plays"));
    assert!(playing, "the demo never started playing");
    // A child's command line is empty for a moment after its exec, which is when the
    // last one started may be read.
    let names = [
        "banco validator",
        "banco archive",
        "banco broadcaster",
        "banco-sim bots",
    ];
    let missing = |children: &Vec<(u32, String)>| -> Vec<&str> {
        names
            .iter()
            .copied()
            .filter(|name| {
                !children
                    .iter()
                    .any(|(_, command)| command.contains(&format!("{name} ")))
            })
            .collect()
    };
    let children = poll_blocking(
        Duration::from_secs(10),
        Duration::from_millis(50),
        || children_of(demo.id()),
        |children| missing(children).is_empty(),
    );
    assert!(
        missing(&children).is_empty(),
        "no {:?} among {children:?}\n{}",
        missing(&children),
        log_tails(&dir.path().join("demo-data").join("logs"))
    );
    demo.kill().unwrap();
    demo.wait().unwrap();
    let left = poll_blocking(
        Duration::from_secs(60),
        Duration::from_millis(100),
        || -> Vec<(u32, String)> {
            children
                .iter()
                .filter(|(pid, _)| alive(*pid))
                .cloned()
                .collect()
        },
        Vec::is_empty,
    );
    assert!(
        left.is_empty(),
        "still running a minute after the demo was killed: {left:?}\n{}",
        log_tails(&dir.path().join("demo-data").join("logs"))
    );
}

/// The last lines of every log in `logs`, to say why a test failed.
fn log_tails(logs: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(logs) else {
        return format!("(no logs in {})", logs.display());
    };
    let mut tails = Vec::new();
    for log in entries.flatten() {
        let text = std::fs::read_to_string(log.path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        tails.push(format!("--- {}:\n{tail}", log.path().display()));
    }
    tails.join("\n")
}

/// The processes whose parent is `parent`: (pid, command line).
fn children_of(parent: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let ppid = stat_fields(pid).and_then(|fields| fields.get(1)?.parse().ok());
        if ppid == Some(parent) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// Whether `pid` runs (a zombie waiting to be reaped by whoever adopted it has stopped).
fn alive(pid: u32) -> bool {
    stat_fields(pid)
        .and_then(|fields| fields.first().map(|state| state != "Z" && state != "X"))
        .unwrap_or(false)
}

/// The fields of `/proc/<pid>/stat` after the command name (`state ppid …`), if the
/// process exists; the name may hold spaces and parentheses, so it is cut at the last `)`.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}
