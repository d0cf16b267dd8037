//! `banco-bench`: how fast the services answer over real gRPC on loopback (a binary of
//! its own, so that `banco` does not carry the benchmarks and their NATS and HTTP/2
//! clients).
//!
//! - `validator`: CheckCard round trips to an in-process validator ([`validator`]).
//! - `bets`: PlaceBets acknowledgements from an in-process broadcaster ([`bets`]).
//! - `archive`: the archive's ingest (many tables appending at once), Stats, export,
//!   bytes on disk and Verify, on SQLite or PostgreSQL ([`archive`]).
//! - `video`: `banco stream` at 720p30 to many viewers: encoder frames per second,
//!   capture-to-viewer delay, CPU ([`video`]).
//! - `fanout`: the time from the table accepting a card to each of many subscribers, in
//!   another process, receiving it; optionally the same through a NATS server ([`fanout`]).
//! - `wallet`: the wallet store's debits and credits from many tables at once, durable
//!   commit, on SQLite or PostgreSQL ([`wallet`]).
//!
//! Each prints its figures and never judges a time; each also checks its answers (every
//! card accepted; every bet and balance exactly what was staked; every subscriber saw every
//! card once, in order; every balance what was deposited, staked and returned), so a fast
//! wrong answer does not pass for a result.

mod archive;
mod bets;
pub(crate) mod common;
mod fanout;
mod grpc_h2;
mod subscribers;
mod validator;
mod video;
mod wallet;
mod wallet_waits;
mod wallets;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;

// The same allocator as `banco`, so that the services measured here allocate as they do
// when they serve.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, clap::Parser)]
#[command(
    name = "banco-bench",
    version,
    about = "The benchmarks: the validator, bets through each wallet, the fan-out, video, the archive and the wallet store, over real gRPC on loopback"
)]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

/// The `banco` commands this binary also runs (`banco-bench edge …` is `banco edge …`):
/// the fan-out's edges and the video bench's camera are the real commands, in child
/// processes of this same binary.
const BANCO_COMMANDS: [&str; 2] = ["edge", "stream"];

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|arg| BANCO_COMMANDS.iter().any(|c| arg == c))
    {
        args[0] = "banco".into();
        return banco::main_with(args);
    }
    let cli = Cli::parse_from(args);
    banco::bench_support::init_for_bench();
    match run(&cli.command) {
        Ok(code) => code,
        Err(err) => banco::bench_support::fatal(&err),
    }
}

#[derive(Debug, clap::Subcommand)]
enum BenchCommand {
    /// CheckCard round trips to an in-process validator over gRPC loopback.
    Validator {
        /// Calls to time (after 200 warm-up calls).
        #[arg(long, default_value_t = 20_000)]
        requests: usize,
        /// Calls in flight at once, each from its own client task.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
    },
    /// PlaceBets acknowledgements from an in-process broadcaster (journal on a temp dir).
    Bets {
        /// Players, each with its own token.
        #[arg(long, default_value_t = 1_000)]
        players: usize,
        /// Bets each player places in the round (1 to 180: 500 on each position in turn,
        /// Player first, so no position goes over the table maximum).
        #[arg(long, default_value_t = 20)]
        bets_per_player: usize,
        /// PlaceBets requests in flight at once (with `--rate`: those of the warm-up, and
        /// one connection for every 16).
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// An open loop instead: this many bets a second, each sent when it is due however
        /// many are in flight, its latency counted from then (so a server that falls behind
        /// shows in the figures instead of slowing the load).
        #[arg(long)]
        rate: Option<u32>,
        /// The wallet every stake is debited from, each debit durable before the bet is
        /// acknowledged (`memory`: the table alone).
        #[arg(long, value_enum, default_value_t)]
        wallet: wallets::BenchWallet,
    },
    /// Card latency from the table to many subscribers in another process, and the
    /// broadcaster's memory per subscriber; `--against nats` adds the same through NATS.
    Fanout(fanout::FanoutArgs),
    /// The archive: ingest from many tables at once, Stats, export, bytes per round on
    /// disk and Verify, on a temporary SQLite file or `--db postgres://…`.
    Archive(archive::ArchiveArgs),
    /// Live video: `banco stream` at 720p30 into an in-process broadcaster and many
    /// viewers; encoder frames per second, capture-to-viewer delay, CPU.
    Video(video::VideoArgs),
    /// The wallet store: many tables' debits and credits at once, each durable before its
    /// answer, on a temporary SQLite file, `sqlite://PATH` or `postgres://…`; then every
    /// balance checked (exit status 1 if one is wrong).
    Wallet(wallet::WalletArgs),
    /// The subscribers of `fanout` (started by it, in a child process).
    #[command(hide = true)]
    FanoutSubscribers(subscribers::SubscribersArgs),
}

fn run(command: &BenchCommand) -> anyhow::Result<ExitCode> {
    let runtime = || tokio::runtime::Runtime::new().context("could not start the async runtime");
    match command {
        &BenchCommand::Validator {
            requests,
            concurrency,
        } => runtime()?.block_on(validator::bench_validator(requests, concurrency))?,
        &BenchCommand::Bets {
            players,
            bets_per_player,
            concurrency,
            rate,
            wallet,
        } => {
            // The table and its wallet on threads of their own, the players' load on one
            // thread: the CPU figures then tell the server's part from the load's, and the
            // load, one thread's tasks waking each other, costs a third less than spread
            // over a runtime's workers (measured with tonic's client: 16–18 against 25–27
            // µs a bet). The server's runtime has the workers `banco broadcaster` runs its
            // tables on.
            let server = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(banco_broadcaster::table_workers())
                .thread_name("server-rt")
                .enable_all()
                .build()
                .context("could not start the server's async runtime")?;
            let server_handle = server.handle().clone();
            std::thread::Builder::new()
                .name("bench-load".to_owned())
                .spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .context("could not start the load's async runtime")?
                        .block_on(bets::bench_bets(
                            players,
                            bets_per_player,
                            concurrency,
                            rate,
                            wallet,
                            &server_handle,
                        ))
                })
                .context("could not start the load's thread")?
                .join()
                .map_err(|_| anyhow::anyhow!("the load's thread panicked"))??;
        }
        BenchCommand::Fanout(args) => runtime()?.block_on(fanout::run(args))?,
        BenchCommand::Archive(args) => runtime()?.block_on(archive::run(args))?,
        BenchCommand::Video(args) => runtime()?.block_on(video::run(args))?,
        BenchCommand::FanoutSubscribers(args) => runtime()?.block_on(subscribers::run(args))?,
        BenchCommand::Wallet(args) => return runtime()?.block_on(wallet::run(args)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Where this binary is, to start the subscribers' process (and the edges and camera).
fn this_binary() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("could not find this program's path to start the subscribers")
}
