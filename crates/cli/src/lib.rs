//! `banco`: one binary for every service, client and tool of a banco table.
//!
//! A library as well as the binary (`src/main.rs` only calls [`main`]), so that the fuzz
//! targets and the end-to-end tests can reach the services' real flags
//! ([`service_command`]) without running the binary.

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

mod archive;
mod audit;
mod bench;
mod broadcaster;
mod cashier;
mod config;
mod croupier;
pub mod docs;
mod edge;
mod exit;
mod folder_lock;
mod grpc;
mod judge;
mod launch;
mod logging;
mod metrics_http;
mod odds;
mod ops;
mod player;
mod roads;
mod sentence;
mod service_life;
mod sibling;
mod stop_signal;
mod stop_with_parent;
mod stream;
#[cfg(feature = "gstreamer")]
mod stream_metrics;
mod table_wallet;
mod times;
mod token;
mod validator;
mod wallet;
mod wallet_conformance;

#[derive(Debug, Parser)]
#[command(
    name = "banco",
    version,
    about = "Live Punto Banco: rules, services and tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The rules engine as a tool: judge hands for an audit replay.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Exact probabilities and return to player of a shoe, full or depleted.
    Odds(odds::OddsArgs),
    /// Draw the scoreboard roads (bead plate, Big Road, derived roads) of a run of results.
    Roads(roads::RoadsArgs),
    /// Serve RulesService, the stateless rules authority, with health and reflection.
    Validator(validator::ValidatorArgs),
    /// Serve one table: its actor behind TableService and PlayerService.
    Broadcaster(Box<broadcaster::BroadcasterArgs>),
    /// Serve PlayerService to players from the tables' event streams on NATS JetStream,
    /// forwarding bets to each table's broadcaster (scale-out; holds no table state).
    Edge(edge::EdgeArgs),
    /// Serve ArchiveService: the tamper-evident store of every round (SQLite or PostgreSQL).
    Archive(archive::ArchiveArgs),
    /// The auditor's client of the archive: rounds, round, shoe, stats, bets, export, verify.
    Audit(audit::AuditArgs),
    /// Send one croupier command to a table and print the table after it.
    Croupier(croupier::CroupierArgs),
    /// The reference player client: lobby, live events, bets, history, balance, chat.
    Player(player::PlayerArgs),
    /// The table camera (or a test pattern) with the round overlay, as low-latency H.264
    /// published to the broadcaster; reconnects by itself.
    Stream(Box<stream::StreamArgs>),
    /// Signing keys and signed, expiring bearer tokens for every role.
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// A one-time link to the player page for one player (as an operator's lobby makes).
    Launch(launch::LaunchArgs),
    /// Serve WalletService: one account per player and currency across every table
    /// (SQLite or PostgreSQL), and the seamless protocol with `--seamless-listen`;
    /// `banco wallet conformance URL` checks an operator's seamless wallet.
    Wallet(Box<wallet::WalletArgs>),
    /// The casino's cashier: deposit, withdraw, a player's balance and statement, block.
    Cashier(cashier::CashierArgs),
    /// The benchmarks, over real gRPC on loopback (`bets`, `wallet`, `validator`,
    /// `fanout`, `video`, `archive`): runs `banco-bench`, a binary of its own beside this
    /// one, with the same arguments.
    Bench(bench::BenchArgs),
}

#[derive(Debug, Subcommand)]
enum RulesCommand {
    /// Reads JSON lines `{"cards": [...]}` on stdin and prints one judged hand per line.
    Judge(judge::JudgeArgs),
}

/// The subcommands that take `--config` and `--print-config`.
pub const SERVICES: [&str; 6] = config::SERVICES;

/// The clap command of the service subcommand `name` (one of [`SERVICES`]), with its
/// `BANCO_<SERVICE>_<KEY>` variables, as `banco` parses it; `None` for any other name.
pub fn service_command(name: &str) -> Option<clap::Command> {
    if !SERVICES.contains(&name) {
        return None;
    }
    Cli::command()
        .find_subcommand(name)
        .cloned()
        .map(banco_config::with_env)
}

/// What `banco-bench` (crates/bench) reuses of `banco`: the services' logging, the
/// encoder's flags of `banco stream`, and the wallets a broadcaster opens.
pub mod bench_support {
    pub use crate::clients::fatal;
    pub use crate::logging::init_for_bench;
    pub use crate::player::video::{delay, quantile};
    pub use crate::stream::EncodeArgs;
    pub use crate::table_wallet::{TableWallet, WalletArgs, embedded_url, open_store};
}

/// What the simulators (`banco-sim`: bots, shoe reader, demo; crates/sim) reuse of
/// `banco`'s clients: the player's and the croupier's connections, the auditor's archive
/// client, tokens, the roads, the launch link, and the process helpers every `banco`
/// command shares. Only these items are public; the rest of the crate stays private.
pub mod clients {
    /// The player's client (`banco player`).
    pub mod player {
        pub use crate::player::bets::bets_to_pb;
        pub use crate::player::connect::{Client, ServerArgs, client, fresh_key, status_error};
        pub use crate::player::render::hand_result;
        pub use crate::player::watch::{Feed, Item};
    }

    /// The croupier's client (`banco croupier`).
    pub mod croupier {
        pub use crate::croupier::{
            Client, CroupierCommand, TableArgs, apply, current_state, endpoint, fresh_command_id,
            render_refusal, status_error,
        };
    }

    /// The auditor's client of the archive (`banco audit`).
    pub mod audit {
        pub use crate::audit::{Archive, all_rounds, clip_missing_reason};
    }

    /// Signing keys and tokens (`banco token`).
    pub mod token {
        pub use crate::token::{issue, keygen};
    }

    pub use crate::launch::launch_url;
    pub use crate::roads::render as render_roads;

    /// Another of banco's binaries, beside this one or on PATH.
    pub mod sibling {
        pub use crate::sibling::find;
    }

    /// A folder held by one process at a time.
    pub mod folder_lock {
        pub use crate::folder_lock::{FolderLock, LOCK_FILE};
    }

    /// SIGINT and SIGTERM as a request to stop cleanly.
    pub mod stop_signal {
        pub use crate::stop_signal::StopSignal;
    }

    /// A child process that stops when the process that started it dies.
    pub mod stop_with_parent {
        pub use crate::stop_with_parent::{ENV, apply};
    }

    /// An error that ends a command: printed as `banco` prints it; the exit status for it.
    pub fn fatal(err: &anyhow::Error) -> std::process::ExitCode {
        crate::logging::fatal(err);
        crate::exit::exit_code(err)
    }
}

/// `banco` with the process's arguments; its exit status.
pub fn main() -> ExitCode {
    main_with(std::env::args_os().collect())
}

/// `banco` with `args` (the program's name first), as if run with them; its exit status.
pub fn main_with(args: Vec<std::ffi::OsString>) -> ExitCode {
    if let Err(err) = stop_with_parent::apply() {
        eprintln!("banco: {}", sentence::sentence(&err));
        return ExitCode::from(2);
    }
    let matches = match config::matches(Cli::command(), args) {
        Ok(matches) => matches,
        Err(err) => {
            eprintln!("banco: {}", sentence::sentence(&err));
            return ExitCode::from(2);
        }
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match config::printed(&Cli::command(), &matches) {
        Ok(Some(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(None) => {}
        Err(err) => {
            eprintln!("banco: {}", sentence::sentence(&err));
            return ExitCode::from(2);
        }
    }
    if let Some((name, sub)) = matches.subcommand()
        && config::SERVICES.contains(&name)
        && let Some(format) = sub.get_one::<logging::LogFormat>("log_format")
    {
        logging::init(*format);
    }
    let result = match cli.command {
        Command::Rules(RulesCommand::Judge(args)) => judge::run(&args),
        Command::Odds(args) => odds::run(&args),
        Command::Roads(args) => roads::run(&args),
        Command::Validator(args) => validator::run(&args),
        Command::Token(command) => token::run(&command),
        Command::Launch(args) => launch::run(&args),
        Command::Broadcaster(args) => broadcaster::run(&args),
        Command::Edge(args) => edge::run(&args),
        Command::Croupier(args) => croupier::run(&args),
        Command::Archive(args) => archive::run(&args),
        Command::Audit(args) => audit::run(&args),
        Command::Player(args) => player::run(&args),
        Command::Stream(args) => stream::run(&args),
        Command::Wallet(args) => wallet::run(&args),
        Command::Cashier(args) => cashier::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            logging::fatal(&err);
            exit::exit_code(&err)
        }
    }
}

#[cfg(all(test, not(all(feature = "gstreamer", feature = "jetstream"))))]
mod left_out_features {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Checks that `banco <args>` fails before it starts anything, with a message that
    /// starts with `starts` and names `feature`.
    fn assert_refused(args: &[&str], starts: &str, feature: &str) {
        let cli =
            Cli::try_parse_from(std::iter::once("banco").chain(args.iter().copied())).unwrap();
        let result = match cli.command {
            Command::Broadcaster(args) => broadcaster::run(&args),
            Command::Edge(args) => edge::run(&args),
            Command::Stream(args) => stream::run(&args),
            other => panic!("{other:?}: not refused for a feature"),
        };
        let err = format!("{:#}", result.unwrap_err());
        let named = format!("`{feature}` feature");
        assert!(err.starts_with(starts) && err.contains(&named), "{err}");
    }

    const BROADCASTER: [&str; 5] = [
        "broadcaster",
        "--public-key",
        "signing.pub",
        "--service-token-file",
        "service.token",
    ];

    #[cfg(not(feature = "jetstream"))]
    #[test]
    fn without_jetstream_events_and_the_edge_are_refused_naming_it() {
        let events = [&BROADCASTER[..], &["--events", "nats://n:4222"]].concat();
        assert_refused(&events, "--events nats://n:4222: ", "jetstream");
        let edge = ["edge", "--public-key", "k.pub", "--service-token-file", "s"];
        assert_refused(&edge, "banco edge: ", "jetstream");
    }

    #[cfg(not(feature = "gstreamer"))]
    #[test]
    fn without_gstreamer_clips_and_the_camera_are_refused_naming_it() {
        let clips = [&BROADCASTER[..], &["--clips-dir", "clips"]].concat();
        assert_refused(&clips, "--clips-dir clips: ", "gstreamer");
        assert_refused(
            &["stream", "--token-file", "t"],
            "banco stream: ",
            "gstreamer",
        );
    }
}
