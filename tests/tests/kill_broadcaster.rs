//! Issue 3, crash safety: 100 rounds while the broadcaster is SIGKILLed at seeded random
//! moments (often while a request is in flight), restarted on the same data dir each time.
//! Every request whose reply was lost is resent with the same command_id or idempotency
//! key, as the croupier console and player apps do. At the end no stake or payout is lost
//! or doubled: every balance equals the model, and the outbox holds exactly the settled
//! rounds, each once, in order, on a chain that verifies.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use banco::clients::player::bets_to_pb;
use banco_e2e::clients::{
    Cmd, Croupier, Player, first_table, numbered_players, player_client, settled_balance,
};
use banco_e2e::model::{Books, Expected, Limits, check_decisions};
use banco_e2e::outbox;
use banco_e2e::procs::{BroadcasterSetup, Keys, Service, channel, start_validator};
use banco_e2e::random_bets::{below, random_request};
use banco_rules::shoe::{ShoeConfig, ShuffledShoe};
use banco_rules::{Bet, BetKind, Card, Coup, Paytable, Settlement, Shoe, ShoeState, settle};
use banco_wire::pb;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use tokio::task::JoinHandle;

const SEED: u64 = 9;
const ROUNDS: usize = 100;
const PLAYERS: usize = 10;
const WELCOME: i64 = 200_000;
/// One request in this many gets a kill armed to land 0–15 ms after it is sent (before,
/// during or after its journaling; a debug build takes ~10 ms per request).
const KILL_ODDS: u64 = 40;

/// A round as dealt and as the model settled it.
type Played = (
    String,
    Vec<Card>,
    std::collections::BTreeMap<String, Vec<Settlement>>,
);

/// The broadcaster under test, its restarts, and the kills.
struct Crashy {
    setup: BroadcasterSetup,
    service: Arc<Mutex<Service>>,
    armed: Option<JoinHandle<()>>,
    kills: u32,
    restarts: u32,
    rng: ChaCha20Rng,
}

impl Crashy {
    /// Maybe arms a SIGKILL for the request about to be sent.
    fn maybe_arm(&mut self) {
        if below(&mut self.rng, KILL_ODDS) != 0 {
            return;
        }
        let delay = Duration::from_micros(below(&mut self.rng, 15_000));
        let service = Arc::clone(&self.service);
        self.kills += 1;
        self.armed = Some(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            service.lock().unwrap().kill();
        }));
    }

    /// Whether to treat the reply just received as lost: the broadcaster is killed at
    /// once (the command is durable: it was answered) and the request resent.
    fn lose_reply(&mut self) -> bool {
        if self.armed.is_some() || below(&mut self.rng, KILL_ODDS) != 0 {
            return false;
        }
        self.kills += 1;
        self.service.lock().unwrap().kill();
        true
    }

    /// Waits for an armed kill to land; restarts the broadcaster if it is down. `Some`
    /// new channel after a restart.
    async fn settle_down(&mut self) -> Option<tonic::transport::Channel> {
        if let Some(kill) = self.armed.take() {
            kill.await.unwrap();
        }
        let url = {
            let mut service = self.service.lock().unwrap();
            if service.is_running() {
                return None;
            }
            *service = self.setup.start();
            service.url()
        };
        self.restarts += 1;
        Some(channel(&url).await)
    }
}

struct Run {
    crashy: Crashy,
    croupier: Croupier,
    players: Vec<Player>,
    resent: u32,
    /// Resent croupier commands answered `replayed`: applied before the kill, reply lost.
    replayed: u32,
    /// Bet requests resent after a kill that followed their (lost) reply.
    replayed_bets: u32,
}

impl Run {
    fn reconnect(&mut self, channel: tonic::transport::Channel) {
        self.croupier.reconnect(channel.clone());
        for p in &mut self.players {
            p.client = player_client(channel.clone(), &p.token);
        }
    }

    /// A croupier command, resent with the same id until a reply arrives; it must be
    /// applied (now or by the first send).
    async fn command(&mut self, cmd: Cmd) -> pb::TableState {
        let id = self.croupier.next_id();
        let mut sends = 0;
        loop {
            self.crashy.maybe_arm();
            let reply = self.croupier.send(&id, &cmd).await;
            if let Some(channel) = self.crashy.settle_down().await {
                self.reconnect(channel);
            }
            sends += 1;
            match reply {
                Ok(reply) => {
                    if sends > 1 && reply.replayed {
                        self.replayed += 1;
                    }
                    if reply.refusal.is_none() && self.crashy.lose_reply() {
                        let channel = self.crashy.settle_down().await.unwrap();
                        self.reconnect(channel);
                        let again = self.croupier.send(&id, &cmd).await.unwrap();
                        assert!(again.replayed, "{cmd:?} ({id}) resent: {again:?}");
                        assert_eq!(again.seq, reply.seq, "{cmd:?} ({id}) resent");
                        assert_eq!(again.refusal, None);
                        self.replayed += 1;
                        self.resent += 1;
                    }
                    if let Some(refusal) = reply.refusal {
                        panic!("{cmd:?} ({id}, send {sends}) refused: {refusal:?}");
                    }
                    return reply.state.unwrap();
                }
                Err(status) => {
                    assert!(sends < 20, "{cmd:?} ({id}): {status}");
                    self.resent += 1;
                }
            }
        }
    }

    /// Every player with a request sends it at once; lost replies are resent with the same
    /// key until every request has its answer, which is checked against the model.
    async fn bets(
        &mut self,
        books: &mut Books,
        round_id: &str,
        wave: u32,
        requests: Vec<Option<Vec<(BetKind, i64)>>>,
    ) {
        let mut expected = Vec::new();
        for (p, r) in self.players.iter().zip(&requests) {
            expected.push(r.as_ref().map(|r| {
                let existing = books.round.get(&p.name).cloned();
                (books.predict(&p.name, r), existing)
            }));
        }
        let mut replies: Vec<Option<pb::PlaceBetsResponse>> = vec![None; requests.len()];
        for attempt in 0.. {
            let missing: Vec<usize> = (0..requests.len())
                .filter(|&i| requests[i].is_some() && replies[i].is_none())
                .collect();
            if missing.is_empty() {
                break;
            }
            assert!(attempt < 20, "{round_id}: bets never answered");
            if attempt > 0 {
                self.resent += missing.len() as u32;
            }
            self.crashy.maybe_arm();
            let sends = missing.iter().map(|&i| {
                let mut client = self.players[i].client.clone();
                let request = pb::PlaceBetsRequest {
                    table_id: "T01".into(),
                    round_id: round_id.to_owned(),
                    bets: bets_to_pb(requests[i].as_ref().unwrap()),
                    idempotency_key: format!("{}-{round_id}-{wave}", self.players[i].name),
                };
                async move { (i, client.place_bets(request).await) }
            });
            let answers = futures::future::join_all(sends).await;
            for (i, answer) in answers {
                if let Ok(reply) = answer {
                    replies[i] = Some(reply.into_inner());
                }
            }
            if let Some(channel) = self.crashy.settle_down().await {
                self.reconnect(channel);
            }
        }
        // Now and then every reply of the wave is "lost": the broadcaster is killed and
        // the whole wave resent with the same keys; each answer must be the first one.
        if self.crashy.lose_reply() {
            let channel = self.crashy.settle_down().await.unwrap();
            self.reconnect(channel);
            for (i, first) in replies.iter().enumerate() {
                let (Some(request), Some(first)) = (&requests[i], first) else {
                    continue;
                };
                let key = format!("{}-{round_id}-{wave}", self.players[i].name);
                let again = self.players[i]
                    .client
                    .place_bets(pb::PlaceBetsRequest {
                        table_id: "T01".into(),
                        round_id: round_id.to_owned(),
                        bets: bets_to_pb(request),
                        idempotency_key: key,
                    })
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(
                    again.decisions, first.decisions,
                    "{} in {round_id}: resent bets",
                    self.players[i].name
                );
                self.resent += 1;
                self.replayed_bets += 1;
            }
        }
        for (i, reply) in replies.into_iter().enumerate() {
            let (Some(request), Some(reply), Some((expected, existing))) =
                (&requests[i], reply, &expected[i])
            else {
                continue;
            };
            let name = &self.players[i].name;
            if let Err(e) = check_decisions(expected, request, existing.as_ref(), &reply) {
                panic!("{name} in {round_id}: {e}");
            }
            if expected.iter().all(|e| matches!(e, Expected::Accepted(_))) {
                books.apply(name, request, expected);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_of_the_broadcaster_lose_and_double_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = WELCOME;
    let service = setup.start();
    let channel = channel(&service.url()).await;
    let croupier = Croupier::new(
        channel.clone(),
        &keys.issue("croupier", "dealer1", "1h"),
        "T01",
        "console",
    );
    let players = numbered_players(&keys, &channel, PLAYERS);
    let info = first_table(players[0].client.clone()).await;
    let paytable = Paytable::standard();
    let mut books = Books::new(Limits::from_info(&info), paytable.clone(), WELCOME);
    let mut run = Run {
        crashy: Crashy {
            setup: setup.clone(),
            service: Arc::new(Mutex::new(service)),
            armed: None,
            kills: 0,
            restarts: 0,
            rng: ChaCha20Rng::seed_from_u64(SEED ^ 0xdead),
        },
        croupier,
        players,
        resent: 0,
        replayed: 0,
        replayed_bets: 0,
    };

    let mut rng = ChaCha20Rng::seed_from_u64(SEED);
    let mut shoe: Option<ShuffledShoe> = None;
    let mut played: Vec<Played> = Vec::new();
    let started = Instant::now();
    for _ in 0..ROUNDS {
        if shoe.is_none() {
            run.command(Cmd::OpenShoe).await;
            let mut shuffled = Shoe::shuffled(ShoeConfig::default(), &mut rng).unwrap();
            let burn = shuffled.burn().unwrap();
            run.command(Cmd::Burn(burn.exposed.to_string())).await;
            shoe = Some(shuffled);
        }
        let shuffled = shoe.as_mut().unwrap();
        let state = run.command(Cmd::OpenBetting).await;
        let round_id = state.round_id.clone();
        for wave in 1..=2 {
            let requests = (0..PLAYERS)
                .map(|_| (below(&mut rng, 3) != 0).then(|| random_request(&mut rng)))
                .collect();
            run.bets(&mut books, &round_id, wave, requests).await;
        }
        let mut state = run.command(Cmd::CloseBetting).await;
        let mut coup = Coup::default();
        while state.due() != pb::Due::Complete {
            assert_eq!(state.due(), pb::Due::from(coup.due()), "{round_id}");
            let card = shuffled.next_card().unwrap();
            coup.deal(card).unwrap();
            state = run.command(Cmd::Deal(card.to_string())).await;
        }
        assert!(coup.is_complete(), "{round_id}: the table says complete");
        let state = run.command(Cmd::Confirm(round_id.clone())).await;
        assert_eq!(state.phase(), pb::TablePhase::Settled, "{round_id}");
        let settlements = books.settle(coup.cards());
        played.push((round_id, coup.cards().to_vec(), settlements));
        if shuffled.hand_finished().unwrap() == ShoeState::Ended {
            shoe = None;
        }
    }
    // No kill pending; the last restart (if any) is up.
    if let Some(channel) = run.crashy.settle_down().await {
        run.reconnect(channel);
    }
    let elapsed = started.elapsed();

    let lines = outbox::wait_for(&setup.outbox(), ROUNDS, Duration::from_secs(30)).await;
    // Let a late duplicate show up if there were one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines_again = outbox::read(&setup.outbox());
    assert_eq!(
        lines_again.len(),
        lines.len(),
        "the outbox grew after the last round"
    );
    assert_eq!(
        lines.len(),
        ROUNDS,
        "every settled round once in the outbox"
    );
    outbox::verify_chain(&lines).unwrap();
    for (line, (round_id, cards, settlements)) in lines.iter().zip(&played) {
        let r = line.recorded();
        assert_eq!(&r.round_id, round_id, "outbox order");
        assert!(!r.voided);
        assert_eq!(&r.cards, cards, "{round_id}");
        assert_eq!(&r.settlements, settlements, "{round_id}");
        let result = Coup::judge(&r.cards).unwrap();
        for (player, stakes) in &r.bets {
            let bets: Vec<Bet> = stakes.iter().map(|(&k, &s)| Bet::new(k, s)).collect();
            assert_eq!(
                settle(&bets, &result, &paytable).unwrap(),
                r.settlements[player],
                "{round_id} {player}"
            );
        }
    }
    let mut total = 0;
    for p in &mut run.players {
        let got = settled_balance(&mut p.client).await;
        assert_eq!(got, books.balance(&p.name), "{}'s balance", p.name);
        total += got;
    }
    assert_eq!(total + books.house, books.credited, "the books balance");
    assert!(
        run.replayed > 0 && run.replayed_bets > 0,
        "no lost reply was resent"
    );
    assert!(
        run.crashy.kills >= 10,
        "only {} kills were armed",
        run.crashy.kills
    );
    eprintln!(
        "kill_broadcaster: {ROUNDS} rounds in {elapsed:?}; {} kills armed, {} restarts, {} requests resent, \
         {} croupier commands and {} bet requests answered as first applied on resend",
        run.crashy.kills, run.crashy.restarts, run.resent, run.replayed, run.replayed_bets
    );
}
