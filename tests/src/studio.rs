//! A studio on loopback, as `docs/src/operations/studio.md` lays it out: NATS with
//! JetStream, a validator, an origin broadcaster publishing table T01's events
//! (`--events`), edges serving the players from the stream, a croupier dealing a seeded
//! shoe, and many players following the table on the edges, each able to move to another
//! edge. Every process is real and killed when the studio is dropped.

use std::time::{Duration, SystemTime};

use banco_auth::Role;
use banco_natsd::NatsServer;
use banco_wire::pb;

use crate::clients::{Croupier, Dealer, player_client};
use crate::follow::{Follower, Seen};
use crate::nats::{Streamed, start_nats, stream_of, timeless, visible_to};
use crate::poll;
use crate::procs::{BroadcasterSetup, EdgeSetup, Keys, Service, channel, start_validator};

pub const TABLE: &str = "T01";

/// Each player's welcome credit, in minor units.
pub const WELCOME: i64 = 1_000_000;

/// One edge and how to start it again.
#[derive(Debug)]
pub struct Edge {
    pub setup: EdgeSetup,
    pub service: Service,
}

/// The studio. Fields drop in order: processes first, the folder last.
#[derive(Debug)]
pub struct Studio {
    pub edges: Vec<Edge>,
    pub origin: Service,
    pub origin_setup: BroadcasterSetup,
    pub croupier: Croupier,
    pub dealer: Dealer,
    pub nats: NatsServer,
    pub validator: Service,
    pub keys: Keys,
    _dir: tempfile::TempDir,
}

impl Studio {
    /// NATS, a validator, the origin and `edges` edges (each given `edge_args`).
    pub async fn start(edges: usize, edge_args: &[&str]) -> Studio {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let keys = Keys::generate(&dir.path().join("keys"));
        let nats = start_nats(&dir.path().join("js"));
        let validator = start_validator(&keys);
        let mut origin_setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("origin"));
        origin_setup.welcome_credit = WELCOME;
        origin_setup.extra_args = vec!["--events".into(), nats.url.clone()];
        let origin = origin_setup.start();
        origin_setup.listen = origin.addr().to_owned();
        let croupier = Croupier::new(
            channel(&origin.url()).await,
            &keys.issue("croupier", "anna", "1h"),
            TABLE,
            "studio",
        );
        let mut studio = Studio {
            edges: Vec::new(),
            origin,
            origin_setup,
            croupier,
            dealer: Dealer::new(20),
            nats,
            validator,
            keys,
            _dir: dir,
        };
        for _ in 0..edges {
            let mut setup = EdgeSetup::new(&studio.keys, &studio.nats.url);
            setup.extra_args = edge_args.iter().map(|a| (*a).to_owned()).collect();
            let service = setup.start();
            setup.listen = service.addr().to_owned();
            studio.edges.push(Edge { setup, service });
        }
        studio
    }

    /// Every edge's URL, in order.
    pub fn edge_urls(&self) -> Vec<String> {
        self.edges.iter().map(|e| e.service.url()).collect()
    }

    /// A token of `player`'s, signed here.
    pub fn token(&self, player: &str) -> String {
        self.keys.issue_at(
            Role::Player,
            player,
            Duration::from_secs(3600),
            SystemTime::now(),
        )
    }

    /// The name of the `i`-th player.
    pub fn player(i: usize) -> String {
        format!("p{i:03}")
    }

    /// `n` players following the table, player `i` on edge `i % edges` first, once each
    /// has its snapshot.
    pub async fn followers(&self, n: usize) -> Vec<Follower> {
        let urls = self.edge_urls();
        let followers: Vec<Follower> = (0..n)
            .map(|i| {
                let player = Studio::player(i);
                Follower::start(&urls, i % urls.len(), &player, &self.token(&player), TABLE)
            })
            .collect();
        let attached = poll(
            Duration::from_secs(120),
            Duration::from_millis(100),
            async || {
                followers
                    .iter()
                    .filter(|f| f.seen().events.is_empty())
                    .count()
            },
            |waiting| *waiting == 0,
        )
        .await;
        assert_eq!(attached, 0, "followers without their snapshot");
        followers
    }

    /// Opens a round (a shoe first if none is in play): its id.
    pub async fn open_round(&mut self) -> String {
        self.dealer.open(&mut self.croupier).await
    }

    /// `player`'s bet of 1,000 on Player, through `edge`: it must be accepted.
    pub async fn bet(&self, edge: usize, player: &str, round_id: &str) {
        self.bet_at(&self.edges[edge].service.url(), player, round_id)
            .await;
    }

    /// `player`'s bet of 1,000 on Player, sent to `url` (an edge, or the origin itself): it
    /// must be accepted.
    pub async fn bet_at(&self, url: &str, player: &str, round_id: &str) {
        let mut client = player_client(channel(url).await, &self.token(player));
        let reply = client
            .place_bets(pb::PlaceBetsRequest {
                table_id: TABLE.into(),
                round_id: round_id.into(),
                bets: vec![pb::Bet {
                    kind: pb::BetKind::Player.into(),
                    stake_minor: 1_000,
                }],
                idempotency_key: format!("{player}-{round_id}"),
            })
            .await
            .unwrap_or_else(|status| panic!("{player}'s bet through {url}: {status}"));
        let reply = reply.into_inner();
        assert!(crate::clients::all_accepted(&reply), "{player}: {reply:?}");
    }

    /// The first `n` players bet, each through the edge it follows the table on.
    pub async fn bets(&self, n: usize, round_id: &str) {
        let edges = self.edges.len();
        let mut bets = Vec::new();
        for i in 0..n {
            bets.push(async move { self.bet(i % edges, &Studio::player(i), round_id).await });
        }
        futures::future::join_all(bets).await;
    }

    /// A chat line of `player`'s through `edge`.
    pub async fn chat(&self, edge: usize, player: &str, text: &str) {
        let mut client = player_client(
            channel(&self.edges[edge].service.url()).await,
            &self.token(player),
        );
        let reply = client
            .send_chat(pb::SendChatRequest {
                table_id: TABLE.into(),
                text: text.into(),
            })
            .await
            .unwrap_or_else(|status| panic!("{player}'s chat: {status}"))
            .into_inner();
        assert_eq!(reply.refusal, None, "{player}'s chat");
    }

    /// SIGKILLs the origin and starts it again on its journal and port.
    pub async fn restart_origin(&mut self) {
        self.origin.kill();
        self.origin = self.origin_setup.start();
        self.croupier.reconnect(channel(&self.origin.url()).await);
    }

    /// Once every follower has every event of the stream it may see (the round's last
    /// wallet word too): what each was sent, and the stream.
    pub async fn settled(&self, followers: &[Follower]) -> (Vec<Seen>, Vec<Streamed>) {
        poll(
            Duration::from_secs(120),
            Duration::from_millis(200),
            async || {
                let stream = stream_of(&self.nats.url, TABLE).await;
                let seen: Vec<Seen> = followers.iter().map(Follower::seen).collect();
                (seen, stream)
            },
            |(seen, stream)| {
                followers.iter().zip(seen).all(|(f, s)| {
                    let last = visible_to(stream, &f.player).last().map_or(0, |e| e.seq);
                    s.last_seq() == last
                })
            },
        )
        .await
    }
}

/// Checks what `follower` was sent: one snapshot, never a gap, and after the snapshot
/// exactly the stream's events the player may see, each once, in order (cut-offs and the
/// resumes after them, on whatever edge, in between).
pub fn assert_exactly_the_stream(player: &str, seen: &Seen, stream: &[Streamed]) {
    let (snapshots, gaps, _) = seen.controls();
    assert_eq!(
        (snapshots, gaps),
        (1, 0),
        "{player}: one snapshot, no gap (servers {:?})",
        seen.servers
    );
    let from = seen.events[0].seq;
    let expected: Vec<pb::TableEvent> = visible_to(stream, player)
        .into_iter()
        .filter(|e| e.seq > from)
        .map(timeless)
        .collect();
    let got: Vec<pb::TableEvent> = seen.table_events().into_iter().map(timeless).collect();
    if got != expected {
        let seqs = |events: &[pb::TableEvent]| events.iter().map(|e| e.seq).collect::<Vec<_>>();
        panic!(
            "{player} (servers {:?}) was sent\n{:?}\nbut the stream has\n{:?}",
            seen.servers,
            seqs(&got),
            seqs(&expected)
        );
    }
}

/// The stream's messages are numbered by their events' seqs, strictly increasing.
pub fn assert_stream_ordered(stream: &[Streamed]) {
    for m in stream {
        assert_eq!(m.msg_id, m.event.seq.to_string(), "{m:?}");
    }
    for pair in stream.windows(2) {
        assert!(
            pair[0].event.seq < pair[1].event.seq,
            "out of order or twice in the stream: {} then {}",
            pair[0].event.seq,
            pair[1].event.seq
        );
    }
}
