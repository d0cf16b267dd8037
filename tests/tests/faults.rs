//! Issue 8, faults, on real processes on loopback ports: the broadcaster SIGKILLed at three
//! precise moments of a round, the archive killed while a backlog is delivered, the
//! validator down, a subscriber whose network stops, and the journal's disk full. Each
//! test says in its doc comment what it proves.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use banco::clients::player::bets_to_pb;
use banco_auth::Role;
use banco_e2e::archive::{Auditor, Verified};
use banco_e2e::clients::{
    Authed, Cmd, Croupier, Dealer, first_table, is_control, is_private, player_client, record_of,
    settled_balance, stable,
};
use banco_e2e::model::{Books, Limits, check_decisions};
use banco_e2e::outbox;
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, croupier_cli, croupier_cli_output, start_archive,
    start_validator, start_validator_on,
};
use banco_rules::{BetKind, Card, Coup, Paytable};
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::table_event::Event as E;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tonic::transport::{Channel, Endpoint};

const WELCOME: i64 = 200_000;

// ---------------------------------------------------------------------------------------
// Processes and clients

/// A channel to `url`, retried for up to a minute (a broadcaster restarting); `window`
/// sets the HTTP/2 receive windows (a small one makes a stalled reader felt at once).
async fn connect(url: &str, window: Option<u32>) -> Channel {
    let mut endpoint = Endpoint::from_shared(url.to_owned())
        .unwrap()
        .connect_timeout(Duration::from_secs(1));
    if let Some(window) = window {
        endpoint = endpoint
            .initial_stream_window_size(window)
            .initial_connection_window_size(window);
    }
    // A loop, not `poll`: this runs in spawned tasks, and a future holding an async
    // closure's borrow is not provably Send there.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match endpoint.connect().await {
            Ok(channel) => return channel,
            Err(e) if Instant::now() > deadline => panic!("cannot connect to {url}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Validator and broadcaster of table T01, a croupier token (file and gRPC client).
/// Fields drop in order: the processes first, the temp dir last.
struct Rig {
    broadcaster: Service,
    validator: Service,
    setup: BroadcasterSetup,
    croupier: Croupier,
    croupier_token: String,
    croupier_token_file: PathBuf,
    keys: Keys,
    dir: tempfile::TempDir,
}

impl Rig {
    /// `configure` adjusts the broadcaster's setup before its first start; restarts bind
    /// the address it got.
    async fn start(configure: impl FnOnce(&mut BroadcasterSetup, &Keys, &Path)) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::generate(&dir.path().join("keys"));
        let validator = start_validator(&keys);
        let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
        setup.welcome_credit = WELCOME;
        configure(&mut setup, &keys, dir.path());
        let broadcaster = setup.start();
        setup.listen = broadcaster.addr().to_owned();
        let croupier_token = keys.issue("croupier", "dealer1", "1h");
        let croupier_token_file = dir.path().join("croupier.token");
        std::fs::write(&croupier_token_file, &croupier_token).unwrap();
        let channel = connect(&broadcaster.url(), None).await;
        let croupier = Croupier::new(channel, &croupier_token, "T01", "console");
        Rig {
            broadcaster,
            validator,
            setup,
            croupier,
            croupier_token,
            croupier_token_file,
            keys,
            dir,
        }
    }

    fn url(&self) -> String {
        self.broadcaster.url()
    }

    fn player_token(&self, name: &str) -> String {
        self.keys.issue_at(
            Role::Player,
            name,
            Duration::from_secs(3600),
            SystemTime::now(),
        )
    }

    /// SIGKILL, then the same broadcaster again on the same address and data dir; the
    /// croupier reconnected. A channel for other clients.
    async fn kill_and_restart(&mut self) -> Channel {
        self.broadcaster.kill();
        assert!(!self.broadcaster.is_running());
        self.broadcaster = self.setup.start();
        let channel = connect(&self.url(), None).await;
        self.croupier.reconnect(channel.clone());
        channel
    }

    /// `banco croupier <args>` against this broadcaster, whatever it exits with: (exit
    /// code, stdout, stderr).
    fn cli(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let out = croupier_cli_output(&self.url(), &self.croupier_token_file, args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn limits(&self) -> Limits {
        let channel = connect(&self.url(), None).await;
        Limits::from_info(&first_table(player_client(channel, &self.player_token("lister"))).await)
    }
}

/// A betting player.
struct Player {
    name: String,
    token: String,
    client: PlayerServiceClient<Authed>,
}

impl Player {
    fn new(rig: &Rig, name: &str, channel: Channel) -> Player {
        let token = rig.player_token(name);
        Player {
            client: player_client(channel, &token),
            name: name.to_owned(),
            token,
        }
    }

    async fn place(
        &mut self,
        round_id: &str,
        key: &str,
        bets: &[(BetKind, i64)],
    ) -> Result<pb::PlaceBetsResponse, tonic::Status> {
        self.client
            .place_bets(pb::PlaceBetsRequest {
                table_id: "T01".into(),
                round_id: round_id.to_owned(),
                bets: bets_to_pb(bets),
                idempotency_key: key.to_owned(),
            })
            .await
            .map(tonic::Response::into_inner)
    }

    async fn balance(&mut self) -> i64 {
        settled_balance(&mut self.client).await
    }
}

/// Player `i`'s bets in wave `wave`: within the limits, on a few positions.
fn bets_of(i: usize, wave: usize) -> Vec<(BetKind, i64)> {
    let i = i as i64;
    let wave = wave as i64;
    let main = if (i + wave) % 2 == 0 {
        BetKind::Banker
    } else {
        BetKind::Player
    };
    let mut bets = vec![(main, 1_000 + 500 * i + 100 * wave)];
    if wave % 2 == 1 {
        bets.push((BetKind::PlayerPair, 500 + 100 * i));
    }
    if i % 2 == 1 {
        bets.push((BetKind::Tie, 500));
    }
    bets
}

/// Places `bets` for `player`, checked against the model and booked.
async fn bet(
    books: &mut Books,
    player: &mut Player,
    round_id: &str,
    key: &str,
    bets: &[(BetKind, i64)],
) -> pb::PlaceBetsResponse {
    let existing = books.round.get(&player.name).cloned();
    let expected = books.predict(&player.name, bets);
    let reply = player
        .place(round_id, key, bets)
        .await
        .unwrap_or_else(|s| panic!("{} {key}: {s}", player.name));
    check_decisions(&expected, bets, existing.as_ref(), &reply)
        .unwrap_or_else(|e| panic!("{} {key}: {e}", player.name));
    books.apply(&player.name, bets, &expected);
    reply
}

/// Bet totals per position in the croupier's view of the table.
fn totals(state: &pb::TableState) -> BTreeMap<i32, i64> {
    state
        .bet_totals
        .iter()
        .filter(|t| t.total_minor > 0)
        .map(|t| (t.kind, t.total_minor))
        .collect()
}

/// The model's totals of the round in play, per position.
fn model_totals(books: &Books) -> BTreeMap<i32, i64> {
    let mut out = BTreeMap::new();
    for stakes in books.round.values() {
        for (&kind, &stake) in stakes {
            *out.entry(pb::BetKind::from(kind) as i32).or_default() += stake;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Subscribers

/// What one subscriber received, each event with when it arrived.
#[derive(Debug, Default)]
struct Seen {
    name: String,
    events: Vec<(pb::TableEvent, Instant)>,
    /// Streams that ended or broke, after which it subscribed again from its last seq.
    reconnects: u32,
}

fn opened(seen: &Seen, marker: &watch::Receiver<Option<String>>) -> bool {
    let Some(round) = marker.borrow().clone() else {
        return false;
    };
    // The round's BettingOpened, or a snapshot taken after it (a subscriber that resumed
    // from a gap just then).
    seen.events.iter().any(|(e, _)| e.round_id == round)
}

/// Subscribes to T01 at `url` and reads until it has seen the round `stop` names open; whenever the stream ends or breaks (a CutOff, a killed broadcaster) it
/// subscribes again with the last seq it saw.
async fn subscriber(
    name: String,
    url: String,
    token: String,
    window: Option<u32>,
    mut stop: watch::Receiver<Option<String>>,
    last_seq: watch::Sender<u64>,
) -> Seen {
    let mut seen = Seen {
        name,
        ..Seen::default()
    };
    let mut last = 0;
    let give_up = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(Instant::now() < give_up, "{}: never done", seen.name);
        let mut client = player_client(connect(&url, window).await, &token);
        let request = pb::SubscribeRequest {
            table_id: "T01".to_owned(),
            resume_from_seq: last,
        };
        let mut stream = match client.subscribe(request).await {
            Ok(stream) => stream.into_inner(),
            Err(e) => {
                eprintln!("{}: subscribe from {last}: {e}", seen.name);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        loop {
            let next = tokio::select! {
                next = stream.message() => next,
                changed = stop.changed() => {
                    assert!(changed.is_ok(), "{}: the test ended first", seen.name);
                    if opened(&seen, &stop) {
                        return seen;
                    }
                    continue;
                }
            };
            match next {
                Ok(Some(event)) => {
                    last = event.seq;
                    let _ = last_seq.send(last);
                    seen.events.push((event, Instant::now()));
                    if opened(&seen, &stop) {
                        return seen;
                    }
                }
                Ok(None) | Err(_) => {
                    eprintln!(
                        "{}: stream ended at seq {last} ({next:?}), resuming",
                        seen.name
                    );
                    seen.reconnects += 1;
                    break;
                }
            }
        }
    }
}

fn is_public(event: &pb::TableEvent) -> bool {
    !is_private(event) && !is_control(event)
}

/// Checks the subscribers' streams together: each in strictly increasing seq (nothing
/// twice, in order); a ResumeGap only ever followed by a Snapshot; the same public event
/// under the same seq for everyone; and no public event that one subscriber got is
/// missing from another's stream between two events it received without a gap (so a
/// reconnect resumed exactly where it left off). The number of gaps each declared.
fn check_streams(all: &[Seen]) -> Vec<usize> {
    let mut public: BTreeMap<u64, pb::TableEvent> = BTreeMap::new();
    for seen in all {
        for (e, _) in &seen.events {
            if is_public(e)
                && let Some(other) = public.insert(e.seq, e.clone())
            {
                assert_eq!(&other, e, "{}: seq {} differs", seen.name, e.seq);
            }
        }
    }
    let mut gaps = Vec::new();
    for seen in all {
        let events: Vec<&pb::TableEvent> = seen.events.iter().map(|(e, _)| e).collect();
        assert!(
            matches!(
                events.first().and_then(|e| e.event.as_ref()),
                Some(E::Snapshot(_))
            ),
            "{}: a new subscription starts with a snapshot",
            seen.name
        );
        let mut n = 0;
        for pair in events.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if matches!(a.event, Some(E::ResumeGap(_))) {
                // The snapshot carries the seq the stream stands at, as the gap does.
                assert!(
                    matches!(b.event, Some(E::Snapshot(_))) && b.seq == a.seq,
                    "{}: a gap is followed by a snapshot: {b:?}",
                    seen.name
                );
                continue;
            }
            // A CutOff names the seq the stream stands at: the last one sent.
            let cut_off = matches!(b.event, Some(E::CutOff(_)));
            assert!(
                b.seq > a.seq || (cut_off && b.seq == a.seq),
                "{}: seq {} after {}",
                seen.name,
                b.seq,
                a.seq
            );
            if matches!(b.event, Some(E::ResumeGap(_))) {
                n += 1;
                continue;
            }
            let missed: Vec<u64> = public
                .range(a.seq + 1..b.seq.max(a.seq + 1))
                .map(|(s, _)| *s)
                .collect();
            assert!(
                missed.is_empty(),
                "{}: public events {missed:?} missing between seq {} and {}",
                seen.name,
                a.seq,
                b.seq
            );
        }
        gaps.push(n);
    }
    gaps
}

/// Each subscriber's picture of each round: the cards (from a snapshot of the round, then
/// every CardDealt), exactly those dealt; the result seen once (or in a snapshot taken
/// after it).
fn check_rounds(all: &[Seen], played: &[(String, Vec<Card>)]) {
    for seen in all {
        let mut cards: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut results: BTreeMap<String, usize> = BTreeMap::new();
        for (e, _) in &seen.events {
            match &e.event {
                Some(E::Snapshot(s)) if !e.round_id.is_empty() => {
                    cards.insert(
                        e.round_id.clone(),
                        s.cards.iter().map(|c| c.card.clone()).collect(),
                    );
                    if s.result.is_some() {
                        results.entry(e.round_id.clone()).or_insert(1);
                    }
                }
                Some(E::CardDealt(c)) => {
                    let card = c.card.as_ref().map(|d| d.card.clone()).unwrap_or_default();
                    cards.entry(e.round_id.clone()).or_default().push(card);
                }
                Some(E::RoundResult(_)) => *results.entry(e.round_id.clone()).or_default() += 1,
                _ => {}
            }
        }
        for (round_id, dealt) in played {
            let dealt: Vec<String> = dealt.iter().map(ToString::to_string).collect();
            assert_eq!(
                cards.get(round_id),
                Some(&dealt),
                "{}: {round_id}",
                seen.name
            );
            assert_eq!(
                results.get(round_id),
                Some(&1),
                "{}: {round_id} result",
                seen.name
            );
        }
    }
}

/// Waits until every subscriber (sharing its last seq through `last`) has received an
/// event of journal record `record` or later.
async fn caught_up(last: &[watch::Receiver<u64>], state_seq: u64) {
    let record = record_of(state_seq);
    for rx in last {
        let mut rx = rx.clone();
        tokio::time::timeout(
            Duration::from_secs(30),
            rx.wait_for(|&seq| record_of(seq) >= record),
        )
        .await
        .unwrap()
        .unwrap();
    }
}

/// Starts [`subscriber`]; its last seq can be watched (for [`caught_up`]).
fn spawn_subscriber(
    name: &str,
    url: String,
    token: String,
    window: Option<u32>,
    stop: watch::Receiver<Option<String>>,
) -> (tokio::task::JoinHandle<Seen>, watch::Receiver<u64>) {
    let (tx, rx) = watch::channel(0);
    let task = tokio::spawn(subscriber(name.to_owned(), url, token, window, stop, tx));
    (task, rx)
}

fn delays_ms(seen: &Seen) -> Vec<f64> {
    seen.events
        .iter()
        .filter_map(|(e, at)| {
            let sent = e.server_time.as_ref()?;
            let sent = SystemTime::UNIX_EPOCH
                + Duration::new(
                    u64::try_from(sent.seconds).ok()?,
                    u32::try_from(sent.nanos).ok()?,
                );
            let now = SystemTime::now() - at.elapsed();
            Some(now.duration_since(sent).unwrap_or_default().as_secs_f64() * 1e3)
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

// ---------------------------------------------------------------------------------------
// 1. SIGKILL of the broadcaster at three moments

/// Sends `cmd` from `racer` under a fresh id and SIGKILLs the broadcaster `after_ms`
/// later, while the command is in flight; restarts it. The racer (reconnected), the id,
/// the first send's answer (if it got one) and a channel to the restarted broadcaster.
async fn killed_while_sending(
    rig: &mut Rig,
    mut racer: Croupier,
    cmd: &Cmd,
    after_ms: u64,
) -> (
    Croupier,
    String,
    Result<pb::CommandReply, tonic::Status>,
    Channel,
) {
    let id = racer.next_id();
    let send = {
        let (id, cmd) = (id.clone(), cmd.clone());
        tokio::spawn(async move {
            let reply = racer.send(&id, &cmd).await;
            (racer, reply)
        })
    };
    tokio::time::sleep(Duration::from_millis(after_ms)).await;
    let channel = rig.kill_and_restart().await;
    let (mut racer, first) = send.await.unwrap();
    racer.reconnect(channel.clone());
    (racer, id, first, channel)
}

/// The broadcaster SIGKILLed (and restarted on the same address and data dir) at four
/// moments checked on the table's state first: (1) betting open, after bets were
/// acknowledged, with three players' bets in flight; (2) mid-deal, two cards dealt (seen
/// by every subscriber) and the third in flight; (3) the hand complete, its confirm in
/// flight; (4) in the next round, right after the confirm was acknowledged, while its
/// settlement is still being fanned out and written to the outbox. After each restart the
/// requests whose answer was lost are resent with the same idempotency key or command id
/// and applied exactly once (a bet whose ack was received is resent too, as if the ack
/// had been lost: same decisions, balance unchanged). Bets acknowledged before a kill are
/// still in the table's totals after it. Three subscribers reconnect by themselves with
/// their last seq: none sees an event twice or out of order, a gap is always announced and
/// followed by a snapshot, and no public event one of them received is missing from
/// another's stream between two events it got without a gap; each saw every round's cards
/// exactly as dealt and its result once. At the end every player's balance is the welcome
/// credit minus their stakes plus the payouts `banco_rules::settle` gives, each once; the
/// books balance (players + house = credited); the outbox holds the two rounds once, in
/// order, with those settlements, on a chain that verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_betting_dealing_and_settling_loses_and_doubles_nothing() {
    let started = Instant::now();
    let mut rig = Rig::start(|_, _, _| {}).await;
    let mut books = Books::new(rig.limits().await, Paytable::standard(), WELCOME);
    let channel = connect(&rig.url(), None).await;
    let mut players: Vec<Player> = (0..4)
        .map(|i| Player::new(&rig, &format!("p{i}"), channel.clone()))
        .collect();
    let mut dealer = Dealer::new(81);
    let (stop_tx, stop) = watch::channel(None);
    let mut watchers = Vec::new();
    let mut lasts = Vec::new();
    for i in 0..3 {
        let name = format!("w{i}");
        let (task, last) = spawn_subscriber(
            &name,
            rig.url(),
            rig.player_token(&name),
            None,
            stop.clone(),
        );
        watchers.push(task);
        lasts.push(last);
    }
    let mut played: Vec<(String, Vec<Card>)> = Vec::new();
    let mut settled = Vec::new();
    let mut kills = Vec::new();

    // Round 1, moment 1: betting open, bets acknowledged, more in flight.
    let round = dealer.open(&mut rig.croupier).await;
    for (i, p) in players.iter_mut().enumerate() {
        bet(
            &mut books,
            p,
            &round,
            &format!("{}-w1", p.name),
            &bets_of(i, 1),
        )
        .await;
    }
    let lost_ack = bet(&mut books, &mut players[0], &round, "p0-w2", &bets_of(0, 2)).await;
    let state = rig.croupier.state().await.unwrap();
    assert_eq!(state.phase(), pb::TablePhase::BettingOpen);
    assert_eq!(
        totals(&state),
        model_totals(&books),
        "totals before the kill"
    );
    let mut in_flight = Vec::new();
    for (i, p) in players.iter().enumerate().skip(1) {
        let mut client = p.client.clone();
        let request = pb::PlaceBetsRequest {
            table_id: "T01".into(),
            round_id: round.clone(),
            bets: bets_to_pb(&bets_of(i, 2)),
            idempotency_key: format!("{}-w2", p.name),
        };
        in_flight.push(tokio::spawn(
            async move { client.place_bets(request).await },
        ));
    }
    tokio::time::sleep(Duration::from_millis(2)).await;
    let channel = rig.kill_and_restart().await;
    let mut first_answers = Vec::new();
    for task in in_flight {
        first_answers.push(task.await.unwrap().ok().map(tonic::Response::into_inner));
    }
    kills.push(format!(
        "betting open: {} of 3 in-flight bets answered before the kill",
        first_answers.iter().filter(|a| a.is_some()).count()
    ));
    for p in &mut players {
        p.client = player_client(channel.clone(), &p.token);
    }
    // What was acknowledged before the kill is still there; the in-flight bets are not
    // yet in the model (each is either in the table once, or not at all).
    let state = rig.croupier.state().await.unwrap();
    assert_eq!(state.phase(), pb::TablePhase::BettingOpen);
    let before = model_totals(&books);
    let after = totals(&state);
    for (kind, total) in &before {
        assert!(
            after.get(kind).copied().unwrap_or(0) >= *total,
            "position {kind}: {after:?} < {before:?}"
        );
    }
    for ((i, p), first) in players.iter_mut().enumerate().skip(1).zip(&first_answers) {
        let key = format!("{}-w2", p.name);
        let reply = bet(&mut books, p, &round, &key, &bets_of(i, 2)).await;
        if let Some(first) = first {
            assert_eq!(reply.decisions, first.decisions, "{key} resent");
        }
    }
    // The bet whose ack "never arrived": resent, it is answered as first decided.
    let balance = players[0].balance().await;
    let again = players[0]
        .place(&round, "p0-w2", &bets_of(0, 2))
        .await
        .unwrap();
    assert_eq!(again.decisions, lost_ack.decisions, "p0-w2 resent");
    assert_eq!(
        players[0].balance().await,
        balance,
        "p0-w2 resent debits nothing"
    );
    let state = rig.croupier.state().await.unwrap();
    assert_eq!(
        totals(&state),
        model_totals(&books),
        "totals after the resends"
    );
    for p in &mut players {
        assert_eq!(
            p.balance().await,
            books.balance(&p.name),
            "{} in {round}",
            p.name
        );
    }

    // Moment 2: mid-deal, two cards dealt and seen by everyone, the third in flight.
    rig.croupier.ok(Cmd::CloseBetting).await;
    let mut coup = Coup::default();
    for _ in 0..2 {
        let card = dealer.card();
        coup.deal(card).unwrap();
        rig.croupier.ok(Cmd::Deal(card.to_string())).await;
    }
    let state = rig.croupier.state().await.unwrap();
    assert_eq!(state.cards.len(), 2);
    assert_eq!(state.phase(), pb::TablePhase::Dealing);
    caught_up(&lasts, state.seq).await;
    let card = dealer.card();
    coup.deal(card).unwrap();
    let racer = Croupier::new(
        connect(&rig.url(), None).await,
        &rig.croupier_token,
        "T01",
        "racer",
    );
    let cmd = Cmd::Deal(card.to_string());
    let (mut racer, id, first, _) = killed_while_sending(&mut rig, racer, &cmd, 2).await;
    let reply = racer.send(&id, &cmd).await.unwrap();
    assert_eq!(reply.refusal, None);
    let state = reply.state.clone().unwrap();
    let dealt: Vec<String> = state.cards.iter().map(|c| c.card.clone()).collect();
    let want: Vec<String> = coup.cards().iter().map(ToString::to_string).collect();
    assert_eq!(dealt, want, "the third card once");
    kills.push(format!(
        "mid-deal: the third card was {} when the broadcaster died",
        if reply.replayed {
            "journaled"
        } else {
            "not yet journaled"
        }
    ));
    if let Ok(first) = first {
        assert!(
            reply.replayed && first.seq == reply.seq,
            "{first:?} / {reply:?}"
        );
    }
    let mut state = state;
    while state.due() != pb::Due::Complete {
        let card = dealer.card();
        coup.deal(card).unwrap();
        state = rig.croupier.ok(Cmd::Deal(card.to_string())).await;
    }
    dealer.hand_done();

    // Moment 3: the hand complete (everyone saw the result), the confirm in flight.
    let state = rig.croupier.state().await.unwrap();
    assert_eq!(state.phase(), pb::TablePhase::Result);
    caught_up(&lasts, state.seq).await;
    let cmd = Cmd::Confirm(round.clone());
    let (mut racer, id, _, channel) = killed_while_sending(&mut rig, racer, &cmd, 1).await;
    let phase = rig.croupier.state().await.unwrap().phase();
    assert!(
        matches!(phase, pb::TablePhase::Result | pb::TablePhase::Settled),
        "{phase:?}"
    );
    let reply = racer.send(&id, &cmd).await.unwrap();
    assert_eq!(reply.refusal, None);
    assert_eq!(
        reply.state.as_ref().unwrap().phase(),
        pb::TablePhase::Settled
    );
    assert_eq!(
        reply.replayed,
        phase == pb::TablePhase::Settled,
        "{reply:?}"
    );
    let again = racer.send(&id, &cmd).await.unwrap();
    assert!(
        again.replayed && again.seq == reply.seq,
        "confirm resent again: {again:?}"
    );
    kills.push(format!(
        "settlement: the confirm was {} when the broadcaster died",
        if phase == pb::TablePhase::Settled {
            "journaled"
        } else {
            "not yet journaled"
        }
    ));
    settled.push(books.settle(coup.cards()));
    played.push((round.clone(), coup.cards().to_vec()));
    for p in &mut players {
        p.client = player_client(channel.clone(), &p.token);
        assert_eq!(
            p.balance().await,
            books.balance(&p.name),
            "{} after {round}",
            p.name
        );
    }

    // Round 2, moment 4: killed right after the confirm's acknowledgement. Every
    // subscriber is back before a card is dealt: one still reconnecting after the last
    // kill would be given the round as a snapshot at its end (a resume across a restart
    // is a gap), not its cards, and a round lasts a few milliseconds here.
    let round = dealer.open(&mut rig.croupier).await;
    caught_up(&lasts, rig.croupier.state().await.unwrap().seq).await;
    for (i, p) in players.iter_mut().enumerate() {
        bet(
            &mut books,
            p,
            &round,
            &format!("{}-r2", p.name),
            &bets_of(i, 3),
        )
        .await;
    }
    rig.croupier.ok(Cmd::CloseBetting).await;
    let mut coup = Coup::default();
    let mut state = rig.croupier.state().await.unwrap();
    while state.due() != pb::Due::Complete {
        let card = dealer.card();
        coup.deal(card).unwrap();
        state = rig.croupier.ok(Cmd::Deal(card.to_string())).await;
    }
    dealer.hand_done();
    let id = rig.croupier.next_id();
    let cmd = Cmd::Confirm(round.clone());
    let first = rig.croupier.send(&id, &cmd).await.unwrap();
    assert_eq!(first.refusal, None);
    let channel = rig.kill_and_restart().await;
    let reply = rig.croupier.send(&id, &cmd).await.unwrap();
    assert!(
        reply.replayed && reply.seq == first.seq,
        "confirm resent: {reply:?}"
    );
    kills.push("settlement: killed right after the confirm's acknowledgement".to_owned());
    settled.push(books.settle(coup.cards()));
    played.push((round.clone(), coup.cards().to_vec()));

    // Round 3 opens: the subscribers stop there.
    let marker = dealer.open(&mut rig.croupier).await;
    stop_tx.send(Some(marker)).unwrap();
    let mut seen = Vec::new();
    for w in watchers {
        seen.push(
            tokio::time::timeout(Duration::from_secs(60), w)
                .await
                .unwrap()
                .unwrap(),
        );
    }
    let gaps = check_streams(&seen);
    check_rounds(&seen, &played);

    let mut total = 0;
    for p in &mut players {
        p.client = player_client(channel.clone(), &p.token);
        let balance = p.balance().await;
        assert_eq!(balance, books.balance(&p.name), "{}'s balance", p.name);
        total += balance;
    }
    assert_eq!(total + books.house, books.credited, "the books balance");
    let lines = outbox::wait_for(&rig.setup.outbox(), 2, Duration::from_secs(30)).await;
    assert_eq!(lines.len(), 2, "each settled round once in the outbox");
    outbox::verify_chain(&lines).unwrap();
    for (line, ((round_id, cards), settlements)) in lines.iter().zip(played.iter().zip(&settled)) {
        let r = line.recorded();
        assert_eq!(&r.round_id, round_id, "outbox order");
        assert_eq!(&r.cards, cards, "{round_id}");
        assert_eq!(
            &r.settlements, settlements,
            "{round_id}: settled as the rules pay"
        );
    }
    eprintln!(
        "sigkill: {} kills ({}); subscribers reconnected {:?} times with {:?} gaps (snapshots); {:?}",
        kills.len(),
        kills.join("; "),
        seen.iter().map(|s| s.reconnects).collect::<Vec<_>>(),
        gaps,
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// 2. The archive down and back

/// `banco audit rounds`: the round ids, oldest first.
fn archived_rounds(auditor: &Auditor) -> Vec<String> {
    let out = auditor.ok(&["rounds", "--limit", "10000"]);
    let mut ids: Vec<String> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    ids.reverse();
    ids
}

/// `banco audit verify`'s record count now (0 when it cannot say).
fn verified_now(auditor: &Auditor) -> u64 {
    match auditor.verify(&[]) {
        Verified::Ok { records, .. } => records,
        _ => 0,
    }
}

/// The archive down and back. `tests/archive.rs` (`outbox_catch_up_*`) already proves the
/// long outage: archive SIGKILLed, 100 rounds played without waiting, restarted, all
/// delivered in order and verified. What this adds: with a backlog of 20 rounds waiting,
/// the archive restarted and SIGKILLed again and again, at staggered moments (0 ms to
/// 5.5 s, the outbox retrying every 5 s at most) so that the kills fall before, during or
/// after the outbox's AppendBatch of the backlog (the test prints how many records the
/// archive held after each; it does not control which), with the table playing a round
/// between kills. The table never waits (every
/// command and bet answered; the time per round with the archive down is printed beside
/// the time with it up), and in the end every round is in the archive once, in play order
/// (`banco audit rounds`), and `banco audit verify` checks the whole chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_killed_while_catching_up_ends_with_every_round_once_in_order() {
    let mut archive = None;
    let mut db = PathBuf::new();
    let mut archive_keys = None;
    let mut rig = Rig::start(|setup, keys, dir| {
        let table_keys = Keys::generate(&dir.join("table-key"));
        db = dir.join("archive.db");
        let url = format!("sqlite://{}", db.display());
        let service = start_archive(keys, &url, "127.0.0.1:0", Some(&table_keys.public_key()));
        setup.archive_url = Some(service.url());
        setup.table_key = Some(table_keys.signing_key());
        archive = Some(service);
        archive_keys = Some(table_keys);
    })
    .await;
    let mut archive = archive.unwrap();
    let table_keys = archive_keys.unwrap();
    let archive_addr = archive.addr().to_owned();
    let db_url = format!("sqlite://{}", db.display());
    let auditor = Auditor::new(&rig.keys, &archive.url(), rig.dir.path());
    let mut books = Books::new(rig.limits().await, Paytable::standard(), WELCOME);
    let channel = connect(&rig.url(), None).await;
    let mut players: Vec<Player> = (0..2)
        .map(|i| Player::new(&rig, &format!("p{i}"), channel.clone()))
        .collect();
    let mut dealer = Dealer::new(202);
    let mut ids = Vec::new();
    let mut play = async |rig: &mut Rig, books: &mut Books, players: &mut Vec<Player>| {
        let round = dealer.open(&mut rig.croupier).await;
        for (i, p) in players.iter_mut().enumerate() {
            bet(
                books,
                p,
                &round,
                &format!("{}-{round}", p.name),
                &bets_of(i, 1),
            )
            .await;
        }
        let cards = dealer.finish(&mut rig.croupier, &round).await;
        books.settle(&cards);
        round
    };

    let up = Instant::now();
    for _ in 0..3 {
        ids.push(play(&mut rig, &mut books, &mut players).await);
    }
    let up = up.elapsed() / 3;
    let (verified, _) = auditor.wait_verified(3, Duration::from_secs(60));
    assert!(
        matches!(verified, Verified::Ok { records: 3, .. }),
        "{verified:?}"
    );

    archive.kill();
    let down = Instant::now();
    for _ in 0..20 {
        ids.push(play(&mut rig, &mut books, &mut players).await);
    }
    let down = down.elapsed() / 20;
    assert!(rig.broadcaster.is_running());

    // Back, and killed again while it takes the backlog in; a round between kills.
    let mut seen_at_kills = Vec::new();
    for delay_ms in [0u64, 20, 80, 250, 600, 2_500, 5_500] {
        archive = start_archive(
            &rig.keys,
            &db_url,
            &archive_addr,
            Some(&table_keys.public_key()),
        );
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        archive.kill();
        ids.push(play(&mut rig, &mut books, &mut players).await);
        archive = start_archive(
            &rig.keys,
            &db_url,
            &archive_addr,
            Some(&table_keys.public_key()),
        );
        seen_at_kills.push((delay_ms, verified_now(&auditor)));
        archive.kill();
    }
    archive = start_archive(
        &rig.keys,
        &db_url,
        &archive_addr,
        Some(&table_keys.public_key()),
    );
    let total = ids.len() as u64;
    let (verified, took) = auditor.wait_verified(total, Duration::from_secs(120));
    assert!(
        matches!(verified, Verified::Ok { records, .. } if records == total),
        "{verified:?}"
    );
    assert_eq!(
        archived_rounds(&auditor),
        ids,
        "every round once, in play order"
    );
    for p in &mut players {
        assert_eq!(p.balance().await, books.balance(&p.name), "{}", p.name);
    }
    assert!(archive.is_running());
    eprintln!(
        "archive: {:?}/round with the archive up, {:?}/round with it down; killed while catching \
         up at (ms after its restart, records it held just after): {seen_at_kills:?}; {total} \
         rounds verified {took:?} after the last restart",
        up, down
    );
}

// ---------------------------------------------------------------------------------------
// 3. The validator down

/// The table's state without what the broadcaster shows beside it and keeps only in
/// memory (clocks, the last refusal, the alerts, the croupier's name).
fn bare(state: &pb::TableState) -> pb::TableState {
    let mut state = stable(state);
    state.alerts.clear();
    state.croupier.clear();
    state
}

/// The validator SIGKILLed with betting closed and a card due: `banco croupier deal` is
/// refused (exit 1) with a message containing "validator unreachable", for that card and
/// for any other; the table is unchanged (no card dealt, the same card due, the same seq),
/// and the console's WatchTable state shows the critical `validator_unreachable` alert
/// (as `banco croupier state` prints it). The validator restarted on the same port, the
/// same card with the same command id is accepted; the alert is gone. The round ends with
/// exactly the cards accepted after the validator came back: none was accepted unchecked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validator_down_refuses_every_card_and_the_same_card_is_accepted_when_it_is_back() {
    let mut rig = Rig::start(|_, _, _| {}).await;
    let mut dealer = Dealer::new(33);
    let round = dealer.open(&mut rig.croupier).await;
    rig.croupier.ok(Cmd::CloseBetting).await;
    let before = rig.croupier.state().await.unwrap();
    assert_eq!(before.due(), pb::Due::PlayerCard);

    let addr = rig.validator.addr().to_owned();
    rig.validator.kill();
    let card = dealer.card().to_string();
    let (code, _, err) = rig.cli(&["--command-id", "first-card", "deal", &card]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("validator unreachable"), "{err}");
    eprintln!("validator down, the croupier reads: {}", err.trim());
    // Another card, and the same again: refused the same way.
    for (id, other) in [("other-card", "AS"), ("first-card", card.as_str())] {
        let (code, _, err) = rig.cli(&["--command-id", id, "deal", other]);
        assert_ne!(code, Some(0), "{err}");
        assert!(err.contains("validator unreachable"), "{err}");
    }
    let during = rig.croupier.state().await.unwrap();
    assert_eq!(
        bare(&during),
        bare(&before),
        "the table while the validator is down"
    );
    assert!(during.cards.is_empty());
    let alert = during
        .alerts
        .iter()
        .find(|a| a.code == "validator_unreachable")
        .unwrap_or_else(|| panic!("no alert: {:?}", during.alerts));
    assert_eq!(alert.level(), pb::AlertLevel::Critical);
    let (code, shown, _) = rig.cli(&["state"]);
    assert_eq!(code, Some(0));
    assert!(
        shown.contains("ALERT Critical") && shown.contains("(validator_unreachable)"),
        "{shown}"
    );

    rig.validator = start_validator_on(&rig.keys, &addr);
    let shown = croupier_cli(
        &rig.url(),
        &rig.croupier_token_file,
        &["--command-id", "first-card", "deal", &card],
    );
    assert!(!shown.contains("REFUSED"), "{shown}");
    let after = rig.croupier.state().await.unwrap();
    let dealt: Vec<String> = after.cards.iter().map(|c| c.card.clone()).collect();
    assert_eq!(dealt, std::slice::from_ref(&card));
    assert_eq!(
        record_of(after.seq),
        record_of(before.seq) + 1,
        "one record: the card"
    );
    assert!(after.alerts.is_empty(), "{:?}", after.alerts);

    let mut coup = Coup::default();
    coup.deal(Card::parse(&card).unwrap()).unwrap();
    let mut state = after;
    while state.due() != pb::Due::Complete {
        let card = dealer.card();
        coup.deal(card).unwrap();
        state = rig.croupier.ok(Cmd::Deal(card.to_string())).await;
    }
    rig.croupier.ok(Cmd::Confirm(round.clone())).await;
    let lines = outbox::wait_for(&rig.setup.outbox(), 1, Duration::from_secs(30)).await;
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0].recorded().cards,
        coup.cards(),
        "{round}: only the checked cards"
    );
}

// ---------------------------------------------------------------------------------------
// 4. A subscriber whose network stops

/// A TCP proxy that can stop forwarding (it stops reading both ways; nothing is closed)
/// and go on again.
struct Proxy {
    addr: String,
    paused: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (paused, gate) = watch::channel(false);
        let task = tokio::spawn(async move {
            while let Ok((down, _)) = listener.accept().await {
                let Ok(up) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                let (down_r, down_w) = down.into_split();
                let (up_r, up_w) = up.into_split();
                tokio::spawn(forward(down_r, up_w, gate.clone()));
                tokio::spawn(forward(up_r, down_w, gate.clone()));
            }
        });
        Proxy { addr, paused, task }
    }

    fn pause(&self, paused: bool) {
        self.paused.send_replace(paused);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies `from` to `to` while the gate is open; while it is closed, reads nothing (a
/// read waiting when it closes is dropped, which loses nothing: tokio's read is
/// cancel-safe).
async fn forward(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut gate: watch::Receiver<bool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if *gate.borrow_and_update() {
            if gate.changed().await.is_err() {
                return;
            }
            continue;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            },
            changed = gate.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        };
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// Distinct players subscribed, as the croupier's state counts them, once it is `n`.
async fn players_become(croupier: &mut Croupier, n: u32) {
    let players = banco_e2e::poll(
        Duration::from_secs(120),
        Duration::from_millis(50),
        async || croupier.state().await.unwrap().players,
        |players| *players == n,
    )
    .await;
    assert_eq!(players, n, "{players} players subscribed, never {n}");
}

/// A subscriber whose network stops: one of four subscribers reads through a TCP proxy
/// (with a 16 KiB HTTP/2 window, and the broadcaster run with `--subscriber-queue 64`);
/// the proxy stops forwarding, without closing anything. The table keeps dealing rounds
/// and 40 players chat (200-character lines) meanwhile; the three others receive every
/// event promptly (their receive delays are printed; what is asserted is completeness and
/// order); the broadcaster cuts the stalled one off (the table's player count drops) and
/// goes on. When the proxy forwards again, the stalled subscriber reads what was in
/// flight, then a CutOff with its resume point, subscribes again from its last seq and
/// gets exactly the events it missed from the broadcaster's ring: no gap, nothing twice,
/// the same public events as everyone else, every round's cards and result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_is_cut_off_and_resumes_exactly_where_it_stopped() {
    let started = Instant::now();
    let mut rig = Rig::start(|setup, _, _| setup.subscriber_queue = Some(64)).await;
    let proxy = Proxy::start(rig.broadcaster.addr().to_owned()).await;
    let (stop_tx, stop) = watch::channel(None);
    let mut tasks = Vec::new();
    for i in 0..3 {
        let name = format!("w{i}");
        tasks.push(
            spawn_subscriber(
                &name,
                rig.url(),
                rig.player_token(&name),
                None,
                stop.clone(),
            )
            .0,
        );
    }
    let proxy_url = format!("http://{}", proxy.addr);
    tasks.push(
        spawn_subscriber(
            "stalled",
            proxy_url,
            rig.player_token("stalled"),
            Some(16 * 1024),
            stop.clone(),
        )
        .0,
    );
    players_become(&mut rig.croupier, 4).await;
    let channel = connect(&rig.url(), None).await;
    let mut dealer = Dealer::new(44);
    let mut played = Vec::new();
    let line: String = "the shoe is hot tonight, banker again? "
        .repeat(6)
        .chars()
        .take(200)
        .collect();

    proxy.pause(true);
    let paused = Instant::now();
    let mut chatters = 0;
    let mut rounds_stalled = 0;
    loop {
        let round = dealer.open(&mut rig.croupier).await;
        for _ in 0..40 {
            chatters += 1;
            let mut client =
                player_client(channel.clone(), &rig.player_token(&format!("c{chatters}")));
            for n in 0..5 {
                let reply = client
                    .send_chat(pb::SendChatRequest {
                        table_id: "T01".into(),
                        text: format!("{n} {line}").chars().take(200).collect(),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(reply.refusal, None);
            }
        }
        let cards = dealer.finish(&mut rig.croupier, &round).await;
        played.push((round, cards));
        rounds_stalled += 1;
        if rig.croupier.state().await.unwrap().players == 3 {
            break;
        }
        assert!(
            rounds_stalled < 20,
            "the stalled subscriber was never cut off"
        );
    }
    // Cut off: the table goes on without it.
    players_become(&mut rig.croupier, 3).await;
    let cut_after = paused.elapsed();
    let round = dealer.open(&mut rig.croupier).await;
    let cards = dealer.finish(&mut rig.croupier, &round).await;
    played.push((round, cards));
    proxy.pause(false);
    players_become(&mut rig.croupier, 4).await;

    let marker = dealer.open(&mut rig.croupier).await;
    stop_tx.send(Some(marker)).unwrap();
    let mut seen = Vec::new();
    for task in tasks {
        seen.push(
            tokio::time::timeout(Duration::from_secs(60), task)
                .await
                .unwrap()
                .unwrap(),
        );
    }
    let gaps = check_streams(&seen);
    assert!(
        gaps.iter().all(|&g| g == 0),
        "resumed within the ring: {gaps:?}"
    );
    check_rounds(&seen, &played);
    let stalled = &seen[3];
    let cut: Vec<&pb::TableEvent> = stalled
        .events
        .iter()
        .map(|(e, _)| e)
        .filter(|e| matches!(e.event, Some(E::CutOff(_))))
        .collect();
    assert!(
        !cut.is_empty() || stalled.reconnects > 0,
        "the stalled subscriber was never cut off"
    );
    let public = |s: &Seen| s.events.iter().filter(|(e, _)| is_public(e)).count();
    assert_eq!(
        public(stalled),
        public(&seen[0]),
        "the stalled subscriber got every public event"
    );
    let mut delays: Vec<f64> = seen[..3].iter().flat_map(delays_ms).collect();
    delays.sort_by(f64::total_cmp);
    eprintln!(
        "stalled subscriber: cut off {cut_after:?} after its network stopped ({rounds_stalled} rounds, \
         {chatters} chatters, {} public events), {} CutOff, {} reconnects; the others' receive delays \
         over {} events: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:?}",
        public(&seen[0]),
        cut.len(),
        stalled.reconnects,
        delays.len(),
        percentile(&delays, 0.5),
        percentile(&delays, 0.99),
        delays.last().copied().unwrap_or_default(),
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// 5. The journal's disk full

/// How the journal's disk is made full.
enum Full {
    /// A tmpfs mounted on the data dir (root); a filler file takes what is left.
    Tmpfs { filler: PathBuf },
    /// No mount possible: a file-size limit on the broadcaster (SIGXFSZ ignored, so a
    /// write past it fails with EFBIG), set and lifted with `prlimit`.
    FileSizeLimit,
}

/// Unmounts the tmpfs when the test ends, also on a panic (after the processes using it,
/// which are dropped first).
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

fn mount_tmpfs(dir: &Path, bytes: u64) -> Option<Unmount> {
    std::fs::create_dir_all(dir).ok()?;
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
        .arg("tmpfs")
        .arg(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    status.success().then(|| Unmount(dir.to_owned()))
}

impl Full {
    /// Takes every free byte (tmpfs, where the journal writes no zeros ahead), or caps the
    /// broadcaster's files at the end of the journal's records: a file-size limit refuses
    /// any write past it, also into the zeros the journal keeps ahead on a disk.
    fn fill(&self, broadcaster: &Service, journal: &Path) {
        match self {
            Full::Tmpfs { filler, .. } => {
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(filler)
                    .unwrap();
                for chunk in [65_536, 4_096, 512, 1] {
                    let bytes = vec![0u8; chunk];
                    while std::io::Write::write_all(&mut file, &bytes).is_ok() {}
                }
            }
            Full::FileSizeLimit => {
                let bytes = std::fs::read(journal).unwrap();
                let size = bytes
                    .iter()
                    .rposition(|&b| b != 0)
                    .map_or(0, |last| last + 1);
                prlimit(broadcaster, &size.to_string());
            }
        }
    }

    /// Room again (a broadcaster killed meanwhile comes back without the limit).
    fn free(&self, broadcaster: &mut Service) {
        match self {
            Full::Tmpfs { filler, .. } => std::fs::remove_file(filler).unwrap(),
            Full::FileSizeLimit if broadcaster.is_running() => prlimit(broadcaster, "unlimited"),
            Full::FileSizeLimit => {}
        }
    }

    fn cause(&self) -> &'static str {
        match self {
            Full::Tmpfs { .. } => "journal write failed: No space left on device",
            Full::FileSizeLimit => "journal write failed: File too large",
        }
    }
}

fn prlimit(service: &Service, soft: &str) {
    let status = std::process::Command::new("prlimit")
        .args([
            "--pid",
            &service.pid().to_string(),
            &format!("--fsize={soft}:"),
        ])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit: {status}");
}

/// The broadcaster started from `setup`, behind a shell that ignores SIGXFSZ first (the
/// file-size method; ignored signals stay ignored across exec).
fn start_ignoring_sigxfsz(setup: &BroadcasterSetup) -> Service {
    let program = banco_e2e::banco().get_program().to_owned();
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", r#"trap "" XFSZ; exec "$0" "$@""#])
        .arg(program)
        .args(setup.args());
    Service::spawn("broadcaster", command)
}

/// The next croupier command of a round on a live table, from its state: `None` once the
/// round is settled.
fn next_step(state: &pb::TableState, dealer: &mut Dealer) -> Option<Vec<String>> {
    let step = match state.phase() {
        pb::TablePhase::BettingOpen => vec!["close-betting".to_owned()],
        pb::TablePhase::BettingClosed | pb::TablePhase::Dealing => {
            vec!["deal".to_owned(), dealer.card().to_string()]
        }
        pb::TablePhase::Result => vec!["confirm".to_owned()],
        _ => return None,
    };
    Some(step)
}

/// The journal's disk full: the broadcaster's data dir on a 1 MiB tmpfs (or, without
/// root, a file-size limit), filled up mid-round. The croupier's commands (`banco
/// croupier`) go on until one cannot be journaled: it is refused, exit 1, with a message
/// naming the cause (`journal write failed: No space left on device`) and saying nothing
/// changed; the console's state shows the `journal_failed` alert; the table is exactly as
/// before (same seq, cards, phase); sent again with the disk still full, it is refused the
/// same way. Space freed, the same command (same id) is applied once, in the same
/// broadcaster. Then the disk is filled again until a command is refused, the broadcaster
/// SIGKILLed, space freed and the broadcaster restarted: its journal replays cleanly
/// (nothing half-written), the table is exactly as before the refused command, and that
/// command is applied when sent again. Every round played is in the outbox once, on a
/// chain that verifies, and the player's balance is the model's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_journal_disk_refuses_the_command_changes_nothing_and_recovers() {
    let started = Instant::now();
    let area = tempfile::tempdir().unwrap();
    let mount = area.path().join("data");
    let unmount = mount_tmpfs(&mount, 1 << 20);
    let full = match &unmount {
        Some(_) => Full::Tmpfs {
            filler: mount.join("filler"),
        },
        None => Full::FileSizeLimit,
    };
    let method = match &full {
        Full::Tmpfs { .. } => format!("a 1 MiB tmpfs on {}", mount.display()),
        Full::FileSizeLimit => "a file-size limit (no tmpfs could be mounted)".to_owned(),
    };
    eprintln!("disk full: using {method}");
    // The journal's disk fills; the players' wallet is elsewhere (it has its own disk).
    let wallet = format!("sqlite://{}", area.path().join("wallet.db").display());
    let mut rig = Rig::start(|setup, _, _| {
        setup.data_dir = mount.clone();
        setup
            .extra_args
            .extend(["--wallet".to_owned(), wallet.clone()]);
    })
    .await;
    if matches!(full, Full::FileSizeLimit) {
        rig.broadcaster.kill();
        rig.broadcaster = start_ignoring_sigxfsz(&rig.setup);
        let channel = connect(&rig.url(), None).await;
        rig.croupier.reconnect(channel);
    }
    let journal = rig.setup.data_dir.join("T01").join("T01.journal");
    let mut books = Books::new(rig.limits().await, Paytable::standard(), WELCOME);
    let mut player = Player::new(&rig, "p0", connect(&rig.url(), None).await);
    let mut dealer = Dealer::new(55);
    let mut rounds = 0;
    let mut refusals = Vec::new();

    for phase in ["in process", "across a restart"] {
        let round = dealer.open(&mut rig.croupier).await;
        bet(
            &mut books,
            &mut player,
            &round,
            &format!("{round}-bet"),
            &bets_of(0, 1),
        )
        .await;
        full.fill(&rig.broadcaster, &journal);
        // Commands until one cannot be journaled.
        let mut state = rig.croupier.state().await.unwrap();
        let mut n = 0;
        let (args, id, before, err) = loop {
            let args = match next_step(&state, &mut dealer) {
                Some(args) => args,
                // A round fitted in the room left (the journal's last page): another one.
                None => {
                    assert!(n < 200, "no command was refused: the disk never filled");
                    let cards: Vec<Card> = state
                        .cards
                        .iter()
                        .map(|c| Card::parse(&c.card).unwrap())
                        .collect();
                    books.settle(&cards);
                    dealer.hand_done();
                    rounds += 1;
                    vec!["open-betting".to_owned()]
                }
            };
            n += 1;
            let id = format!("{round}-{n}");
            let mut cli: Vec<&str> = vec!["--command-id", &id];
            cli.extend(args.iter().map(String::as_str));
            let (code, _, err) = rig.cli(&cli);
            if code != Some(0) {
                break (args, id, state, err);
            }
            state = rig.croupier.state().await.unwrap();
        };
        let mut cli: Vec<&str> = vec!["--command-id", &id];
        cli.extend(args.iter().map(String::as_str));
        let round = before.round_id.clone();
        assert!(err.contains(full.cause()), "{err}");
        assert!(
            err.contains("the command was not applied and nothing changed"),
            "{err}"
        );
        refusals.push(format!(
            "{phase}: `{}` refused: {}",
            args.join(" "),
            err.trim()
        ));
        let after = rig.croupier.state().await.unwrap();
        assert_eq!(
            bare(&after),
            bare(&before),
            "{round}: the table after the refusal"
        );
        assert!(
            after.alerts.iter().any(|a| a.code == "journal_failed"),
            "{:?}",
            after.alerts
        );
        // Still full: refused again, nothing changed.
        let (code, _, err) = rig.cli(&cli);
        assert_ne!(code, Some(0), "{err}");
        assert!(err.contains(full.cause()), "{err}");
        assert_eq!(bare(&rig.croupier.state().await.unwrap()), bare(&before));

        if phase == "across a restart" {
            rig.broadcaster.kill();
            full.free(&mut rig.broadcaster);
            rig.broadcaster = rig.setup.start();
            let channel = connect(&rig.url(), None).await;
            rig.croupier.reconnect(channel.clone());
            player.client = player_client(channel, &player.token);
            let replayed = rig.croupier.state().await.unwrap();
            assert_eq!(
                bare(&replayed),
                bare(&before),
                "{round}: the table after the restart"
            );
        } else {
            full.free(&mut rig.broadcaster);
        }
        // Room again: the same command, applied once.
        let shown = croupier_cli(&rig.url(), &rig.croupier_token_file, &cli);
        assert!(!shown.contains("REFUSED"), "{shown}");
        let now = rig.croupier.state().await.unwrap();
        assert_eq!(
            record_of(now.seq),
            record_of(before.seq) + 1,
            "{round}: one record for the command"
        );
        assert!(now.alerts.is_empty(), "{:?}", now.alerts);
        let (code, again, _) = rig.cli(&cli);
        assert_eq!(code, Some(0));
        assert!(again.contains("already applied"), "{again}");
        // The round to its end.
        let mut state = now;
        let mut coup_cards: Vec<String> = state.cards.iter().map(|c| c.card.clone()).collect();
        while let Some(args) = next_step(&state, &mut dealer) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            croupier_cli(&rig.url(), &rig.croupier_token_file, &args);
            state = rig.croupier.state().await.unwrap();
            coup_cards = state.cards.iter().map(|c| c.card.clone()).collect();
        }
        assert_eq!(state.phase(), pb::TablePhase::Settled);
        let cards: Vec<Card> = coup_cards.iter().map(|c| Card::parse(c).unwrap()).collect();
        books.settle(&cards);
        dealer.hand_done();
        rounds += 1;
    }
    assert_eq!(player.balance().await, books.balance("p0"));
    let lines = outbox::wait_for(&rig.setup.outbox(), rounds, Duration::from_secs(60)).await;
    assert_eq!(lines.len(), rounds, "every round once in the outbox");
    outbox::verify_chain(&lines).unwrap();
    drop(rig);
    drop(unmount);
    eprintln!(
        "disk full ({method}): {}; {:?}",
        refusals.join("; "),
        started.elapsed()
    );
}
