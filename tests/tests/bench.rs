//! The benchmarks as a developer runs them (`banco-bench …`, or `banco bench …`): real
//! services and connections, and reports that check every card, bet and balance.
#![allow(clippy::unwrap_used)]

use banco_e2e::{banco, banco_bench};

/// Whether `program` is on PATH (the fan-out's comparison needs Debian's `nats-server`,
/// which `cargo xtask test` installs; a developer without it is told, not failed).
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Runs `command`, which must succeed; its standard output, and all of what it printed
/// for an assertion's message.
fn succeeded(command: &mut std::process::Command) -> (String, String) {
    let out = command.output().unwrap();
    let text = banco_e2e::output_text(&out);
    assert!(out.status.success(), "{text}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), text)
}

/// Runs `command`, which must fail: its exit code, its standard error, and all of what it
/// printed for an assertion's message.
fn failed(command: &mut std::process::Command) -> (Option<i32>, String, String) {
    let out = command.output().unwrap();
    let text = banco_e2e::output_text(&out);
    assert!(!out.status.success(), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, text)
}

/// Direct, through JetStream and two edges (the subscribers' connections spread over
/// them), and through plain NATS: every subscriber saw every card once, in order, each
/// way.
#[test]
fn the_fanout_bench_times_every_card_of_every_subscriber_over_grpc_edges_and_nats() {
    let nats = on_path("nats-server");
    if !nats {
        eprintln!("nats-server is not installed: the fan-out bench runs without --against nats");
    }
    // Subscribers that do not fill their last connection, to check the split as well.
    let mut args = vec![
        "fanout",
        "--subscribers",
        "45",
        "--per-connection",
        "7",
        "--cards",
        "6",
        "--interval-ms",
        "20",
    ];
    if nats {
        args.extend(["--edges", "2", "--against", "nats"]);
    }
    let out = banco_bench().args(&args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("45 subscribers over 7 connections (7 per connection)"),
        "{stdout}"
    );
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no `{name}` line:\n{stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let complete = line("subscribers: every card once, in order");
    let receipts = line("card receipts timed");
    let dealt = line("cards as dealt");
    if nats {
        assert!(
            complete.ends_with("45 of 45 45 of 45 45 of 45"),
            "{complete}"
        );
        assert!(dealt.ends_with("yes yes yes"), "{dealt}");
        assert!(stdout.contains("JetStream + 2 edges"), "{stdout}");
    } else {
        assert!(complete.ends_with("45 of 45"), "{complete}");
        assert!(dealt.ends_with("yes"), "{dealt}");
    }
    // Whole rounds are dealt: at least the 6 cards asked for, each timed for each of the
    // 45 subscribers.
    let counts: Vec<u64> = receipts.split(' ').filter_map(|w| w.parse().ok()).collect();
    assert!(!counts.is_empty(), "{receipts}");
    for count in counts {
        assert!(count >= 6 * 45 && count % 45 == 0, "{receipts}");
    }
}

/// `banco-bench bets` through each wallet a broadcaster can spend through: every bet
/// acknowledged only once its debit is durable, and every balance (the welcome credit
/// staked whole) checked by the bench itself, which exits 0 only then.
#[test]
fn the_bets_bench_goes_through_every_kind_of_wallet_and_checks_the_money() {
    for (wallet, described) in [
        ("memory", "through the memory wallet (not durable)"),
        (
            "embedded",
            "through the embedded wallet (SQLite, synchronous=FULL)",
        ),
        ("grpc", "through the banco wallet over gRPC"),
        (
            "seamless",
            "through the seamless protocol to banco's server",
        ),
    ] {
        let out = banco_bench()
            .args(["bets", "--players", "30", "--bets-per-player", "4"])
            .args(["--concurrency", "8", "--wallet", wallet])
            .output()
            .unwrap();
        let text = banco_e2e::output_text(&out);
        assert!(out.status.success(), "{wallet}: {text}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(described), "{wallet}: {text}");
        assert!(
            stdout.contains("90 timed bets (after 30 warm-up)")
                && stdout.contains("totals and all 30 balances check"),
            "{wallet}: {text}"
        );
        // The table and its wallet run on threads of their own, told apart from the load,
        // and a wallet's server (elsewhere in production) from the table's side.
        assert!(
            stdout.contains("server-rt ")
                && stdout.contains("bench-load ")
                && stdout.contains("the rest the bench's players"),
            "{wallet}: {text}"
        );
        assert_eq!(
            stdout.contains("wallet-server ")
                && stdout.contains("of them the wallet's server and its store"),
            matches!(wallet, "grpc" | "seamless"),
            "{wallet}: {text}"
        );
        // Each debit is its own durable commit, or shares one with others: never none.
        assert_eq!(
            stdout.contains("wallet commits"),
            wallet != "memory",
            "{wallet}: {text}"
        );
    }
}

/// `banco-bench bets --rate`: an open loop, each bet sent when it is due whatever is in
/// flight, and the same checks of every bet and balance as with a fixed number in flight.
#[test]
fn the_bets_bench_offers_a_rate_and_still_checks_the_money() {
    let (stdout, text) = succeeded(
        banco_bench()
            .args(["bets", "--players", "30", "--bets-per-player", "4"])
            .args(["--rate", "600", "--wallet", "embedded"]),
    );
    assert!(
        stdout.contains("offered 600 bets/s (each sent when due, at most ")
            && stdout.contains("90 timed bets (after 30 warm-up) in ")
            && stdout.contains("totals and all 30 balances check"),
        "{text}"
    );
    // 90 bets at 600 a second take 0.15 s at the least: the schedule is kept, not raced.
    let seconds: f64 = stdout
        .split(" timed bets (after 30 warm-up) in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(seconds >= 0.148, "{seconds} s: {text}");

    let (_, _, text) = failed(banco_bench().args(["bets", "--rate", "0"]));
    assert!(
        text.contains("--rate must be at least 1 bet a second"),
        "{text}"
    );
}

/// `banco bench …` as the issue and the book spell it: `banco` runs `banco-bench` from
/// beside itself with the same arguments, so the figures, the checks and the exit status
/// are the benchmark's (a bench's refusal of a flag included).
#[test]
fn banco_bench_is_the_benchmarks_binary_beside_banco() {
    // Built into the same folder as `banco`, where `banco bench` looks first.
    let _ = banco_bench();
    let (stdout, text) = succeeded(
        banco()
            .args(["bench", "bets", "--players", "10", "--bets-per-player", "2"])
            .args(["--concurrency", "4", "--wallet", "embedded"]),
    );
    assert!(
        stdout.contains("banco-bench bets: 10 players × 2 bets")
            && stdout.contains("through the embedded wallet")
            && stdout.contains("totals and all 10 balances check"),
        "{text}"
    );

    let (code, stderr, text) = failed(banco().args(["bench", "bets", "--bets-per-player", "0"]));
    assert_eq!(code, Some(2), "{text}");
    assert!(
        stderr.contains("--bets-per-player 0: must be 1 to 180"),
        "{text}"
    );
}
