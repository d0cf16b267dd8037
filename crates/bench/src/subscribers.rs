//! The subscribers of `banco-bench fanout`, in their own process (`banco-bench
//! fanout-subscribers`, hidden): N subscriptions over N / `--per-connection` connections,
//! to the broadcaster's PlayerService Subscribe (`--server`, one token per subscriber from
//! `--tokens-file`) or to a NATS subject (`--nats`).
//!
//! Talks to the parent in lines: prints `ready` once every subscription is open (gRPC: its
//! Snapshot came), reads `done K` on stdin once the parent sent K cards, and prints one JSON
//! [`Report`] when every subscriber has K cards, 30 s after `done` at the latest, or at once
//! when stdin closes. For every CardDealt it records `receipt − server_time` (the same
//! machine clock) and checks that each subscriber saw every event once, in order.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail, ensure};
use banco_auth::BearerToken;
use banco_wire::pb;
use bytes::Bytes;
use futures::stream::{self, SelectAll};
use futures::{Stream, StreamExt as _};
use prost::Message as _;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;

use super::grpc_h2;

/// Receive window of one subscribers' connection (16 MiB): room for the events of its
/// many subscribers, as if each had a connection of its own.
const CONNECTION_WINDOW: u32 = 16 << 20;

use super::common::quantile;

/// How long after `done` the subscribers still wait for missing cards.
const GRACE: Duration = Duration::from_secs(30);

/// Subscribe calls being opened at once.
const OPENING: usize = 256;

/// Problems listed in the report (the rest are only counted).
const LISTED: usize = 10;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["server", "nats"])))]
pub(crate) struct SubscribersArgs {
    /// The broadcaster, `http://127.0.0.1:PORT`; repeated (edges), the connections go to
    /// each in turn.
    #[arg(long, requires = "tokens_file")]
    server: Vec<String>,
    /// A NATS server, `nats://127.0.0.1:PORT`.
    #[arg(long)]
    nats: Option<String>,
    /// Player tokens, one a line, at least one per subscriber (with `--server`).
    #[arg(long)]
    tokens_file: Option<PathBuf>,
    /// The table to subscribe to (with `--server`).
    #[arg(long, default_value = "T01")]
    table: String,
    /// The subject to subscribe to (with `--nats`).
    #[arg(long, default_value = "banco.T01.events")]
    subject: String,
    #[arg(long)]
    subscribers: usize,
    /// Subscriptions sharing one connection.
    #[arg(long, default_value_t = 100)]
    per_connection: usize,
}

/// What the subscribers saw, printed as one JSON line.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Report {
    pub(super) subscribers: usize,
    pub(super) connections: usize,
    /// Cards each subscriber should have seen.
    pub(super) expected_cards: u32,
    /// Card receipts timed, over all subscribers.
    pub(super) received: usize,
    pub(super) p50_us: u64,
    pub(super) p90_us: u64,
    pub(super) p99_us: u64,
    pub(super) max_us: u64,
    /// Subscribers that saw every card once, in order, with the same cards as the first.
    pub(super) complete: usize,
    pub(super) problem_count: usize,
    pub(super) problems: Vec<String>,
    /// The cards as the first subscriber saw them.
    pub(super) cards: Vec<String>,
    /// CPU time this process used from `ready` to its report.
    #[serde(default)]
    pub(super) cpu_ms: u64,
}

/// What the parent has said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    Running,
    /// K cards were sent.
    Expect(u32),
    /// Stop waiting.
    Stop,
}

/// One subscriber's record of its stream.
#[derive(Debug, Default)]
struct Watch {
    last_seq: Option<u64>,
    cards: u32,
    /// FNV-1a of every CardDealt's seq and card, in order.
    fingerprint: u64,
    /// Nanoseconds from `server_time` to receipt, one per card.
    latencies: Vec<u64>,
    /// The cards in order (kept by the first subscriber only).
    seen: Option<Vec<String>>,
    problem: Option<String>,
}

impl Watch {
    fn new(keep_cards: bool) -> Watch {
        Watch {
            fingerprint: FNV_OFFSET,
            seen: keep_cards.then(Vec::new),
            ..Watch::default()
        }
    }

    fn fail(&mut self, problem: String) {
        self.problem.get_or_insert(problem);
    }

    fn on_event(&mut self, event: &pb::TableEvent, received: SystemTime) {
        if let Some(last) = self.last_seq
            && event.seq <= last
        {
            self.fail(format!(
                "event seq {} came after seq {last}: repeated or out of order",
                event.seq
            ));
        }
        self.last_seq = Some(event.seq);
        match &event.event {
            Some(pb::table_event::Event::CardDealt(dealt)) => {
                let card = dealt.card.as_ref().map_or("", |c| c.card.as_str());
                self.cards += 1;
                self.fingerprint = fnv(self.fingerprint, &event.seq.to_le_bytes());
                self.fingerprint = fnv(self.fingerprint, card.as_bytes());
                if let Some(seen) = &mut self.seen {
                    seen.push(card.to_owned());
                }
                match &event.server_time {
                    Some(sent) => self.latencies.push(nanos_between(sent, received)),
                    None => self.fail(format!("card at seq {} has no server_time", event.seq)),
                }
            }
            Some(pb::table_event::Event::CutOff(cut)) => self.fail(format!(
                "cut off at seq {}: {}",
                cut.resume_from_seq, cut.reason
            )),
            _ => {}
        }
    }

    fn done(&self, control: Control) -> bool {
        match control {
            Control::Running => false,
            Control::Expect(k) => self.cards >= k,
            Control::Stop => true,
        }
    }

    /// Whether this subscriber saw exactly `expected` cards, each once, in order.
    fn check(&self, expected: u32) -> Result<(), String> {
        if let Some(problem) = &self.problem {
            return Err(problem.clone());
        }
        if self.cards != expected {
            return Err(format!("saw {} cards of {expected}", self.cards));
        }
        Ok(())
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Nanoseconds from `sent` to `received`, 0 if the clock went back.
fn nanos_between(sent: &banco_wire::Timestamp, received: SystemTime) -> u64 {
    let received = received
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let sent = i128::from(sent.seconds) * 1_000_000_000 + i128::from(sent.nanos);
    u64::try_from((received - sent).max(0)).unwrap_or(u64::MAX)
}

/// What a connection's follower gets next.
enum Got {
    /// Subscriber `i`'s next event, encoded; `None`: its stream ended.
    Event(usize, Option<Result<Bytes, String>>),
    /// The parent's word changed.
    Control(Control),
}

type Source = Pin<Box<dyn Stream<Item = Got> + Send>>;

/// Subscriber `i`'s events, then the end of its stream.
fn tagged<S>(i: usize, events: S) -> Source
where
    S: Stream<Item = Result<Bytes, String>> + Send + 'static,
{
    Box::pin(
        events
            .map(move |event| Got::Event(i, Some(event)))
            .chain(stream::once(async move { Got::Event(i, None) })),
    )
}

/// Every change of the parent's word; `Stop` once if the parent's side is gone.
fn controlled(control: watch::Receiver<Control>) -> Source {
    Box::pin(stream::unfold(Some(control), |control| async move {
        let mut control = control?;
        match control.changed().await {
            Ok(()) => {
                let now = *control.borrow_and_update();
                Some((Got::Control(now), Some(control)))
            }
            Err(_) => Some((Got::Control(Control::Stop), None)),
        }
    }))
}

/// Follows the streams of one connection in one task, until the parent's word says each
/// is done or its stream ended. Why one task a connection, for gRPC and NATS alike: a
/// task a subscriber costs a wake-up and a poll of the parent's word for every event of
/// every subscriber, which the bench would time as if it were the server's.
async fn follow<S>(
    streams: Vec<Option<S>>,
    mut watches: Vec<Watch>,
    control: watch::Receiver<Control>,
) -> Vec<Watch>
where
    S: Stream<Item = Result<Bytes, String>> + Send + 'static,
{
    let mut current = *control.borrow();
    let mut all = SelectAll::new();
    all.push(controlled(control));
    let mut left = Left::new(watches.len());
    for (i, events) in streams.into_iter().enumerate() {
        match events {
            Some(events) => all.push(tagged(i, events)),
            // Its failure to subscribe is already in its watch.
            None => left.finish(i),
        }
    }
    while !left.none() {
        let Some(got) = all.next().await else {
            break;
        };
        match got {
            Got::Event(i, event) => {
                if left.finished[i] {
                    continue;
                }
                let watch = &mut watches[i];
                let over = match event {
                    Some(Ok(bytes)) => match pb::TableEvent::decode(bytes) {
                        Ok(event) => {
                            watch.on_event(&event, SystemTime::now());
                            watch.done(current)
                        }
                        Err(e) => {
                            watch.fail(format!("undecodable event: {e}"));
                            true
                        }
                    },
                    Some(Err(e)) => {
                        watch.fail(e);
                        true
                    }
                    None => {
                        watch.fail("the stream ended".to_owned());
                        true
                    }
                };
                if over {
                    left.finish(i);
                }
            }
            Got::Control(now) => {
                current = now;
                for (i, watch) in watches.iter().enumerate() {
                    if watch.done(current) {
                        left.finish(i);
                    }
                }
            }
        }
    }
    watches
}

/// Which of a connection's subscribers are still followed.
struct Left {
    finished: Vec<bool>,
    count: usize,
}

impl Left {
    fn new(subscribers: usize) -> Left {
        Left {
            finished: vec![false; subscribers],
            count: subscribers,
        }
    }

    fn finish(&mut self, i: usize) {
        if !std::mem::replace(&mut self.finished[i], true) {
            self.count -= 1;
        }
    }

    fn none(&self) -> bool {
        self.count == 0
    }
}

pub(super) async fn run(args: &SubscribersArgs) -> anyhow::Result<()> {
    ensure!(args.subscribers > 0, "--subscribers must be at least 1");
    ensure!(
        args.per_connection > 0,
        "--per-connection must be at least 1"
    );
    let connections = args.subscribers.div_ceil(args.per_connection);
    let (control, controlled) = watch::channel(Control::Running);
    let (ready, mut readies) = mpsc::unbounded_channel::<anyhow::Result<()>>();
    // A connection's subscribers: the first index and how many.
    let ranges: Vec<(usize, usize)> = (0..connections)
        .map(|c| {
            let first = c * args.per_connection;
            (first, args.per_connection.min(args.subscribers - first))
        })
        .collect();
    let mut tasks: Vec<JoinHandle<Vec<Watch>>> = Vec::with_capacity(connections);
    match (args.server.is_empty(), &args.nats) {
        (false, _) => {
            let path = args
                .tokens_file
                .as_ref()
                .context("--server needs --tokens-file")?;
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("could not read {}", path.display()))?;
            let mut tokens = Vec::with_capacity(args.subscribers);
            for (i, line) in text
                .lines()
                .filter(|l| !l.is_empty())
                .take(args.subscribers)
                .enumerate()
            {
                tokens.push(
                    BearerToken::new(line)
                        .with_context(|| format!("{}: line {}", path.display(), i + 1))?,
                );
            }
            ensure!(
                tokens.len() >= args.subscribers,
                "{}: {} tokens for {} subscribers",
                path.display(),
                tokens.len(),
                args.subscribers
            );
            let mut channels = Vec::with_capacity(connections);
            for c in 0..connections {
                let server = &args.server[c % args.server.len()];
                // A connection carries many subscribers here (a player's app carries
                // one): HTTP/2's default 64 KiB connection window would hold every event
                // back until the window update for the previous few arrived.
                channels.push(grpc_h2::Connection::open(server, CONNECTION_WINDOW).await?);
            }
            let opening = Arc::new(Semaphore::new(OPENING));
            let request = pb::SubscribeRequest {
                table_id: args.table.clone(),
                resume_from_seq: 0,
            };
            for (&(first, count), channel) in ranges.iter().zip(channels) {
                let tokens = tokens[first..first + count].to_vec();
                let (ready, controlled, opening, request) = (
                    ready.clone(),
                    controlled.clone(),
                    opening.clone(),
                    request.clone(),
                );
                tasks.push(tokio::spawn(async move {
                    let opened = tokens.iter().enumerate().map(|(k, token)| {
                        let (channel, opening, request, ready) =
                            (&channel, &opening, &request, &ready);
                        async move {
                            let i = first + k;
                            let mut watch = Watch::new(i == 0);
                            let subscribed = async {
                                let _permit = opening.acquire().await?;
                                let mut events = channel.subscribe(token, request).await?;
                                let first = events
                                    .next()
                                    .await
                                    .context("ended before a snapshot")?
                                    .map_err(anyhow::Error::msg)?;
                                let first = pb::TableEvent::decode(first)
                                    .context("an undecodable first event")?;
                                ensure!(
                                    matches!(
                                        first.event,
                                        Some(pb::table_event::Event::Snapshot(_))
                                    ),
                                    "the first event was not a snapshot: {first:?}"
                                );
                                watch.last_seq = Some(first.seq);
                                anyhow::Ok(events)
                            }
                            .await;
                            match subscribed {
                                Ok(events) => {
                                    let _ = ready.send(Ok(()));
                                    (Some(events), watch)
                                }
                                Err(e) => {
                                    let _ = ready.send(Err(e.context(format!("subscriber {i}"))));
                                    watch.fail("could not subscribe".to_owned());
                                    (None, watch)
                                }
                            }
                        }
                    });
                    let (streams, watches) =
                        futures::future::join_all(opened).await.into_iter().unzip();
                    follow(streams, watches, controlled).await
                }));
            }
        }
        (true, Some(url)) => {
            for &(first, count) in &ranges {
                let client = async_nats::ConnectOptions::new()
                    .connect(url.as_str())
                    .await
                    .with_context(|| format!("could not connect to NATS at {url}"))?;
                let mut streams = Vec::with_capacity(count);
                let mut watches = Vec::with_capacity(count);
                for i in first..first + count {
                    let subscriber = client
                        .subscribe(args.subject.clone())
                        .await
                        .with_context(|| format!("subscriber {i}: could not subscribe"))?;
                    streams.push(Some(subscriber.map(|m| Ok(m.payload))));
                    watches.push(Watch::new(i == 0));
                }
                client.flush().await.context("NATS flush")?;
                for _ in 0..count {
                    let _ = ready.send(Ok(()));
                }
                tasks.push(tokio::spawn(follow(streams, watches, controlled.clone())));
            }
        }
        (true, None) => bail!("give --server or --nats"),
    }
    drop(ready);
    for _ in 0..args.subscribers {
        match readies.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e),
            None => bail!("the subscribers stopped before all were ready"),
        }
    }
    say("ready").await?;
    let cpu_before = super::common::cpu_of(None)?;

    tokio::spawn(listen(control));
    let mut watches = Vec::with_capacity(args.subscribers);
    for task in tasks {
        watches.extend(task.await.context("a connection's subscribers failed")?);
    }
    let expected = match *controlled.borrow() {
        Control::Expect(k) => k,
        _ => 0,
    };
    let mut report = report(watches, expected, connections);
    let cpu = super::common::cpu_of(None)?.saturating_sub(cpu_before);
    report.cpu_ms = u64::try_from(cpu.as_millis()).unwrap_or(u64::MAX);
    say(&serde_json::to_string(&report)?).await
}

/// Reads the parent's `done K`; stops the subscribers GRACE after it, or when stdin closes.
async fn listen(control: watch::Sender<Control>) {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(k) = line
            .strip_prefix("done ")
            .and_then(|k| k.trim().parse().ok())
        {
            let _ = control.send(Control::Expect(k));
            tokio::select! {
                () = tokio::time::sleep(GRACE) => {}
                _ = lines.next_line() => {}
            }
            break;
        }
    }
    let _ = control.send(Control::Stop);
}

async fn say(line: &str) -> anyhow::Result<()> {
    let mut out = tokio::io::stdout();
    out.write_all(format!("{line}\n").as_bytes()).await?;
    out.flush().await?;
    Ok(())
}

/// Latency figures over all subscribers, and which of them did not see every card once,
/// in order, the same as the first.
fn report(mut watches: Vec<Watch>, expected: u32, connections: usize) -> Report {
    let subscribers = watches.len();
    let first = watches.iter().position(|w| w.seen.is_some());
    let cards = first
        .and_then(|i| watches[i].seen.clone())
        .unwrap_or_default();
    let reference = first.map(|i| watches[i].fingerprint);
    let mut problems = Vec::new();
    let mut complete = 0;
    for (i, w) in watches.iter().enumerate() {
        let verdict = w.check(expected).and_then(|()| {
            if Some(w.fingerprint) == reference {
                Ok(())
            } else {
                Err("its cards or their seqs differ from the first subscriber's".to_owned())
            }
        });
        match verdict {
            Ok(()) => complete += 1,
            Err(problem) => problems.push(format!("subscriber {i}: {problem}")),
        }
    }
    let mut latencies: Vec<u64> = watches
        .iter_mut()
        .flat_map(|w| std::mem::take(&mut w.latencies))
        .collect();
    latencies.sort_unstable();
    let us = |q: f64| quantile(&latencies, q).map_or(0, |ns| ns / 1_000);
    Report {
        subscribers,
        connections,
        expected_cards: expected,
        received: latencies.len(),
        p50_us: us(0.50),
        p90_us: us(0.90),
        p99_us: us(0.99),
        max_us: us(1.0),
        complete,
        problem_count: problems.len(),
        problems: problems.into_iter().take(LISTED).collect(),
        cards,
        cpu_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card(seq: u64, card: &str, sent_ms: u64) -> pb::TableEvent {
        pb::TableEvent {
            seq,
            server_time: Some(banco_wire::Timestamp::from(
                UNIX_EPOCH + Duration::from_millis(sent_ms),
            )),
            table_id: "T01".into(),
            round_id: String::new(),
            event: Some(pb::table_event::Event::CardDealt(pb::CardDealt {
                card: Some(pb::DealtCard {
                    card: card.into(),
                    ..pb::DealtCard::default()
                }),
                ..pb::CardDealt::default()
            })),
        }
    }

    fn other(seq: u64) -> pb::TableEvent {
        pb::TableEvent {
            seq,
            event: Some(pb::table_event::Event::BettingClosed(
                pb::BettingClosed::default(),
            )),
            ..pb::TableEvent::default()
        }
    }

    fn watched(events: &[pb::TableEvent], keep: bool) -> Watch {
        let mut w = Watch::new(keep);
        for (i, e) in events.iter().enumerate() {
            w.on_event(e, UNIX_EPOCH + Duration::from_millis(1_000 + i as u64));
        }
        w
    }

    #[test]
    fn every_card_once_in_order_passes() {
        let w = watched(
            &[
                other(4),
                card(5, "7C", 1_000),
                card(6, "KD", 1_000),
                other(7),
            ],
            true,
        );
        assert_eq!(w.check(2), Ok(()));
        assert_eq!(w.seen, Some(vec!["7C".to_owned(), "KD".to_owned()]));
        assert_eq!(w.latencies, vec![1_000_000, 2_000_000]);
    }

    #[test]
    fn a_repeated_or_missing_card_is_reported() {
        let repeated = watched(&[card(5, "7C", 0), card(5, "7C", 0)], false);
        assert!(repeated.check(2).is_err_and(|p| p.contains("repeated")));
        let missing = watched(&[card(5, "7C", 0)], false);
        assert_eq!(missing.check(2), Err("saw 1 cards of 2".to_owned()));
    }

    #[test]
    fn a_subscriber_with_other_cards_is_not_complete() {
        let first = watched(&[card(5, "7C", 0), card(6, "KD", 0)], true);
        let same = watched(&[card(5, "7C", 0), card(6, "KD", 0)], false);
        let other = watched(&[card(5, "7C", 0), card(6, "KH", 0)], false);
        let report = report(vec![first, same, other], 2, 1);
        assert_eq!(report.complete, 2);
        assert_eq!(report.problem_count, 1);
        assert!(report.problems[0].starts_with("subscriber 2:"));
        assert_eq!(report.cards, ["7C", "KD"]);
        assert_eq!(report.received, 6);
    }

    #[tokio::test]
    async fn a_connection_is_followed_until_each_subscriber_is_done_or_its_stream_ends() {
        let encoded = |e: pb::TableEvent| Ok(Bytes::from(e.encode_to_vec()));
        let (control, controlled) = watch::channel(Control::Running);
        // The first gets two cards and stays open; the second's stream ends after one.
        let (sender, open) = mpsc::unbounded_channel();
        sender.send(encoded(card(5, "7C", 0))).unwrap();
        sender.send(encoded(card(6, "KD", 0))).unwrap();
        let first = stream_of(open);
        let second = futures::stream::iter(vec![encoded(card(5, "7C", 0))]).boxed();
        let follower = tokio::spawn(follow(
            vec![Some(first), Some(second), None],
            vec![Watch::new(true), Watch::new(false), Watch::new(false)],
            controlled,
        ));
        control.send(Control::Expect(2)).unwrap();
        let watches = follower.await.unwrap();
        assert_eq!(watches[0].check(2), Ok(()));
        assert_eq!(watches[1].cards, 1);
        assert_eq!(watches[1].problem.as_deref(), Some("the stream ended"));
        assert_eq!(watches[2].cards, 0);
        drop(sender);
    }

    fn stream_of(
        mut events: mpsc::UnboundedReceiver<Result<Bytes, String>>,
    ) -> futures::stream::BoxStream<'static, Result<Bytes, String>> {
        futures::stream::poll_fn(move |cx| events.poll_recv(cx)).boxed()
    }
}
