//! The croupier console as a croupier uses it: the real validator and broadcaster,
//! `croupier-console` running in tmux with its scanner fed by `banco-sim shoe-sim` over a Unix
//! socket, bets from `banco player`, and the screen read with `capture-pane`.
//!
//! Three full rounds: new shoe and burn (scanned), open betting, a bet, close betting, the
//! cards scanned as the table asks for them (with misreads the console refuses), the result
//! on screen checked against the table's own state, confirmed and paid (the player's
//! balance checked against the results shown). A fourth round: K then X is refused as no
//! suit and betting stays open; the last card is taken back (U), and the reader reads it
//! again as it comes out of the shoe again. Then the link is cut mid-hand: two cards typed
//! while it is down are held, shown as pending, and sent once the broadcaster is back on
//! the same address; the table has each exactly once.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use banco_e2e::procs::{BroadcasterSetup, Keys, start_validator};
use banco_e2e::{banco, banco_sim, croupier_console_path, poll_blocking};
use banco_rules::Card;

/// 1,000.00 credited on the first bet.
const WELCOME: i64 = 100_000;
const WAIT: Duration = Duration::from_secs(60);

/// A tmux server of this test's own, killed when dropped (pass or fail).
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `command` in a 120×40 window; when it ends, its exit code stays on screen.
    fn start(command: &str) -> Tmux {
        let installed = Command::new("tmux").arg("-V").output();
        assert!(
            installed.is_ok_and(|o| o.status.success()),
            "tmux is not installed: `cargo xtask setup` installs it (apt-get install tmux)"
        );
        let socket = format!(
            "banco-console-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        );
        let tmux = Tmux { socket };
        let shell = format!("{command}; echo CONSOLE EXITED $?; sleep 600");
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "sh",
            "-c",
            &shell,
        ]);
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend(keys);
        assert!(self.run(&args).status.success());
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p"]).stdout).into_owned()
    }

    /// Polls the screen until `ok` holds; fails with the screen and `why`.
    fn wait(&self, why: &str, ok: impl Fn(&str) -> bool) -> String {
        let screen = poll_blocking(
            WAIT,
            Duration::from_millis(100),
            || self.screen(),
            |s| ok(s),
        );
        assert!(
            ok(&screen),
            "waited {WAIT:?} for {why}; the screen:\n{screen}"
        );
        screen
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait(&format!("`{text}`"), |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `banco-sim shoe-sim` listening on a Unix socket for the console. Killed when dropped.
struct ShoeSim {
    child: Child,
    log: PathBuf,
}

impl ShoeSim {
    fn start(url: &str, token: &Path, socket: &Path, log: &Path) -> ShoeSim {
        let mut child = banco_sim()
            .args(["shoe-sim", "--server", url, "--token-file"])
            .arg(token)
            .args([
                "--seed",
                "11",
                "--delay-ms",
                "40-120",
                "--misread-rate",
                "0.5",
            ])
            .arg("--to")
            .arg(format!("unix://{}", socket.display()))
            .arg("--listen")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("shoe-sim listening on unix://"), "{line}");
        ShoeSim {
            child,
            log: log.to_owned(),
        }
    }

    /// The lines it logged that were misreads.
    fn misreads(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("shoe-sim: misread: "))
            .map(str::to_owned)
            .collect()
    }

    /// Each card it read for `round`, in order: `(index, card)`, a card read again after
    /// an undo listed again.
    fn reads(&self, round: &str) -> Vec<(usize, String)> {
        let prefix = format!("shoe-sim: {round}: card ");
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .filter_map(|l| l.split_once(" is "))
            .map(|(n, card)| (n.parse().unwrap(), card.to_owned()))
            .collect()
    }

    /// The cards of `round` as the reader last read them, in dealing order.
    fn cards(&self, round: &str) -> Vec<String> {
        let mut cards = Vec::new();
        for (n, card) in self.reads(round) {
            cards.truncate(n - 1);
            cards.push(card);
        }
        cards
    }
}

impl Drop for ShoeSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_ok(mut command: Command) -> String {
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{command:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The table's state as `banco croupier state` prints it.
fn table_state(url: &str, token: &Path) -> String {
    let mut command = banco();
    command
        .args(["croupier", "--server", url, "--token-file"])
        .arg(token)
        .arg("state");
    run_ok(command)
}

/// The round id in `banco croupier state`'s `round T01-S0001-H001` line.
fn state_round(state: &str) -> String {
    let line = state.lines().find(|l| l.starts_with("round ")).unwrap();
    line["round ".len()..].trim().to_owned()
}

/// Every card in `banco croupier state`'s `cards P:7C B:QH …` line, in dealing order.
fn state_cards(state: &str) -> Vec<String> {
    let line = state.lines().find(|l| l.starts_with("cards ")).unwrap();
    line.split_whitespace()
        .filter_map(|w| w.strip_prefix("P:").or_else(|| w.strip_prefix("B:")))
        .map(str::to_owned)
        .collect()
}

/// The cards of one side in `banco croupier state`'s `cards P:7C B:QH …` line, as the
/// console draws them (`7♣`).
fn side_cards(state: &str, side: char) -> Vec<String> {
    let line = state.lines().find(|l| l.starts_with("cards ")).unwrap();
    line.split_whitespace()
        .filter_map(|w| w.strip_prefix(&format!("{side}:")))
        .map(|c| Card::parse(c).unwrap().pretty())
        .collect()
}

/// `RESULT: BANKER WINS · Player 5 – Banker 7` → ("BANKER", player total, banker total).
fn screen_result(screen: &str) -> (String, u32, u32) {
    let at = screen.find("RESULT: ").unwrap();
    let words: Vec<&str> = screen[at + 8..]
        .split_whitespace()
        .filter(|w| !matches!(*w, "·" | "WINS"))
        .take(6)
        .collect();
    let n = |w: &str| w.parse::<u32>().unwrap();
    match words.as_slice() {
        [
            winner @ ("BANKER" | "PLAYER" | "TIE"),
            "Player",
            p,
            "–",
            "Banker",
            b,
        ] => ((*winner).to_owned(), n(p), n(b)),
        other => panic!("not a result: {other:?}"),
    }
}

/// `result: Banker (Player 5 – Banker 7)` from `banco croupier state`.
fn state_result(state: &str) -> (String, u32, u32) {
    let line = state.lines().find(|l| l.starts_with("result: ")).unwrap();
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    // result: Banker Player 5 – Banker 7 …
    (
        words[1].to_uppercase(),
        words[3].parse().unwrap(),
        words[6].parse().unwrap(),
    )
}

/// What a round's bets return on top of the stakes, in cents, by the paytable (Banker
/// 0.95:1, Player 1:1, Tie 8:1; Player and Banker push on a tie).
fn net(bets: &[(&str, i64)], winner: &str) -> i64 {
    bets.iter()
        .map(|&(on, stake)| match (on, winner) {
            ("banker", "BANKER") => stake * 95 / 100,
            ("player", "PLAYER") => stake,
            ("tie", "TIE") => stake * 8,
            ("banker" | "player", "TIE") => 0,
            _ => -stake,
        })
        .sum()
}

fn cents(euros: &str) -> i64 {
    let euros = euros.trim_start_matches(|c: char| !c.is_ascii_digit());
    let (units, frac) = euros.split_once('.').unwrap();
    units.replace(',', "").parse::<i64>().unwrap() * 100 + frac.parse::<i64>().unwrap()
}

#[test]
fn three_rounds_with_a_scanner_then_a_lost_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let keys = Keys::generate(&path.join("keys"));
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &path.join("data"));
    setup.welcome_credit = WELCOME;
    let mut broadcaster = setup.start();
    let url = broadcaster.url();
    let token = |name: &str, role: &str| {
        let file = path.join(format!("{name}.token"));
        std::fs::write(&file, keys.issue(role, name, "1h")).unwrap();
        file
    };
    let console_token = token("maria", "croupier");
    let reader_token = token("shoe-reader", "croupier");
    let alice = token("alice", "player");

    let socket = path.join("shoe.sock");
    let sim = ShoeSim::start(&url, &reader_token, &socket, &path.join("shoe-sim.log"));
    let console = format!(
        "{} --server {url} --token-file {} --scanner unix://{} 2>{}",
        croupier_console_path().display(),
        console_token.display(),
        socket.display(),
        path.join("console.err").display()
    );
    let tmux = Tmux::start(&console);
    let screen = tmux.wait("the console online with its scanner", |s| {
        s.contains("NEW SHOE") && s.contains("● online") && s.contains("scanner ok")
    });
    assert!(screen.contains("croupier maria"), "{screen}");

    // A new shoe; the reader gives its burn card, and betting can open.
    tmux.keys(&["n"]);
    tmux.wait_for("OPEN BETTING");

    let rounds: [&[(&str, i64)]; 3] = [
        &[("banker", 2_500)],
        &[("player", 1_000)],
        &[("banker", 2_000), ("tie", 500)],
    ];
    let mut expected = WELCOME;
    let mut winners = Vec::new();
    for bets in rounds {
        tmux.keys(&["o"]);
        tmux.wait_for("BETTING OPEN");
        let mut bet = banco();
        bet.args(["player", "--server", &url, "--token-file"])
            .arg(&alice)
            .arg("bet");
        for (on, stake) in bets {
            bet.arg(format!("{on}={}.{:02}", stake / 100, stake % 100));
        }
        run_ok(bet);
        tmux.wait("the bet on screen", |s| s.contains("bettors 1 "));
        tmux.keys(&["x"]);
        let screen = tmux.wait_for("RESULT: ");
        let state = table_state(&url, &console_token);
        let shown = screen_result(&screen);
        assert_eq!(shown, state_result(&state), "{screen}\n{state}");
        // The reader's cards, and only those: every misread was refused, nothing sent.
        assert_eq!(
            state_cards(&state),
            sim.cards(&state_round(&state)),
            "{state}"
        );
        // The hands on screen are the table's cards.
        for (side, label) in [('P', "PLAYER"), ('B', "BANKER")] {
            let cards = side_cards(&state, side).join("  ");
            assert!(
                screen.contains(&cards),
                "{label} {cards} not on screen:\n{screen}"
            );
        }
        tmux.keys(&["r"]);
        tmux.wait_for(", paid · ");
        expected += net(bets, &shown.0);
        winners.push(shown.0);
    }

    // The roads count what was shown, Player first.
    let screen = tmux.screen();
    let count = |w: &str| winners.iter().filter(|x| *x == w).count();
    let roads = format!(
        "Player {} · Banker {} · Tie {}",
        count("PLAYER"),
        count("BANKER"),
        count("TIE")
    );
    assert!(screen.contains(&roads), "{roads}\n{screen}");

    // Alice was paid what the results on screen say.
    let mut balance = banco();
    balance
        .args(["player", "--server", &url, "--token-file"])
        .arg(&alice)
        .arg("balance");
    let balance = run_ok(balance);
    let euros = balance
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("{balance}"));
    assert_eq!(cents(euros), expected, "{balance} after {winners:?}");

    // The reader misread now and then (and each round's cards were its real ones only).
    assert!(!sim.misreads().is_empty(), "the seed gave no misread");

    // K then X: X is no suit, so it is refused and betting stays open.
    tmux.keys(&["o"]);
    tmux.wait_for("BETTING OPEN");
    tmux.keys(&["K", "X"]);
    let screen = tmux.wait_for("X is not a suit: K needs its suit");
    assert!(screen.contains("BETTING OPEN"), "{screen}");
    let state = table_state(&url, &console_token);
    assert!(state.contains("phase betting open"), "{state}");
    tmux.keys(&["Escape"]);
    tmux.wait("the rank dropped", |s| s.contains(" card _"));

    // The last card taken back: the reader reads the same card again as it comes out.
    tmux.keys(&["x"]);
    tmux.wait_for("RESULT: ");
    let before = table_state(&url, &console_token);
    let round = state_round(&before);
    let cards = state_cards(&before);
    let last = cards.last().unwrap().clone();
    tmux.keys(&["u"]);
    tmux.wait_for(&format!(
        "Take back {}",
        Card::parse(&last).unwrap().pretty()
    ));
    tmux.keys(&["misread", "Enter"]);
    let read_again =
        |reads: &Vec<(usize, String)>| reads.iter().filter(|(n, _)| *n == cards.len()).count() >= 2;
    let reads = poll_blocking(
        WAIT,
        Duration::from_millis(100),
        || sim.reads(&round),
        read_again,
    );
    assert!(
        read_again(&reads),
        "the reader did not read {last} again after the undo: {reads:?}\n{}",
        tmux.screen()
    );
    // The reader logs a card before it writes it: the table has it once its hand is whole.
    let after = poll_blocking(
        WAIT,
        Duration::from_millis(100),
        || table_state(&url, &console_token),
        |state| state_cards(state).len() == cards.len(),
    );
    assert_eq!(
        state_cards(&after).len(),
        cards.len(),
        "the card read again never reached the table:\n{after}\n{}",
        tmux.screen()
    );
    assert_eq!(state_cards(&after), cards, "{before}\n{after}");
    tmux.wait_for("RESULT: ");
    tmux.keys(&["r"]);
    tmux.wait_for(", paid · ");
    drop(sim);

    // The link goes mid-hand: typed cards are held, then sent once, in order.
    tmux.keys(&["o"]);
    tmux.wait_for("BETTING OPEN");
    tmux.keys(&["x"]);
    tmux.wait_for("PLAYER CARD");
    let addr = broadcaster.addr().to_owned();
    broadcaster.kill();
    tmux.wait_for("DOWN");
    tmux.keys(&["9", "h", "2", "c"]);
    tmux.wait_for("pending (held until the link is back): 9H, 2C");
    setup.listen = addr;
    broadcaster = setup.start();
    let screen = tmux.wait("the held cards on the table", |s| {
        s.contains("9♥") && s.contains("2♣") && !s.contains("pending")
    });
    assert!(screen.contains("PLAYER CARD"), "{screen}");
    let state = table_state(&broadcaster.url(), &console_token);
    assert!(state.contains("cards P:9H B:2C  ("), "{state}");

    // Quitting mid-round is asked, then done.
    tmux.keys(&["C-q"]);
    tmux.wait_for("Quit? round ");
    tmux.keys(&["y"]);
    tmux.wait_for("CONSOLE EXITED 0");
}
