//! `banco player`: the reference player client. The lobby, a table's live events (resuming
//! by itself from the last `seq`), bets, history, balance and chat, one command at a time,
//! for people at a terminal and for scripts (exit status as `crate::exit` says: 1 when the
//! table refuses something, 2 for bad input, 3 when the broadcaster cannot be reached).

mod actions;
pub(crate) mod amount;
pub(crate) mod bets;
pub(crate) mod connect;
mod history;
mod lobby;
pub(crate) mod render;
mod round;
pub(crate) mod video;
pub(crate) mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use connect::ServerArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct PlayerArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// File holding a player token (`banco token issue --role player --sub NAME`); the
    /// player is always the token's subject.
    #[arg(long)]
    token_file: PathBuf,
    /// The table.
    #[arg(long, default_value = "T01")]
    table: String,
    #[command(flatten)]
    times: crate::times::TimeArgs,
    #[command(subcommand)]
    command: PlayerCommand,
}

/// Which round a bet is for (default: the one the table has open for betting now).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RoundArgs {
    /// The round open for betting, e.g. `T01-S0001-H004` (default: asked from the table).
    #[arg(long)]
    round: Option<String>,
    /// Idempotency key: resend a request with the key it was first sent with, and it is
    /// applied at most once (default: a fresh random key).
    #[arg(long)]
    key: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum PlayerCommand {
    /// The lobby: every table with its limits, paytable, seats, players and last results.
    Tables,
    /// Print the table's events as they happen, one line each; reconnects and resumes by
    /// itself from the last event shown.
    Watch {
        /// One JSON object per line instead of readable text.
        #[arg(long)]
        json: bool,
        /// Stop at the first broken stream instead of reconnecting.
        #[arg(long)]
        once: bool,
        /// Stop after this many round results.
        #[arg(long)]
        until_rounds: Option<u64>,
        /// Stop after this many events.
        #[arg(long)]
        max_events: Option<u64>,
    },
    /// Place bets on the round open for betting: `player=25 tie=5 player-pair=2.50`
    /// (amounts in major units, up to 2 decimals).
    Bet {
        #[command(flatten)]
        round: RoundArgs,
        /// position=amount, e.g. banker=25; positions: player, banker, tie, player-pair,
        /// banker-pair, either-pair, perfect-pair, big, small.
        #[arg(required = true, value_name = "POSITION=AMOUNT")]
        bets: Vec<String>,
    },
    /// Take back all your bets of the round while betting is open.
    Clear {
        #[command(flatten)]
        round: RoundArgs,
    },
    /// Place the same bets as your previous round at this table.
    Rebet {
        #[command(flatten)]
        round: RoundArgs,
    },
    /// Your bets, newest first: round, bets, result, payout, net.
    History {
        /// Rounds per page (1 to 100).
        #[arg(long, default_value_t = 20)]
        page_size: u32,
        /// Every page, not just the first.
        #[arg(long)]
        all: bool,
        /// Every table, not just --table.
        #[arg(long)]
        all_tables: bool,
    },
    /// Your balance: available, and staked on rounds under way.
    Balance,
    /// Say something to everyone at the table.
    Chat {
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Lower your own limit on any one stake (`25`, `2.50`); `none` removes it (which may
    /// take effect only later).
    SelfLimit {
        #[arg(value_name = "AMOUNT")]
        amount: String,
    },
    /// Take a seat (tables with seats require one to bet); without a number, any free seat.
    Seat {
        #[arg(value_name = "N")]
        seat: Option<u32>,
    },
    /// Leave your seat.
    LeaveSeat,
    /// The table's live video: `--out FILE` writes MP4 (decoding every frame), `--probe`
    /// prints each frame's capture-to-receipt delay.
    Video(video::VideoArgs),
    /// Sit this round out (a seated player, within 15 s of betting opening).
    Pass {
        /// The round (default: the one open for betting).
        #[arg(long)]
        round: Option<String>,
    },
}

pub(crate) fn run(args: &PlayerArgs) -> anyhow::Result<ExitCode> {
    // Everything typed is checked before anything is sent.
    let checked = actions::check(&args.command)?;
    let token = connect::read_token(&args.token_file)?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        // Inside the runtime: the channel's connection task runs on it.
        let client = connect::client(args.server.lazy_channel()?, token);
        actions::run(
            client,
            &args.table,
            &args.command,
            checked,
            &args.times.times(),
        )
        .await
    })
}

/// A banker bet of 20.00 won and a tie bet of 5.00 lost, settled: for the tests of what
/// shows settlements.
#[cfg(test)]
fn banker_won_tie_lost() -> Vec<banco_wire::pb::Settlement> {
    use banco_wire::pb;
    vec![
        pb::Settlement {
            kind: pb::BetKind::Banker.into(),
            stake_minor: 2_000,
            outcome: pb::BetOutcome::Win.into(),
            winnings_minor: 1_900,
            returned_minor: 3_900,
            ..pb::Settlement::default()
        },
        pb::Settlement {
            kind: pb::BetKind::Tie.into(),
            stake_minor: 500,
            outcome: pb::BetOutcome::Lose.into(),
            ..pb::Settlement::default()
        },
    ]
}
