//! The player page in a real headless Chromium, against real services: the validator,
//! the broadcaster serving the page and gRPC-Web, and `banco stream`'s test pattern as
//! the camera. The page is opened with a launch link from `banco launch`, through a TCP
//! proxy the test can cut, and checked as a player uses it: the lobby, decoded video, a
//! bet by clicks and one by keys accepted and settled to the cent, a refusal with its
//! reason, the roads against `banco roads`, and a dropped connection resumed with nothing
//! lost or shown twice. Screenshots at 1280×800 and 390×844 go to
//! `$CARGO_TARGET_DIR/web-artifacts/`; the load-to-first-picture and capture-to-display
//! figures are printed (run with `--nocapture`).
#![allow(clippy::unwrap_used)]

use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use banco_e2e::banco;
use banco_e2e::clients::{Cmd, Croupier};
use banco_e2e::procs::{BroadcasterSetup, Keys, channel, start_validator};
use banco_e2e::webdriver::{self, Browser};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

const ARROW_UP: &str = "\u{E013}";
const ENTER: &str = "\u{E007}";
const DELETE: &str = "\u{E017}";
const WAIT: Duration = Duration::from_secs(30);

/// A TCP proxy in front of the broadcaster whose links the test can cut: while down it
/// closes every link and refuses new ones, as a dropped network would.
struct Proxy {
    addr: std::net::SocketAddr,
    down: Arc<AtomicBool>,
    links: Arc<tokio::sync::Notify>,
}

impl Proxy {
    async fn start(backend: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let links = Arc::new(tokio::sync::Notify::new());
        let (d, l) = (Arc::clone(&down), Arc::clone(&links));
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if d.load(Ordering::SeqCst) {
                    continue;
                }
                let backend = backend.clone();
                let cut = Arc::clone(&l);
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&backend).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        () = cut.notified() => {}
                    }
                });
            }
        });
        Proxy { addr, down, links }
    }

    fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        self.links.notify_waiters();
    }

    fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

struct Camera(Child);

impl Drop for Camera {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Cards that deal a natural for each result, in dealing order (P, B, P, B).
fn cards_for(result: char) -> [&'static str; 4] {
    match result {
        // Player 9, Banker 5.
        'P' => ["4C", "2D", "5H", "3S"],
        // Player 5, Banker 9.
        'B' => ["2C", "4D", "3H", "5S"],
        // Player 8, Banker 8.
        _ => ["4H", "3C", "4S", "5D"],
    }
}

async fn play(croupier: &mut Croupier, result: char, open: bool) -> String {
    if open {
        croupier.ok(Cmd::OpenBetting).await;
    }
    croupier.ok(Cmd::CloseBetting).await;
    for card in cards_for(result) {
        croupier.ok(Cmd::Deal(card.into())).await;
    }
    let state = croupier.state().await.unwrap();
    let round = state.round_id.clone();
    croupier.ok(Cmd::Confirm(round.clone())).await;
    round
}

/// A board's marks, as (row, column, mark and tie count).
type Cells = Vec<(usize, usize, String)>;

/// `banco roads RESULTS`: each board by name, and the counts.
fn banco_roads(results: &str) -> (Vec<(String, Cells)>, String) {
    let out = banco().args(["roads", results]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut boards = Vec::new();
    let mut lines = text.lines().peekable();
    let mut counts = String::new();
    while let Some(line) = lines.next() {
        let name = [
            "Bead plate",
            "Big Road",
            "Big Eye Boy",
            "Small Road",
            "Cockroach Pig",
        ]
        .into_iter()
        .find(|n| line.starts_with(n));
        if let Some(name) = name {
            let mut cells = Vec::new();
            for row in 0..6 {
                let grid = lines.next().unwrap();
                for (col, token) in grid.split_whitespace().enumerate() {
                    if token != "." {
                        cells.push((row, col, token.to_owned()));
                    }
                }
            }
            boards.push((name.to_owned(), cells));
        } else if line.starts_with("Banker ") {
            counts = line
                .split_whitespace()
                .filter(|w| w.parse::<u32>().is_ok())
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    (boards, counts)
}

/// The page's cells of the board `kind`, as `banco roads` prints them: each where the
/// browser draws it (its grid row and column), which must be the place it carries.
fn page_cells(browser: &Browser, kind: &str) -> Cells {
    let cells = browser.run(
        "return [...document.querySelectorAll(`[data-road='${arguments[0]}'] .mark`)].map(c => \
         [getComputedStyle(c).gridRowStart, getComputedStyle(c).gridColumnStart, c.dataset.row, c.dataset.col, \
          c.dataset.mark + (Number(c.dataset.ties || 0) > 0 ? c.dataset.ties : '')]);",
        &[Value::from(kind)],
    );
    let mut cells: Cells = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let line = |at: usize| -> usize {
                let drawn = c[at].as_str().unwrap();
                let line: usize = drawn.parse().unwrap_or_else(|_| {
                    panic!("{kind}: a mark is not placed on the board (grid line `{drawn}`): {c}")
                });
                assert_eq!(
                    (line - 1).to_string(),
                    c[at + 2].as_str().unwrap(),
                    "{kind}: drawn elsewhere than its place: {c}"
                );
                line - 1
            };
            (line(0), line(1), c[4].as_str().unwrap().to_owned())
        })
        .collect();
    cells.sort();
    cells
}

fn text(browser: &Browser, css: &str) -> String {
    browser
        .run(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';",
            &[Value::from(css)],
        )
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn decision(browser: &Browser, kind: u32, state: &str, what: &str) -> String {
    let script = format!(
        "const e = document.querySelector(\".decisions [data-kind='{kind}'][data-state='{state}']\"); return e ? e.textContent : '';"
    );
    browser
        .wait_for(what, WAIT, &script)
        .as_str()
        .unwrap()
        .to_owned()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_bets_watches_and_reconnects_in_chromium() {
    assert!(
        webdriver::available(),
        "Chromium and chromedriver are needed: `cargo xtask setup` installs them"
    );
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.table = "T01=5-300".into();
    setup.welcome_credit = 100_000;
    let broadcaster = setup.start();
    let proxy = Proxy::start(broadcaster.addr().to_owned()).await;
    let page = format!("http://{}", proxy.addr);

    // The page is built into the broadcaster (cargo xtask web, which cargo xtask test runs).
    let index = http_get(broadcaster.addr(), "/").await;
    assert!(
        index.starts_with("HTTP/1.1 200"),
        "the page is not built in: {index}"
    );

    let camera_token = dir.path().join("camera.token");
    std::fs::write(&camera_token, keys.issue("service", "camera-T01", "1h")).unwrap();
    let _camera = Camera(
        banco()
            .args([
                "stream",
                "--table",
                "T01",
                "--server",
                &broadcaster.url(),
                "--token-file",
            ])
            .arg(&camera_token)
            .args([
                "--width",
                "640",
                "--height",
                "360",
                "--fps",
                "25",
                "--keyframe-interval",
                "25",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut croupier = Croupier::new(
        channel(&broadcaster.url()).await,
        &keys.issue("croupier", "maria", "1h"),
        "T01",
        "web",
    );
    croupier.ok(Cmd::OpenShoe).await;
    croupier.ok(Cmd::Burn("7H".into())).await;

    // A launch link, as the operator's lobby makes one, opened through the proxy.
    let player_token = dir.path().join("pia.token");
    std::fs::write(&player_token, keys.issue("player", "pia", "1h")).unwrap();
    let url = launch_link(&page, &keys, &player_token);

    let artifacts = webdriver::artifacts();
    let browser = tokio::task::block_in_place(|| Browser::start(1280, 800));
    browser.goto(&url);
    // The lobby, and the code gone from the address.
    browser.wait_for(
        "the lobby",
        WAIT,
        "return document.querySelector(\"[data-table='T01'] button\")",
    );
    let address = browser.run("return location.href", &[]);
    assert!(!address.as_str().unwrap().contains("code="), "{address}");
    assert!(text(&browser, "#who").contains("pia"));
    assert_eq!(
        browser.screenshot(&artifacts.join("lobby-1280x800.png")),
        (1280, 800)
    );
    // Used once: the same link again opens nothing.
    let again = http_post(
        &proxy.addr.to_string(),
        "/launch/exchange",
        &format!("{{\"code\": \"{}\"}}", url.split("code=").nth(1).unwrap()),
    )
    .await;
    assert!(again.starts_with("HTTP/1.1 404"), "{again}");

    browser.click("[data-table='T01'] button");
    // Video: decoded frames on the canvas, their count growing, the picture not blank.
    let first = browser.wait_for(
        "a decoded frame",
        WAIT,
        "return Number(document.querySelector('canvas').dataset.frames || 0)",
    );
    let first = first.as_f64().unwrap();
    browser.wait_for(
        "more frames",
        WAIT,
        &format!("return Number(document.querySelector('canvas').dataset.frames || 0) > {first}"),
    );
    let colours = browser.run(
        "const c = document.querySelector('canvas'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; \
         const seen = new Set(); for (let i = 0; i < d.length; i += 4 * 97) seen.add(d[i] << 16 | d[i+1] << 8 | d[i+2]); return seen.size;",
        &[],
    );
    assert!(
        colours.as_u64().unwrap() > 20,
        "the canvas looks blank: {colours} colours"
    );

    // Betting opens; a bet by clicks: €25 chip, Banker twice, a right click takes one off.
    croupier.ok(Cmd::OpenBetting).await;
    browser.wait_for(
        "betting open",
        WAIT,
        "return document.querySelector('.phase-line').dataset.phase === '2'",
    );
    browser.click("[data-chip='2500']");
    browser.click(".spot[data-kind='2']");
    browser.click(".spot[data-kind='2']");
    browser.right_click(".spot[data-kind='2']");
    let pending = browser.run(
        "return document.querySelector(\".spot[data-kind='2']\").dataset.pending",
        &[],
    );
    assert_eq!(pending, "2500");
    browser.click("[data-action='place']");
    let banker = decision(&browser, 2, "accepted", "the Banker bet accepted");
    assert!(banker.contains("€25.00"), "{banker}");

    // The raise to the minimum is shown before sending: €1 on Player Pair, then Del.
    browser.click("[data-chip='100']");
    browser.click(".spot[data-kind='4']");
    let preview = text(&browser, ".preview");
    assert!(preview.contains("raised to the €5.00 minimum"), "{preview}");
    browser.keys(&[DELETE]);
    assert_eq!(text(&browser, ".preview"), "");

    // A bet by keys: 1 puts the €25 chip on Player, ↑ adds €1, Enter sends it.
    browser.click("[data-chip='2500']");
    browser.run("document.activeElement.blur()", &[]);
    browser.keys(&["1", ARROW_UP, ENTER]);
    let player = decision(&browser, 1, "accepted", "the Player bet accepted");
    assert!(player.contains("€26.00"), "{player}");

    // A refusal shows its reason: €500 on Tie is over the €300 maximum.
    browser.click("[data-chip='50000']");
    browser.click(".spot[data-kind='3']");
    assert!(text(&browser, ".preview").contains("over the €300.00 maximum"));
    browser.click("[data-action='place']");
    let tie = decision(&browser, 3, "refused", "the Tie bet refused");
    assert!(
        tie.contains("refused") && tie.to_lowercase().contains("max"),
        "{tie}"
    );

    // Settled: Banker €25 lost, Player €26 won 1:1: €1,000 − 51 + 52.
    let round = play(&mut croupier, 'P', false).await;
    browser.wait_for(
        "the settlement",
        WAIT,
        "return document.querySelector('.settlement').textContent",
    );
    let settled = text(&browser, ".settlement");
    assert!(
        settled.contains("€51.00") && settled.contains("€52.00") && settled.contains("+€1.00"),
        "{settled}"
    );
    browser.wait_for(
        "the balance",
        WAIT,
        "return document.querySelector('.balance').dataset.available === '100100'",
    );
    assert!(text(&browser, ".balance").contains("€1,001.00 available"));
    let outcome = text(&browser, ".outcome");
    assert!(
        outcome.contains("Player wins")
            && outcome.contains("Player 9 – Banker 5")
            && outcome.contains("Natural"),
        "{outcome}"
    );
    browser.wait_for(
        "my bets",
        WAIT,
        &format!("return document.querySelector(\".my-bets [data-round='{round}']\")"),
    );
    browser.run("window.scrollTo(0, 0)", &[]);
    assert_eq!(
        browser.screenshot(&artifacts.join("table-1280x800.png")),
        (1280, 800)
    );

    // More rounds; the roads are then what `banco roads` draws for the same results.
    let mut results = String::from("P");
    for result in "BBPTBPP".chars() {
        play(&mut croupier, result, true).await;
        results.push(result);
    }

    // A dropped connection: the page says so; a round is played meanwhile; back online
    // it shows every event it missed, once.
    proxy.cut();
    browser.wait_for(
        "the drop noticed",
        WAIT,
        "return document.querySelector('.connection').dataset.state === 'dropped'",
    );
    let shown = text(&browser, ".connection");
    assert!(shown.contains("Connection lost"), "{shown}");
    let missed = play(&mut croupier, 'B', true).await;
    results.push('B');
    proxy.restore();
    browser.wait_for(
        "the missed round",
        WAIT,
        "return document.querySelector('.connection').dataset.state === 'live' && document.querySelector('.outcome').textContent.includes('Banker wins')",
    );
    let log = browser.run(
        "return [...document.querySelectorAll('.log li')].map(l => [l.dataset.seq, l.textContent])",
        &[],
    );
    let log = log.as_array().unwrap();
    let seqs: std::collections::BTreeSet<&str> =
        log.iter().map(|l| l[0].as_str().unwrap()).collect();
    assert_eq!(seqs.len(), log.len(), "an event was shown twice: {log:?}");
    let entries: Vec<&str> = log.iter().map(|l| l[1].as_str().unwrap()).collect();
    let round_at = entries
        .iter()
        .position(|e| e.contains(&missed))
        .unwrap_or_else(|| panic!("{missed} not in {entries:?}"));
    // Newest first: the missed round's result and four cards come before its opening.
    let missed_round = &entries[..round_at];
    for card in ["2♣", "4♦", "3♥", "5♠"] {
        assert_eq!(
            missed_round
                .iter()
                .filter(|e| e.contains(&format!("card {card}")))
                .count(),
            1,
            "{card} in {missed_round:?}"
        );
    }
    assert_eq!(
        missed_round
            .iter()
            .filter(|e| e.contains("Banker wins"))
            .count(),
        1,
        "{missed_round:?}"
    );

    let (boards, counts) = banco_roads(&results);
    browser.wait_for(
        "the roads of every result",
        WAIT,
        &format!("return document.querySelector('[data-counts]').dataset.counts === '{counts}'"),
    );
    for (name, kind) in [
        ("Bead plate", "bead"),
        ("Big Road", "big"),
        ("Big Eye Boy", "big-eye-boy"),
        ("Small Road", "small-road"),
        ("Cockroach Pig", "cockroach-pig"),
    ] {
        let mut want = boards.iter().find(|(n, _)| n == name).unwrap().1.clone();
        want.sort();
        assert_eq!(page_cells(&browser, kind), want, "{name} for {results}");
    }
    let refused = browser.run("return window.banco.violations", &[]);
    assert_eq!(
        refused,
        Value::Array(vec![]),
        "the content security policy refused parts of the page"
    );
    let last = browser.run(
        "return document.querySelector('[data-last-results]').dataset.lastResults",
        &[],
    );
    assert_eq!(last, Value::from(results.clone()));

    // The phone's screen.
    browser.resize(390, 844);
    browser.run("window.scrollTo(0, 0)", &[]);
    assert_eq!(
        browser.screenshot(&artifacts.join("table-390x844.png")),
        (390, 844)
    );
    // Nothing wider than the phone's screen: no sideways scrolling.
    let wide = browser.run(
        "const d = document.documentElement; return [d.scrollWidth, d.clientWidth]",
        &[],
    );
    assert!(
        wide[0].as_u64() <= wide[1].as_u64(),
        "the page is wider than the phone: {wide}"
    );
    browser.resize(1280, 800);

    // The figures: load to first picture, capture to display (printed, never asserted).
    let url = launch_link(&page, &keys, &player_token);
    browser.goto(&format!("{url}#T01"));
    let first_picture = browser.wait_for(
        "the first picture",
        WAIT,
        "return window.banco && window.banco.video.firstPicture",
    );
    // Steady state: the delays of the 250 frames (10 s) after the first picture's start.
    browser.run("window.banco.video.delays.length = 0", &[]);
    browser.wait_for(
        "250 frames",
        WAIT,
        "return window.banco.video.delays.length >= 250",
    );
    let delays = browser.run("return window.banco.video.delays", &[]);
    let mut delays: Vec<f64> = delays
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    delays.sort_by(f64::total_cmp);
    println!(
        "web: page load to first picture {:.0} ms; capture to display p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms over {} frames",
        first_picture.as_f64().unwrap(),
        percentile(&delays, 0.5),
        percentile(&delays, 0.9),
        percentile(&delays, 0.99),
        delays.len()
    );
    drop(browser);
    drop(broadcaster);
    drop(validator);
}

/// `banco launch` for the player whose token is in `player_token`, at `server`.
fn banco_launch(server: &str, keys: &Keys, player_token: &std::path::Path) -> std::process::Output {
    banco()
        .args(["launch", "--server", server, "--service-token-file"])
        .arg(keys.service_token_file())
        .arg("--player-token-file")
        .arg(player_token)
        .output()
        .unwrap()
}

/// A one-time link to the page at `server` for the player of `player_token`.
fn launch_link(server: &str, keys: &Keys, player_token: &std::path::Path) -> String {
    let launched = banco_launch(server, keys, player_token);
    let stderr = String::from_utf8_lossy(&launched.stderr);
    assert!(launched.status.success(), "banco launch: {stderr}");
    let url = String::from_utf8(launched.stdout)
        .unwrap()
        .trim()
        .to_owned();
    assert!(url.starts_with(&format!("{server}/?code=")), "{url}");
    url
}

/// `GET path` from `addr` over HTTP/1.1: the status line and headers.
async fn http_get(addr: &str, path: &str) -> String {
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
    )
    .await
}

/// `POST path` with a JSON body from `addr` over HTTP/1.1: the whole answer.
async fn http_post(addr: &str, path: &str, body: &str) -> String {
    raw(
        addr,
        &format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await
}

async fn raw(addr: &str, request: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// `banco launch` with a token that is not a player's is refused by the broadcaster,
/// naming why, and prints no link; an address it cannot use is refused before anything
/// is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_launch_for_a_token_that_is_not_a_players_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let broadcaster = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data")).start();
    let croupier_token = dir.path().join("maria.token");
    std::fs::write(&croupier_token, keys.issue("croupier", "maria", "1h")).unwrap();
    let launch = |server: &str| banco_launch(server, &keys, &croupier_token);
    let refused = launch(&broadcaster.url());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty(), "a link was printed");
    assert!(
        stderr.contains("refused the launch (400)") && stderr.contains("player_token"),
        "{stderr}"
    );
    let https = launch(&format!("https://{}", broadcaster.addr()));
    let stderr = String::from_utf8_lossy(&https.stderr);
    assert_eq!(https.status.code(), Some(2));
    assert!(stderr.contains("give http://HOST:PORT"), "{stderr}");
    drop(broadcaster);
    drop(validator);
}
