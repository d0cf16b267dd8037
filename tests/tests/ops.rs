//! Operations (issue 8): the services as an operator runs them, with `--metrics-listen`,
//! `--log-format json`, `--config` files, `BANCO_*` variables and `--print-config`.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::time::Duration;

use banco_e2e::clients::{Cmd, Croupier, player_client};
use banco_e2e::metrics::{get, scrape, sum, value};
use banco_e2e::procs::{BroadcasterSetup, Keys, Service, bearer, channel};
use banco_e2e::{banco, banco_sim, poll, poll_blocking};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;

fn with_metrics(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.extend(["--metrics-listen".into(), "127.0.0.1:0".into()]);
    args
}

/// A validator, an archive and a broadcaster (delivering to it) with metrics; a live round
/// with one accepted and one refused bet, a refused card, a duplicate append to the
/// archive and a bad request to it. Then every count on each `/metrics` is what was done.
#[tokio::test]
async fn each_service_counts_what_was_done_on_its_metrics_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let (validator, validator_metrics) = Service::start_with_metrics(
        "validator",
        &with_metrics(vec![
            "validator".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--public-key".into(),
            keys.public_key().into(),
        ]),
        true,
    );
    let (archive, archive_metrics) = Service::start_with_metrics(
        "archive",
        &with_metrics(vec![
            "archive".into(),
            "--db".into(),
            format!("sqlite://{}", dir.path().join("archive.db").display()).into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--public-key".into(),
            keys.public_key().into(),
            "--accept-unsigned".into(),
        ]),
        true,
    );
    let (validator_metrics, archive_metrics) =
        (validator_metrics.unwrap(), archive_metrics.unwrap());
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = 10_000;
    setup.archive_url = Some(archive.url());
    setup.extra_args = vec!["--no-clips".to_owned()];
    let args = with_metrics(setup.args());
    let (broadcaster, broadcaster_metrics) =
        Service::start_with_metrics("broadcaster", &args, true);
    let broadcaster_metrics = broadcaster_metrics.unwrap();

    // Before anything: the families are there, at zero.
    let before = scrape(&broadcaster_metrics);
    assert_eq!(value(&before, "banco_subscribers{table=\"T01\"}"), 0.0);
    assert_eq!(value(&before, "banco_outbox_depth{table=\"T01\"}"), 0.0);

    let croupier_token = keys.issue("croupier", "dealer-1", "1h");
    let mut croupier = Croupier::new(
        channel(&broadcaster.url()).await,
        &croupier_token,
        "T01",
        "ops",
    );
    croupier.ok(Cmd::OpenShoe).await;
    croupier.ok(Cmd::Burn("TS".into())).await;
    let state = croupier.ok(Cmd::OpenBetting).await;
    let round_id = state.round_id.clone();

    // A subscriber, counted while it is connected.
    let player_token = keys.issue("player", "alice", "1h");
    let mut player = player_client(channel(&broadcaster.url()).await, &player_token);
    let mut events = player
        .subscribe(pb::SubscribeRequest {
            table_id: "T01".into(),
            resume_from_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let _snapshot = events.message().await.unwrap();
    let bet = |amount: i64, key: &str| pb::PlaceBetsRequest {
        table_id: "T01".into(),
        round_id: round_id.clone(),
        bets: vec![pb::Bet {
            kind: pb::BetKind::Banker as i32,
            stake_minor: amount,
        }],
        idempotency_key: key.into(),
    };
    let refused_bet = |reply: &pb::PlaceBetsResponse| {
        matches!(
            reply.decisions[0].decision,
            Some(pb::bet_decision::Decision::Refusal(_))
        )
    };
    let ok = player
        .place_bets(bet(1_000, "b1"))
        .await
        .unwrap()
        .into_inner();
    assert!(!refused_bet(&ok), "{ok:?}");
    // More than the balance left.
    let refused = player
        .place_bets(bet(9_500, "b2"))
        .await
        .unwrap()
        .into_inner();
    assert!(refused_bet(&refused), "{refused:?}");

    croupier.ok(Cmd::CloseBetting).await;
    // Player 9, banker 8: both naturals, the hand is complete after four cards.
    for card in ["9S", "KH", "KS", "8D"] {
        croupier.ok(Cmd::Deal(card.into())).await;
    }
    croupier.refused(Cmd::Deal("2C".into())).await;
    croupier.ok(Cmd::Confirm(round_id.clone())).await;

    // The round reaches the archive through the outbox.
    let service_token = keys.issue("service", "ops-test", "1h");
    let auditor_token = keys.issue("auditor", "ops-test", "1h");
    let mut auditor = ArchiveServiceClient::with_interceptor(
        channel(&archive.url()).await,
        bearer(&auditor_token),
    );
    let record = poll(
        Duration::from_secs(10),
        Duration::from_millis(100),
        async || {
            auditor
                .get_round(pb::GetRoundRequest {
                    round_id: round_id.clone(),
                })
                .await
                .ok()
        },
        Option::is_some,
    )
    .await
    .unwrap_or_else(|| panic!("{round_id} never reached the archive"))
    .into_inner();
    let mut service = ArchiveServiceClient::with_interceptor(
        channel(&archive.url()).await,
        bearer(&service_token),
    );
    let ack = service
        .append(pb::AppendRequest {
            record: Some(record),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(ack.duplicate, "{ack:?}");
    let bad = service
        .append(pb::AppendRequest { record: None })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);

    // Broadcaster: the table's counts, once the outbox has the archive's ack (the archive
    // stores the round a moment before the outbox hears so and lowers its depth) and the
    // wallet's acknowledgement of the payout is journaled (it follows the settlement).
    let t = "table=\"T01\"";
    let accepted = format!("banco_commands_total{{{t},result=\"accepted\"}}");
    let b = poll(
        Duration::from_secs(5),
        Duration::from_millis(50),
        async || scrape(&broadcaster_metrics),
        |b| {
            value(b, &format!("banco_outbox_depth{{{t}}}")) == 0.0
                && value(b, &format!("banco_wallet_owed{{{t}}}")) == 0.0
                && value(b, &accepted) >= 12.0
        },
    )
    .await;
    assert_eq!(value(&b, &format!("banco_bets_accepted_total{{{t}}}")), 1.0);
    assert_eq!(sum(&b, &format!("banco_bets_refused_total{{{t}")), 1.0);
    assert_eq!(
        value(
            &b,
            &format!("banco_cards_refused_total{{{t},reason=\"hand_complete\"}}")
        ),
        1.0,
        "{b:#?}"
    );
    assert_eq!(
        value(
            &b,
            &format!("banco_rounds_finished_total{{{t},outcome=\"player\"}}")
        ),
        1.0
    );
    assert_eq!(sum(&b, "banco_rounds_finished_total"), 1.0);
    // OpenShoe, Burn, OpenBetting, a bet and the wallet's answer to its debit,
    // CloseBetting, 4 cards, Confirm and the wallet's acknowledgement of its payout
    // applied (the welcome credit is the wallet's, no command of the table); the second
    // bet and the fifth card refused.
    assert_eq!(value(&b, &accepted), 12.0);
    assert_eq!(
        value(
            &b,
            &format!("banco_commands_total{{{t},result=\"refused\"}}")
        ),
        2.0
    );
    assert_eq!(value(&b, &format!("banco_subscribers{{{t}}}")), 1.0);
    assert_eq!(
        value(&b, &format!("banco_subscribers_cut_off_total{{{t}}}")),
        0.0
    );
    assert_eq!(value(&b, &format!("banco_outbox_depth{{{t}}}")), 0.0);
    assert_eq!(
        value(&b, &format!("banco_outbox_delivery_failures_total{{{t}}}")),
        0.0
    );
    // The journal: the 12 accepted commands, each fsynced in some group.
    assert_eq!(
        value(&b, &format!("banco_journal_records_total{{{t}}}")),
        12.0
    );
    assert_eq!(
        value(
            &b,
            &format!("banco_journal_group_commit_records_sum{{{t}}}")
        ),
        12.0
    );
    assert!(value(&b, &format!("banco_journal_bytes_total{{{t}}}")) > 0.0);
    let commits = value(&b, &format!("banco_journal_commit_seconds_count{{{t}}}"));
    assert_eq!(
        value(
            &b,
            &format!("banco_journal_group_commit_records_count{{{t}}}")
        ),
        commits
    );

    // The wallet: the accepted bet's debits sent once and answered (the refused bet was
    // over the balance the table knew, and never reached the wallet).
    assert_eq!(
        value(&b, &format!("banco_wallet_debit_seconds_count{{{t}}}")),
        1.0
    );
    assert!(value(&b, &format!("banco_wallet_debit_seconds_sum{{{t}}}")) > 0.0);

    // Validator: four cards accepted, one refused, one settlement.
    let v = scrape(&validator_metrics);
    assert_eq!(
        value(
            &v,
            "banco_validator_requests_total{rpc=\"check_card\",result=\"ok\"}"
        ),
        4.0
    );
    assert_eq!(
        value(
            &v,
            "banco_validator_requests_total{rpc=\"check_card\",result=\"refused\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &v,
            "banco_validator_request_duration_seconds_count{rpc=\"check_card\"}"
        ),
        5.0
    );

    // Archive: one round stored, one duplicate refused, the bad request counted.
    let a = scrape(&archive_metrics);
    assert_eq!(value(&a, "banco_archive_rounds_appended_total"), 1.0);
    assert_eq!(value(&a, "banco_archive_stored_rounds"), 1.0);
    assert_eq!(
        value(
            &a,
            "banco_archive_rounds_refused_total{reason=\"duplicate\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &a,
            "banco_archive_requests_total{rpc=\"append\",result=\"invalid_argument\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &a,
            "banco_archive_requests_total{rpc=\"get_round\",result=\"ok\"}"
        ),
        1.0
    );

    // Only /metrics is served.
    let (status, _, _) = get(&archive_metrics, "/");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    drop(events);
}

#[test]
fn a_metrics_address_beyond_loopback_is_refused_without_the_allow_flag() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(dir.path());
    let out = banco()
        .args([
            "validator",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "0.0.0.0:0",
        ])
        .arg("--public-key")
        .arg(keys.public_key())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--metrics-allow-remote"), "{stderr}");
}

/// `banco archive` on a fresh port, its database in `dir`, taking unsigned rounds (a
/// service to watch log, with nothing else to start), once it has said where it listens;
/// its stdout is for the caller to hold open, so that nothing it prints later hits a
/// closed pipe.
fn unsigned_archive(
    dir: &Path,
    keys: &Keys,
    args: &[&str],
    stderr: Stdio,
) -> (Child, BufReader<ChildStdout>) {
    let mut child = banco()
        .args([
            "archive",
            "--accept-unsigned",
            "--listen",
            "127.0.0.1:0",
            "--db",
        ])
        .arg(format!("sqlite://{}", dir.join("a.db").display()))
        .arg("--public-key")
        .arg(keys.public_key())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.starts_with("archive listening on "), "{first}");
    (child, stdout)
}

/// With `--log-format json`, every line the service logs is a JSON object with a level,
/// a target and a message.
#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(dir.path());
    let (mut child, _stdout) =
        unsigned_archive(dir.path(), &keys, &["--log-format", "json"], Stdio::piped());
    // Every line up to the one that says it serves (logged once it is up), then it stops.
    let mut lines = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let serving = line.contains("archive serving ArchiveService");
        lines.push(line);
        if serving {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(lines.len() >= 2, "{lines:?}");
    for line in &lines {
        let json: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        for field in ["level", "target", "message", "timestamp"] {
            assert!(json.get(field).is_some(), "no {field}: {line}");
        }
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("stored without checking their tables' signatures")),
        "{lines:?}"
    );
}

/// `banco <service> <args> --print-config` with `env`; its stdout, which must succeed.
fn print_config(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = banco();
    command.args(args).arg("--print-config");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn setting<'a>(config: &'a toml_lines::Config, key: &str) -> &'a str {
    config.get(key).map_or("", String::as_str)
}

/// Reads `key = value` lines of a printed config (values as written).
mod toml_lines {
    pub(crate) type Config = std::collections::BTreeMap<String, String>;

    pub(crate) fn read(text: &str) -> Config {
        text.lines()
            .filter_map(|l| l.split_once(" = "))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// For each service: a file value beats the default, an environment variable beats the
/// file, a flag beats both; the printed config read back gives the same config.
#[test]
fn settings_come_from_defaults_then_file_then_environment_then_flags() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("service.token");
    std::fs::write(&token, "secret-token-contents").unwrap();
    let cases: [(&str, &[&str], &str, &str); 5] = [
        ("validator", &[], "audience", "BANCO_VALIDATOR_AUDIENCE"),
        (
            "broadcaster",
            &["--service-token-file", token.to_str().unwrap()],
            "audience",
            "BANCO_BROADCASTER_AUDIENCE",
        ),
        ("archive", &[], "audience", "BANCO_ARCHIVE_AUDIENCE"),
        (
            "edge",
            &["--service-token-file", token.to_str().unwrap()],
            "events",
            "BANCO_EDGE_EVENTS",
        ),
        (
            "stream",
            &["--token-file", token.to_str().unwrap()],
            "table",
            "BANCO_STREAM_TABLE",
        ),
    ];
    for (service, required, key, env) in cases {
        let file = dir.path().join(format!("{service}.toml"));
        // Two keys from the file; the second is then overridden by env, then by a flag.
        std::fs::write(
            &file,
            format!("log_format = \"json\"\n{key} = \"from-file\"\n"),
        )
        .unwrap();
        let mut args = vec![service, "--config", file.to_str().unwrap()];
        args.extend_from_slice(required);

        let defaults = toml_lines::read(&print_config(&[&[service], required].concat(), &[]));
        assert_eq!(setting(&defaults, "log_format"), "\"text\"", "{service}");

        let from_file = toml_lines::read(&print_config(&args, &[]));
        assert_eq!(setting(&from_file, "log_format"), "\"json\"", "{service}");
        assert_eq!(setting(&from_file, key), "\"from-file\"", "{service}");

        let from_env = toml_lines::read(&print_config(&args, &[(env, "from-env")]));
        assert_eq!(setting(&from_env, key), "\"from-env\"", "{service}");
        assert_eq!(setting(&from_env, "log_format"), "\"json\"", "{service}");

        let flag = format!("--{}", key.replace('_', "-"));
        let mut with_flag = args.clone();
        with_flag.extend([flag.as_str(), "from-flag"]);
        let printed = print_config(&with_flag, &[(env, "from-env")]);
        assert_eq!(
            setting(&toml_lines::read(&printed), key),
            "\"from-flag\"",
            "{service}"
        );
        assert!(!printed.contains("secret-token-contents"), "{printed}");

        // Round trip: the printed config, as the only source, prints the same.
        let again = dir.path().join(format!("{service}-printed.toml"));
        std::fs::write(&again, &printed).unwrap();
        let reprinted = print_config(&[service, "--config", again.to_str().unwrap()], &[]);
        assert_eq!(reprinted, printed, "{service}");
    }
}

#[test]
fn an_unknown_key_or_a_bad_value_in_the_config_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.toml");
    for (text, expected) in [
        ("listne = \"127.0.0.1:1\"\n", "unknown key `listne`"),
        ("listen = \"not an address\"\n", "`listen`"),
        ("table_key_pub = \"one\"\n", "unknown key `table_key_pub`"),
        ("log_format = \"xml\"\n", "`log_format`"),
    ] {
        std::fs::write(&file, text).unwrap();
        let out = banco()
            .args(["validator", "--print-config", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{text}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{text}: {stderr}");
        assert!(stderr.contains("v.toml"), "{text}: {stderr}");
    }
}

/// Keys of a config file that clap would refuse together as flags are refused too, naming
/// both, and so is a key that a flag on the command line or a variable conflicts with:
/// the service does not start with one of them silently ignored.
#[test]
fn conflicting_settings_from_the_config_file_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.toml");
    let run = |text: &str, args: &[&str], env: &[(&str, &str)]| {
        std::fs::write(&file, format!("service_token_file = \"t\"\n{text}")).unwrap();
        let out = banco()
            .args(["broadcaster", "--print-config", "--config"])
            .arg(&file)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (text, args, env, expected) in [
        (
            "no_clips = true\nclips_dir = \"clips\"\n",
            &[][..],
            &[][..],
            "`clips_dir` cannot be used with `no_clips` in the same file",
        ),
        (
            "seven_tiers = true\ntable = [\"T02\"]\n",
            &[],
            &[],
            "cannot be used with",
        ),
        (
            "no_clips = true\n",
            &["--clips-dir", "clips"],
            &[],
            "`no_clips` cannot be used with --clips-dir on the command line",
        ),
        (
            "no_clips = true\n",
            &[],
            &[("BANCO_BROADCASTER_CLIPS_DIR", "clips")],
            "`no_clips` cannot be used with BANCO_BROADCASTER_CLIPS_DIR",
        ),
    ] {
        let (code, stderr) = run(text, args, env);
        assert_eq!(code, Some(2), "{text} {args:?}: {stderr}");
        assert!(stderr.contains(expected), "{text} {args:?}: {stderr}");
        assert!(stderr.contains("b.toml"), "{stderr}");
    }
    // Without a conflict: accepted (a switch that is off conflicts with nothing).
    let (code, stderr) = run("no_clips = false\nclips_dir = \"clips\"\n", &[], &[]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// SIGTERM, what systemd, container runtimes and `kill` send, stops each service cleanly
/// (exit status 0), as Ctrl-C does; before, it killed them mid-stop.
#[test]
fn sigterm_stops_every_service_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let db = format!("sqlite://{}", dir.path().join("archive.db").display());
    let mut archive = banco_e2e::procs::start_archive(&keys, &db, "127.0.0.1:0", None);
    let mut validator = banco_e2e::procs::start_validator(&keys);
    let mut broadcaster =
        BroadcasterSetup::new(&keys, &validator, &dir.path().join("data")).start();
    for (name, service) in [
        ("broadcaster", &mut broadcaster),
        ("validator", &mut validator),
        ("archive", &mut archive),
    ] {
        let asked = std::time::Instant::now();
        let status = service.signal("TERM", Duration::from_secs(40));
        let status = status.unwrap_or_else(|| panic!("{name} still runs 40 s after SIGTERM"));
        assert!(status.success(), "{name} after SIGTERM: {status}");
        eprintln!("{name}: stopped {:?} after SIGTERM", asked.elapsed());
    }
}

/// The bots asked to stop while still starting (the demo killed as it starts them), with
/// a broadcaster that accepts connections and never answers: they stop, cleanly, instead
/// of waiting on the lobby forever or playing on with no one to stop them.
#[test]
fn bots_stop_when_asked_while_they_start() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    // Holds every connection open, unanswered, for the test's life.
    std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().map_while(Result::ok).collect();
        drop(held);
    });
    let mut bots = banco_sim()
        .args(["bots", "--server", &url, "--players", "3", "--signing-key"])
        .arg(keys.signing_key())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(bots.stdout.take().unwrap()).lines();
    // Printed once they listen for a stop.
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("bots: 3 at table T01"), "{first}");
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &bots.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = poll_blocking(
        Duration::from_secs(30),
        Duration::from_millis(50),
        || bots.try_wait().unwrap(),
        Option::is_some,
    );
    let Some(status) = status else {
        let _ = bots.kill();
        panic!("the bots still run 30 s after SIGTERM");
    };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "bots after SIGTERM: {status} {rest:?}");
    assert!(
        rest.iter().any(|l| l.starts_with("final: rounds 0")),
        "{rest:?}"
    );
}

/// Two broadcasters on one data folder would append to the same journals, two archives on
/// one database would each move the chain's head under the other: the second is refused,
/// naming the folder and the process that has it, and the first goes on untouched.
#[test]
fn a_second_service_on_a_folder_in_use_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = banco_e2e::procs::start_validator(&keys);
    let setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    let mut first = setup.start();
    let out = banco().args(setup.args()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} is in use by another banco process (pid {}, `banco broadcaster`)",
            setup.data_dir.display(),
            first.pid()
        )),
        "{stderr}"
    );
    assert!(first.is_running(), "the first broadcaster goes on");

    let db_file = dir.path().join("archive.db");
    let db = format!("sqlite://{}", db_file.display());
    let mut archive = banco_e2e::procs::start_archive(&keys, &db, "127.0.0.1:0", None);
    let out = banco()
        .args([
            "archive",
            "--listen",
            "127.0.0.1:0",
            "--db",
            &db,
            "--accept-unsigned",
            "--public-key",
        ])
        .arg(keys.public_key())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} is in use by another banco process (pid {}, `banco archive`)",
            db_file.display(),
            archive.pid()
        )),
        "{stderr}"
    );
    assert!(archive.is_running(), "the first archive goes on");
    // Once the first is gone, the folder is free again: nothing stale is left behind.
    first.kill();
    let mut again = setup.start();
    assert!(again.is_running());
}

/// A service's `https://` address without the CA to trust it by is refused before the
/// broadcaster serves: the library says what is wrong with the address, the command which
/// of its flags gave it.
#[test]
fn an_https_service_without_its_ca_is_refused_naming_both_flags() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = banco_e2e::procs::start_validator(&keys);
    let refused = |setup: &BroadcasterSetup| {
        let out = banco().args(setup.args()).output().unwrap();
        assert!(!out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            stderr.contains("server address `https://127.0.0.1:1`: https needs a CA certificate"),
            "{stderr}"
        );
        assert!(!stderr.contains("listening on"), "{stderr}");
        stderr
    };
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.validator_url = "https://127.0.0.1:1".to_owned();
    let stderr = refused(&setup);
    assert!(stderr.contains("--validator, --validator-ca"), "{stderr}");

    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.archive_url = Some("https://127.0.0.1:1".to_owned());
    let stderr = refused(&setup);
    assert!(stderr.contains("--archive, --archive-ca"), "{stderr}");
}

/// A log written to a file (the demo's `logs/`, systemd's journal) carries no colour codes:
/// they are for a person at a terminal.
#[test]
fn logs_written_to_a_file_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(dir.path());
    let log = dir.path().join("archive.log");
    let (mut child, _stdout) = unsigned_archive(
        dir.path(),
        &keys,
        &[],
        std::fs::File::create(&log).unwrap().into(),
    );
    // It warns that signatures go unchecked once it is up; then it is stopped.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if text.contains("archive serving ArchiveService") {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.contains("WARN") && text.contains("--accept-unsigned"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "escape codes in a log file:\n{text:?}"
    );
}
