//! `banco-sim demo table`: a whole live table on this machine: the services from the
//! `banco` binary beside `banco-sim` (cargo builds both into one folder), the bots and the
//! shoe reader from `banco-sim` itself: the validator, the archive (SQLite in the demo folder), the broadcaster (live pacing,
//! betting closing by itself, a welcome credit so that players can bet), the camera (test
//! pattern) when GStreamer's plugins are there, 20 bots, and either the croupier console
//! fed by a simulated shoe reader, or (`--headless`) a built-in croupier that plays
//! `--rounds` rounds and prints what the archive and the ledger say.

mod children;
mod data;
mod dealer;
mod report;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context as _, bail};
use banco::clients::sibling::find;
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::table_service_client::TableServiceClient;
use tokio::sync::watch;

use children::Children;
use data::DemoData;
use dealer::Dealer;

const TABLE: &str = "T01";
const CURRENCY: &str = "EUR";
#[cfg(feature = "gstreamer")]
/// The GStreamer elements `banco stream` needs for the test pattern (one of the encoders).
const VIDEO_ELEMENTS: [&str; 6] = [
    "videotestsrc",
    "textoverlay",
    "videoconvert",
    "capsfilter",
    "queue",
    "h264parse",
];

#[derive(Debug, clap::Args)]
pub(crate) struct TableDemoArgs {
    /// Folder for everything the demo makes: keys, tokens, the table's journal, the
    /// archive, clips and logs. A folder an earlier demo made is emptied first.
    #[arg(long, default_value = "demo-data")]
    data_dir: PathBuf,
    /// No console: a built-in croupier plays `--rounds` rounds, then the summary is printed
    /// (exit status 1 if the archive does not verify).
    #[arg(long)]
    headless: bool,
    /// Rounds the headless croupier plays (with the console, the croupier decides).
    #[arg(long, default_value_t = 10, requires = "headless")]
    rounds: u64,
    /// Simulated players.
    #[arg(long, default_value_t = 20)]
    bots: usize,
    /// Seed of the shoes dealt and of the bots' decisions: the same seed replays them.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Decks in the shoe.
    #[arg(long, default_value_t = 8)]
    decks: u8,
    /// How long betting stays open before the table closes it (default: 15 with the
    /// console, 3 headless).
    #[arg(long, value_name = "SECONDS")]
    betting_seconds: Option<u32>,
    /// Each player's welcome credit at the table, in minor units.
    #[arg(long, default_value_t = 100_000)]
    welcome_credit: i64,
    /// Start no camera (no video, no round clips).
    #[arg(long)]
    no_video: bool,
    /// The croupier-console binary (default: the one beside this `banco`, else on PATH).
    #[arg(long, value_name = "FILE")]
    console: Option<PathBuf>,
}

impl TableDemoArgs {
    fn check(&self) -> anyhow::Result<()> {
        if self.bots == 0 {
            bail!("--bots 0: the demo needs at least one player");
        }
        if self.headless && self.rounds == 0 {
            bail!("--rounds 0: play at least one round");
        }
        if !(1..=8).contains(&self.decks) {
            bail!("--decks {}: a shoe has 1 to 8 decks", self.decks);
        }
        if self.betting_seconds == Some(0) {
            bail!("--betting-seconds 0: betting needs at least a second");
        }
        if self.welcome_credit <= 0 {
            bail!(
                "--welcome-credit {}: players need some money to bet",
                self.welcome_credit
            );
        }
        Ok(())
    }

    fn betting_seconds(&self) -> u32 {
        self.betting_seconds
            .unwrap_or(if self.headless { 3 } else { 15 })
    }
}

/// Where the services listen.
#[derive(Debug)]
struct Addresses {
    archive: String,
    broadcaster: String,
    /// The camera was started.
    video: bool,
}

/// Longest the headless croupier waits for the camera's first picture before it plays.
const VIDEO_WAIT: Duration = Duration::from_secs(60);

pub(crate) fn run(args: &TableDemoArgs) -> anyhow::Result<ExitCode> {
    args.check()?;
    let sim = std::env::current_exe().context("cannot tell where this banco-sim binary is")?;
    let banco = find_banco(&sim)?;
    let console = if args.headless {
        None
    } else {
        Some(find_console(args.console.as_deref(), &sim)?)
    };
    let data = DemoData::prepare(&args.data_dir)?;
    println!("demo: everything goes to {}", data.dir.display());
    let mut children = Children::new(&data.logs())?;
    let binaries = Binaries { banco, sim };
    let result = start_and_play(args, &data, &binaries, console.as_deref(), &mut children);
    let died = children.check().err();
    children.stop_all();
    let outcome = match (result, died) {
        (Ok(code), None) => Ok(code),
        (Ok(_), Some(died)) => Err(died),
        // A child that died explains a failure better than what its loss caused.
        (Err(e), Some(died)) => Err(died.context(format!("{e:#}"))),
        (Err(e), None) => Err(e),
    };
    print!("{}", how_to_audit(&data, &binaries.banco));
    outcome
}

fn start_and_play(
    args: &TableDemoArgs,
    data: &DemoData,
    binaries: &Binaries,
    console: Option<&Path>,
    children: &mut Children,
) -> anyhow::Result<ExitCode> {
    let addresses = start_services(args, data, binaries, children)?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(player_page(data, &addresses))?;
    let finished = match console {
        None => {
            let played = runtime.block_on(headless(args, data, &addresses))?;
            played.rounds
        }
        Some(console) => {
            interactive(args, data, &binaries.sim, console, &addresses, children)?;
            runtime
                .block_on(last_finished_round(data, &addresses))?
                .into_iter()
                .collect()
        }
    };
    // The bots print their final tally into their log as they stop.
    children.interrupt("bots")?;
    let summary = runtime.block_on(report::summarize(
        data,
        &format!("http://{}", addresses.archive),
        &format!("http://{}", addresses.broadcaster),
        TABLE,
        &finished,
        args.bots,
        args.welcome_credit,
    ))?;
    print!("{}", summary.render(CURRENCY));
    Ok(if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The player the demo opens the page for, beside the bots.
const PAGE_PLAYER: &str = "you";

/// Prints the player page's one-time link for [`PAGE_PLAYER`] (and keeps it in the data
/// folder), with how to make another.
async fn player_page(data: &DemoData, addresses: &Addresses) -> anyhow::Result<()> {
    let server = format!("http://{}", addresses.broadcaster);
    let player = data.player_token(PAGE_PLAYER)?;
    let token_file = data.token("you.token");
    std::fs::write(&token_file, format!("{player}\n"))
        .with_context(|| format!("could not write {}", token_file.display()))?;
    let service =
        std::fs::read_to_string(data.token("service.token")).context("the demo's service token")?;
    let url = banco::clients::launch_url(&server, service.trim(), &player).await?;
    let again = format!(
        "banco launch --server {server} --service-token-file {} --player-token-file {}",
        path_arg(&data.token("service.token")),
        path_arg(&token_file)
    );
    let note = data.dir.join("player-page.txt");
    std::fs::write(
        &note,
        format!("{url}\n(one use, 5 minutes; another: {again})\n"),
    )
    .with_context(|| format!("could not write {}", note.display()))?;
    println!("demo: player page for `{PAGE_PLAYER}` (open once, within 5 minutes): {url}");
    println!("demo:   another link: {again}");
    Ok(())
}

fn banco_command(banco: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(banco);
    command.args(args);
    command
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

/// Validator, archive, broadcaster, camera and bots.
fn start_services(
    args: &TableDemoArgs,
    data: &DemoData,
    binaries: &Binaries,
    children: &mut Children,
) -> anyhow::Result<Addresses> {
    let banco = &binaries.banco;
    let public_key = path_arg(&data.public_key());
    let validator = children.start_listening(
        "validator",
        banco_command(
            banco,
            &[
                "validator",
                "--listen",
                "127.0.0.1:0",
                "--public-key",
                &public_key,
            ],
        ),
        "validator listening on ",
    )?;
    println!("demo: validator on {validator}");
    let archive = children.start_listening(
        "archive",
        banco_command(
            banco,
            &[
                "archive",
                "--db",
                &format!("sqlite://{}", data.archive_db().display()),
                "--listen",
                "127.0.0.1:0",
                "--public-key",
                &public_key,
                "--table-key-pub",
                &path_arg(&data.table_key_pub()),
            ],
        ),
        "archive listening on ",
    )?;
    println!(
        "demo: archive on {archive} ({})",
        data.archive_db().display()
    );
    let broadcaster = children.start_listening(
        "broadcaster",
        banco_command(
            banco,
            &[
                "broadcaster",
                "--listen",
                "127.0.0.1:0",
                "--table",
                TABLE,
                "--data-dir",
                &path_arg(&data.dir.join("table")),
                "--validator",
                &format!("http://{validator}"),
                "--archive",
                &format!("http://{archive}"),
                "--table-key",
                &path_arg(&data.table_key()),
                "--public-key",
                &public_key,
                "--service-token-file",
                &path_arg(&data.token("service.token")),
                "--decks",
                &args.decks.to_string(),
                "--pacing",
                "live",
                "--betting-seconds",
                &args.betting_seconds().to_string(),
                "--welcome-credit",
                &args.welcome_credit.to_string(),
            ],
        ),
        "broadcaster listening on ",
    )?;
    println!(
        "demo: broadcaster on {broadcaster} (table {TABLE}, {} decks, betting closes after {} s)",
        args.decks,
        args.betting_seconds()
    );
    let server = format!("http://{broadcaster}");
    let mut video = false;
    if args.no_video {
        println!("demo: video: not started (--no-video)");
    } else if let Some(why) = why_no_video() {
        println!("demo: video: skipped, {why}");
    } else {
        children.start(
            "stream",
            banco_command(
                banco,
                &[
                    "stream",
                    "--table",
                    TABLE,
                    "--server",
                    &server,
                    "--token-file",
                    &path_arg(&data.token("camera.token")),
                    "--width",
                    "640",
                    "--height",
                    "360",
                    "--fps",
                    "25",
                    "--bitrate-kbps",
                    "800",
                    "--keyframe-interval",
                    "25",
                ],
            ),
        )?;
        println!("demo: video: test pattern with the round overlay, 640x360 at 25 fps");
        video = true;
    }
    children.start(
        "bots",
        banco_command(
            &binaries.sim,
            &[
                "bots",
                "--server",
                &server,
                "--table",
                TABLE,
                "--signing-key",
                &path_arg(&data.signing_key()),
                "--players",
                &args.bots.to_string(),
                "--seed",
                &args.seed.to_string(),
            ],
        ),
    )?;
    println!(
        "demo: {} bots (bot-001 …) bet when betting opens",
        args.bots
    );
    println!("demo: logs in {}", data.logs().display());
    Ok(Addresses {
        archive,
        broadcaster,
        video,
    })
}

/// Why `banco stream` cannot run here, if it cannot.
#[cfg(feature = "gstreamer")]
fn why_no_video() -> Option<String> {
    let missing = VIDEO_ELEMENTS
        .into_iter()
        .find(|e| !banco_streaming::has_element(e))
        .or_else(|| {
            let encoder = ["x264enc", "openh264enc"]
                .into_iter()
                .any(banco_streaming::has_element);
            (!encoder).then_some("x264enc")
        })?;
    Some(format!(
        "the GStreamer element `{missing}` is not installed (`cargo xtask setup` installs the \
         plugins)"
    ))
}

#[cfg(not(feature = "gstreamer"))]
fn why_no_video() -> Option<String> {
    Some("this build of banco-sim left out the `gstreamer` feature".to_owned())
}

/// The binaries the demo starts: `banco` for the services, `banco-sim` (this one) for the
/// bots and the shoe reader.
#[derive(Debug)]
struct Binaries {
    banco: PathBuf,
    sim: PathBuf,
}

/// The `banco` binary beside `banco-sim` (cargo builds both into one folder), or on PATH.
fn find_banco(sim: &Path) -> anyhow::Result<PathBuf> {
    find(sim, "banco", "build it (`cargo build -p banco-cli`)")
}

/// The croupier-console binary: as given, beside `banco-sim` (cargo builds both into one
/// folder), or on PATH.
fn find_console(given: Option<&Path>, sim: &Path) -> anyhow::Result<PathBuf> {
    if let Some(path) = given {
        if !path.is_file() {
            bail!("--console {}: no such file", path.display());
        }
        return Ok(path.to_owned());
    }
    find(
        sim,
        "croupier-console",
        "build it (`cargo build -p croupier-console`), give --console FILE, or use --headless",
    )
}

/// The console in the foreground, fed by `banco-sim shoe-sim`, until the croupier quits it.
fn interactive(
    args: &TableDemoArgs,
    data: &DemoData,
    sim: &Path,
    console: &Path,
    addresses: &Addresses,
    children: &mut Children,
) -> anyhow::Result<()> {
    let server = format!("http://{}", addresses.broadcaster);
    let croupier_token = path_arg(&data.token("croupier.token"));
    // The shoe reader and the console both act for the croupier at this table.
    let croupier = [
        "--server",
        &server,
        "--table",
        TABLE,
        "--token-file",
        &croupier_token,
    ];
    let mut shoe_sim = banco_command(sim, &["shoe-sim"]);
    shoe_sim.args(croupier).args([
        "--seed",
        &args.seed.to_string(),
        "--decks",
        &args.decks.to_string(),
        "--to",
        "tcp://127.0.0.1:0",
        "--listen",
    ]);
    let scanner = children.start_listening("shoe-sim", shoe_sim, "shoe-sim listening on ")?;
    println!("demo: the shoe reader (banco-sim shoe-sim) serves cards on {scanner}");
    println!(
        "demo: starting the croupier console. Press N (new shoe: the reader gives the burn \
         card), O (open betting; it closes by itself), watch the reader deal, R (confirm the \
         result), O again… ? lists every key, Ctrl-Q quits and stops the demo."
    );
    std::thread::sleep(Duration::from_secs(2));
    let status = Command::new(console)
        .args(croupier)
        .args(["--scanner", &scanner])
        .status()
        .with_context(|| format!("could not run {}", console.display()))?;
    if !status.success() {
        bail!("croupier-console ended with {status}");
    }
    Ok(())
}

/// The headless croupier plays its rounds; a Ctrl-C stops it.
async fn headless(
    args: &TableDemoArgs,
    data: &DemoData,
    addresses: &Addresses,
) -> anyhow::Result<dealer::Played> {
    let client = croupier_client(data, addresses)?;
    let (tx, rx) = watch::channel(None);
    let watcher = tokio::spawn(crate::shoe_sim::watch_table(
        client.clone(),
        TABLE.to_owned(),
        tx,
    ));
    let mut dealer = Dealer::new(
        client,
        TABLE,
        args.decks,
        Duration::from_secs(u64::from(args.betting_seconds())),
        args.seed,
        rx,
    );
    if addresses.video {
        wait_for_video(data, addresses).await?;
    }
    println!(
        "demo: headless: the built-in croupier plays {} rounds",
        args.rounds
    );
    let played = tokio::select! {
        played = dealer.play(args.rounds) => played,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    watcher.abort();
    played
}

/// Waits (a while at most) for the camera's first picture to reach the broadcaster, so
/// that every round played is filmed and has its clip.
async fn wait_for_video(data: &DemoData, addresses: &Addresses) -> anyhow::Result<()> {
    let token = banco_auth::BearerToken::new(&data.player_token("demo-viewer")?)
        .context("token for demo-viewer")?;
    let channel =
        banco::clients::croupier::endpoint(&format!("http://{}", addresses.broadcaster), None)?
            .connect_lazy();
    let mut viewer = PlayerServiceClient::with_interceptor(channel, token);
    let first_unit = async {
        let mut units = viewer
            .watch_video(pb::WatchVideoRequest {
                table_id: TABLE.to_owned(),
            })
            .await?
            .into_inner();
        units.message().await
    };
    match tokio::time::timeout(VIDEO_WAIT, first_unit).await {
        Ok(Ok(Some(_))) => println!("demo: video: the camera's picture reaches the table"),
        Ok(Ok(None)) | Ok(Err(_)) | Err(_) => println!(
            "demo: video: no picture from the camera after {} s; rounds played before it \
             has one get no clip (see {})",
            VIDEO_WAIT.as_secs(),
            data.logs().join("stream.log").display()
        ),
    }
    Ok(())
}

fn croupier_client(
    data: &DemoData,
    addresses: &Addresses,
) -> anyhow::Result<banco::clients::croupier::Client> {
    let token = banco_auth::client::read_token_file(&data.token("croupier.token"))?.bearer;
    let channel =
        banco::clients::croupier::endpoint(&format!("http://{}", addresses.broadcaster), None)?
            .connect_lazy();
    Ok(TableServiceClient::with_interceptor(channel, token))
}

/// The last round the console finished (settled or voided), which the archive must have
/// (the outbox delivers rounds in order, so then it has every one before it).
async fn last_finished_round(
    data: &DemoData,
    addresses: &Addresses,
) -> anyhow::Result<Option<String>> {
    let mut client = croupier_client(data, addresses)?;
    let state = banco::clients::croupier::current_state(&mut client, TABLE).await?;
    let finished = matches!(
        pb::TablePhase::try_from(state.phase),
        Ok(pb::TablePhase::Settled | pb::TablePhase::Voided)
    );
    Ok((finished && !state.round_id.is_empty()).then_some(state.round_id))
}

/// Where the data is and how an auditor checks it once the demo has stopped: commands
/// that work as printed, pasted one by one into a shell (this very `banco`, which may not
/// be on PATH; the data's absolute paths, quoted when they must be).
fn how_to_audit(data: &DemoData, banco: &Path) -> String {
    let dir = data.dir.display();
    let banco = shell_word(&banco.display().to_string());
    let at = |path: &Path| shell_word(&path.display().to_string());
    let db = shell_word(&format!("sqlite://{}", data.archive_db().display()));
    let token = at(&data.token("auditor.token"));
    format!(
        "\nThe demo has stopped; its data stays in {dir} until the next run.\n\
         To audit it, start the archive on it and ask:\n  \
         {banco} archive --db {db} --listen 127.0.0.1:7103 --public-key {} --table-key-pub {} &\n  \
         {banco} audit --token-file {token} verify\n  \
         {banco} audit --token-file {token} export | {banco} rules judge\n",
        at(&data.public_key()),
        at(&data.table_key_pub()),
    )
}

/// `text` as one word of a POSIX shell: as it is when it holds nothing the shell reads
/// specially, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:+=@,%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use clap::Parser;

    use super::TableDemoArgs;

    #[derive(Debug, Parser)]
    struct Demo {
        #[command(flatten)]
        args: TableDemoArgs,
    }

    #[test]
    fn paths_are_quoted_only_when_a_shell_would_misread_them() {
        assert_eq!(
            super::shell_word("/tmp/demo-data/archive.db"),
            "/tmp/demo-data/archive.db"
        );
        assert_eq!(super::shell_word("sqlite:///a/b.db"), "sqlite:///a/b.db");
        assert_eq!(super::shell_word("/tmp/my demo"), "'/tmp/my demo'");
        assert_eq!(super::shell_word("/tmp/it's"), "'/tmp/it'\\''s'");
        assert_eq!(super::shell_word(""), "''");
    }

    #[test]
    fn rounds_is_refused_without_headless_and_taken_with_it() {
        let err = Demo::try_parse_from(["demo", "--rounds", "5"]).unwrap_err();
        assert!(err.to_string().contains("--headless"), "{err}");
        let demo = Demo::try_parse_from(["demo", "--headless", "--rounds", "5"]).unwrap();
        assert_eq!(demo.args.rounds, 5);
        // The default alone does not ask for --headless.
        assert!(Demo::try_parse_from(["demo"]).is_ok());
    }
}
