//! Issue 17's faults between a table and its wallet, on real processes on loopback: the
//! validator, the archive, `banco wallet` (SQLite) and a broadcaster spending through it.
//! Between the broadcaster and the wallet sits a forwarding proxy (`wallet_proxy`) that
//! kills the broadcaster at an exact instant of a call; the wallet itself is killed and
//! restarted on its file. Each test ends with `banco audit reconcile` finding every
//! movement matched and the players' balances exact to the cent.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use banco::clients::player::bets_to_pb;
use banco_e2e::archive::Auditor;
use banco_e2e::clients::{
    Authed, Cmd, Croupier, all_accepted, player_client, refusals, settled_balance,
};
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, SignedArchive, bearer, cashier_deposit, channel,
    start_validator, start_wallet,
};
use banco_e2e::wallet_proxy::{Call, Moment, WalletProxy};
use banco_e2e::{output_text, poll, poll_blocking};
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::wallet_service_client::WalletServiceClient;
use serde_json::Value;

/// The processes and their files. Fields drop in order: the broadcaster first.
struct Rig {
    broadcaster: Service,
    setup: BroadcasterSetup,
    wallet: Service,
    wallet_db: PathBuf,
    proxy: WalletProxy,
    _archive: SignedArchive,
    _validator: Service,
    auditor: Auditor,
    keys: Keys,
    channel: tonic::transport::Channel,
    croupier: Croupier,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// Everything up, `players` each given €100.00 at the cashier, a shoe open and burnt.
    async fn start(players: &[&str]) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::generate(&dir.path().join("keys"));
        let validator = start_validator(&keys);
        let archive_db = format!("sqlite://{}", dir.path().join("archive.db").display());
        let archive = SignedArchive::start(&keys, &archive_db, dir.path());
        let wallet_db = dir.path().join("wallet.db");
        let wallet = start_wallet(&keys, &format!("sqlite://{}", wallet_db.display()));
        let proxy = WalletProxy::start(&wallet.url()).await;
        for player in players {
            cashier_deposit(&keys, dir.path(), &wallet, player, "100.00");
        }
        let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"))
            .with_wallet(&archive, &proxy.wallet_arg());
        let broadcaster = setup.start();
        // A restart comes back where the clients expect it.
        setup.listen = broadcaster.addr().to_owned();
        let channel = channel(&broadcaster.url()).await;
        let auditor = Auditor::new(&keys, &archive.service.url(), dir.path());
        let mut croupier = Croupier::new(
            channel.clone(),
            &keys.issue("croupier", "dealer1", "1h"),
            "T01",
            "console",
        );
        croupier.ok(Cmd::OpenShoe).await;
        croupier.ok(Cmd::Burn("5C".to_owned())).await;
        Rig {
            broadcaster,
            setup,
            wallet,
            wallet_db,
            proxy,
            _archive: archive,
            _validator: validator,
            auditor,
            keys,
            channel,
            croupier,
            _dir: dir,
        }
    }

    fn player(&self, name: &str) -> PlayerServiceClient<Authed> {
        player_client(self.channel.clone(), &self.keys.issue("player", name, "1h"))
    }

    /// The wallet's own balance of `player`, in euro cents.
    async fn wallet_balance(&self, player: &str) -> i64 {
        let channel = channel(&self.wallet.url()).await;
        let token = self.keys.issue("cashier", "desk-1", "1h");
        let mut wallet = WalletServiceClient::with_interceptor(channel, bearer(&token));
        wallet
            .balance(pb::BalanceRequest {
                player_id: player.to_owned(),
                currency: "EUR".to_owned(),
            })
            .await
            .unwrap()
            .into_inner()
            .balance_minor
    }

    /// SIGKILL of `banco wallet`: every call to it fails.
    fn wallet_down(&mut self) {
        self.wallet.kill();
    }

    /// `banco wallet` again on its file (on another port, behind the same proxy).
    fn wallet_back(&mut self) {
        self.wallet = start_wallet(
            &self.keys,
            &format!("sqlite://{}", self.wallet_db.display()),
        );
        self.proxy.set_upstream(&self.wallet.url());
    }

    /// The broadcaster is SIGKILLed at `moment` of its next `call` to the wallet.
    fn kill_broadcaster_at(&self, call: Call, moment: Moment) {
        self.proxy
            .kill_at(call, moment, self.broadcaster.pid(), "broadcaster");
    }

    /// Waits for the trap to go off and the broadcaster to be gone, then starts it again
    /// on its data folder, where it was.
    async fn restart_broadcaster(&mut self) {
        let sprung = self.proxy.sprung_within(Duration::from_secs(30)).await;
        assert!(sprung, "the broadcaster was never at the trapped call");
        self.broadcaster.kill();
        self.broadcaster = self.setup.start();
        self.channel = channel(&self.broadcaster.url()).await;
        self.croupier.reconnect(self.channel.clone());
    }

    /// `banco audit reconcile --wallet <wallet> --json`, once the archive has every round
    /// and the wallet every movement (a credit still owed makes it exit 1 until then).
    fn reconciled(&self) -> Value {
        let wallet = format!("grpc://{}", self.wallet.addr());
        let out = poll_blocking(
            Duration::from_secs(60),
            Duration::from_millis(250),
            || {
                self.auditor
                    .run(&["reconcile", "--wallet", &wallet, "--json"])
            },
            |out| out.status.code() == Some(0),
        );
        assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        json["report"]["total"].clone()
    }
}

fn request(round: &str, bets: &[(BetKind, i64)], key: &str) -> pb::PlaceBetsRequest {
    pb::PlaceBetsRequest {
        table_id: "T01".to_owned(),
        round_id: round.to_owned(),
        bets: bets_to_pb(bets),
        idempotency_key: key.to_owned(),
    }
}

async fn bet(
    client: &mut PlayerServiceClient<Authed>,
    round: &str,
    bets: &[(BetKind, i64)],
    key: &str,
) -> pb::PlaceBetsResponse {
    client
        .place_bets(request(round, bets, key))
        .await
        .unwrap()
        .into_inner()
}

/// Player 9 against Banker 7: Player wins, no pair, no natural.
const PLAYER_WINS: [&str; 4] = ["9H", "2C", "KD", "5S"];

async fn deal(croupier: &mut Croupier, cards: &[&str]) {
    croupier.ok(Cmd::CloseBetting).await;
    for card in cards {
        croupier.ok(Cmd::Deal((*card).to_owned())).await;
    }
}

/// The wallet down while betting is open: the bet is refused with a reason that names the
/// wallet, nothing is debited, and the table deals and settles the round without it;
/// back, the next round's bet goes through and pays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_down_while_betting_takes_nothing_and_the_table_plays_on() {
    let mut rig = Rig::start(&["alice"]).await;
    let mut alice = rig.player("alice");
    let r1 = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    rig.wallet_down();
    let reply = bet(&mut alice, &r1, &[(BetKind::Player, 1_000)], "a1").await;
    let refused = refusals(&reply);
    assert_eq!(refused.len(), 1, "{reply:?}");
    assert_eq!(refused[0].code(), pb::RefusalCode::Unavailable, "{reply:?}");
    assert!(
        refused[0].message.contains("the wallet did not answer")
            && refused[0].message.contains("nothing was taken"),
        "{reply:?}"
    );
    deal(&mut rig.croupier, &PLAYER_WINS).await;
    let settled = rig.croupier.ok(Cmd::Confirm(r1.clone())).await;
    assert_eq!(settled.phase(), pb::TablePhase::Settled);

    rig.wallet_back();
    assert_eq!(
        rig.wallet_balance("alice").await,
        10_000,
        "nothing was taken"
    );
    let r2 = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    // The table's connection to the wallet may take a moment to come back.
    let reply = poll(
        Duration::from_secs(20),
        Duration::from_millis(200),
        async || bet(&mut alice, &r2, &[(BetKind::Player, 1_000)], "a2").await,
        all_accepted,
    )
    .await;
    assert!(all_accepted(&reply), "{reply:?}");
    deal(&mut rig.croupier, &PLAYER_WINS).await;
    rig.croupier.ok(Cmd::Confirm(r2)).await;
    assert_eq!(settled_balance(&mut alice).await, 11_000);
    assert_eq!(rig.wallet_balance("alice").await, 11_000);

    let total = rig.reconciled();
    assert_eq!(total["stakes"], 1_000, "{total}");
    assert_eq!(total["returns"], 2_000, "{total}");
}

/// The wallet down at settlement: the round settles, its credits wait in the table's
/// journaled outbox and the player sees them as pending; when the wallet is back they
/// are credited once, and the balance is the expected one to the cent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_down_at_settlement_owes_the_credits_and_pays_them_once() {
    let mut rig = Rig::start(&["alice", "bob"]).await;
    let (mut alice, mut bob) = (rig.player("alice"), rig.player("bob"));
    let r1 = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    let two = [(BetKind::Player, 1_000), (BetKind::Tie, 500)];
    assert!(all_accepted(&bet(&mut alice, &r1, &two, "a1").await));
    let one = [(BetKind::Banker, 2_000)];
    assert!(all_accepted(&bet(&mut bob, &r1, &one, "b1").await));
    deal(&mut rig.croupier, &PLAYER_WINS).await;
    rig.wallet_down();
    let settled = rig.croupier.ok(Cmd::Confirm(r1.clone())).await;
    assert_eq!(settled.phase(), pb::TablePhase::Settled);

    // alice is owed her 10.00 back and 10.00 won; bob, who lost, nothing.
    let owed = alice
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(owed.pending_minor, 2_000, "{owed:?}");
    assert_eq!(owed.available_minor, 8_500, "{owed:?}");
    // The table plays on meanwhile.
    let r2 = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    deal(&mut rig.croupier, &PLAYER_WINS).await;
    rig.croupier.ok(Cmd::Confirm(r2)).await;
    let still = alice
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(still.pending_minor, 2_000, "{still:?}");

    rig.wallet_back();
    assert_eq!(settled_balance(&mut alice).await, 10_500);
    assert_eq!(settled_balance(&mut bob).await, 8_000);
    assert_eq!(rig.wallet_balance("alice").await, 10_500);
    assert_eq!(rig.wallet_balance("bob").await, 8_000);
    let total = rig.reconciled();
    assert_eq!(total["stakes"], 3_500, "{total}");
    assert_eq!(total["returns"], 2_000, "{total}");
    assert_eq!(total["credits"], 2_000, "once: {total}");
}

/// SIGKILL of the broadcaster after the wallet took a debit and before the table heard
/// of it (so before the bet's journal record): restarted, the table cancels the debit of
/// the bet it never accepted; the round plays on without it and the money is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcaster_killed_between_a_debit_and_its_record_cancels_the_debit() {
    let mut rig = Rig::start(&["alice"]).await;
    let mut alice = rig.player("alice");
    let r1 = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    rig.kill_broadcaster_at(Call::Debit, Moment::After);
    let lost = alice
        .place_bets(request(&r1, &[(BetKind::Banker, 1_000)], "a1"))
        .await;
    assert!(lost.is_err(), "the broadcaster answered: {lost:?}");
    rig.restart_broadcaster().await;
    assert_eq!(rig.proxy.forwarded(Call::Debit), 1);

    let cancelled = poll(
        Duration::from_secs(20),
        Duration::from_millis(100),
        async || rig.proxy.forwarded(Call::Cancel),
        |n| *n >= 1,
    )
    .await;
    assert!(cancelled >= 1, "no cancel reached the wallet");
    assert_eq!(rig.wallet_balance("alice").await, 10_000);
    let mut alice = rig.player("alice");
    assert_eq!(settled_balance(&mut alice).await, 10_000);
    // The round is still open for bets: a bet sent again under a new key is taken.
    let reply = bet(&mut alice, &r1, &[(BetKind::Player, 1_000)], "a2").await;
    assert!(all_accepted(&reply), "{reply:?}");
    deal(&mut rig.croupier, &PLAYER_WINS).await;
    rig.croupier.ok(Cmd::Confirm(r1)).await;
    assert_eq!(settled_balance(&mut alice).await, 11_000);

    let total = rig.reconciled();
    assert_eq!(total["stakes"], 1_000, "{total}");
    assert_eq!(total["returns"], 2_000, "{total}");
    assert_eq!(total["debits"], 2_000, "{total}");
    assert_eq!(total["cancels"], 1_000, "{total}");
    assert_eq!(rig.wallet_balance("alice").await, 11_000);
}

/// SIGKILL of the broadcaster between a settlement and its credits, twice: once before
/// the wallet saw the first credit, once after the wallet took it and before its answer
/// was back. Restarted, the table sends what it owes again; each credit moves money once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcaster_killed_between_settlement_and_its_credits_pays_once() {
    let mut rig = Rig::start(&["alice"]).await;
    let mut balance = 10_000;
    for (round, moment) in [(1, Moment::Before), (2, Moment::After)] {
        let mut alice = rig.player("alice");
        let r = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
        let key = format!("a{round}");
        assert!(all_accepted(
            &bet(&mut alice, &r, &[(BetKind::Player, 1_000)], &key).await
        ));
        deal(&mut rig.croupier, &PLAYER_WINS).await;
        rig.kill_broadcaster_at(Call::Credit, moment);
        let id = rig.croupier.next_id();
        // The settlement is durable before any credit is sent: the reply may or may not
        // have left before the kill.
        let _ = rig.croupier.send(&id, &Cmd::Confirm(r.clone())).await;
        rig.restart_broadcaster().await;
        let state = rig.croupier.state().await.unwrap();
        assert_eq!(state.phase(), pb::TablePhase::Settled, "{moment:?}");
        assert_eq!(state.round_id, r);
        balance += 1_000;
        let mut alice = rig.player("alice");
        assert_eq!(settled_balance(&mut alice).await, balance, "{moment:?}");
        assert_eq!(rig.wallet_balance("alice").await, balance, "{moment:?}");
    }
    let total = rig.reconciled();
    assert_eq!(total["stakes"], 2_000, "{total}");
    assert_eq!(total["returns"], 4_000, "{total}");
    assert_eq!(total["credits"], 4_000, "once each: {total}");
}

/// SIGKILL of `banco wallet` while bets pour in from five players, the instant after it
/// committed a debit whose answer never left, then a restart on its file: every bet the
/// table accepted was debited once, every bet it refused took nothing (the lost debit
/// cancelled once the wallet was back), and after the round each balance is exactly the
/// deposit less the accepted stakes plus their returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_killed_mid_transaction_loses_and_doubles_nothing() {
    const PLAYERS: [&str; 5] = ["p1", "p2", "p3", "p4", "p5"];
    let mut rig = Rig::start(&PLAYERS).await;
    let round = rig.croupier.ok(Cmd::OpenBetting).await.round_id;
    let mut tasks = tokio::task::JoinSet::new();
    for name in PLAYERS {
        let mut client = rig.player(name);
        let round = round.clone();
        tasks.spawn(async move {
            // (stake taken, on Player) of each accepted bet.
            let mut accepted = Vec::new();
            for n in 0..12 {
                let kind = if n % 2 == 0 {
                    BetKind::Player
                } else {
                    BetKind::Banker
                };
                let key = format!("{name}-{n}");
                let reply = client
                    .place_bets(request(&round, &[(kind, 300)], &key))
                    .await;
                match reply {
                    Ok(reply) if all_accepted(reply.get_ref()) => {
                        // The first bet on a position is raised to its minimum.
                        for d in &reply.get_ref().decisions {
                            if let Some(pb::bet_decision::Decision::Accepted(bet)) = &d.decision {
                                accepted.push((bet.accepted_minor, kind == BetKind::Player));
                            }
                        }
                    }
                    Ok(reply) => {
                        let refused = refusals(reply.get_ref());
                        assert!(
                            refused
                                .iter()
                                .all(|r| r.code() == pb::RefusalCode::Unavailable),
                            "{name}: {refused:?}"
                        );
                    }
                    Err(status) => panic!("{name}: {status}"),
                }
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
            (name, accepted)
        });
    }
    // Killed the instant after it committed a debit, before the answer left: the table
    // never hears it, refuses that bet, and must cancel the debit once the wallet is back.
    tokio::time::sleep(Duration::from_millis(150)).await;
    rig.proxy
        .kill_at(Call::Debit, Moment::After, rig.wallet.pid(), "wallet");
    let sprung = rig.proxy.sprung_within(Duration::from_secs(10)).await;
    assert!(sprung, "no debit reached the wallet");
    rig.wallet_down();
    tokio::time::sleep(Duration::from_millis(200)).await;
    rig.wallet_back();
    let (mut expected, mut staked) = (Vec::new(), 0);
    while let Some(done) = tasks.join_next().await {
        let (name, accepted) = done.unwrap();
        let stakes: i64 = accepted.iter().map(|(s, _)| s).sum();
        staked += stakes;
        let returned: i64 = accepted
            .iter()
            .filter(|(_, p)| *p)
            .map(|(s, _)| 2 * s)
            .sum();
        expected.push((name, 10_000 - stakes + returned, accepted.len()));
    }
    let bets: usize = expected.iter().map(|(_, _, n)| n).sum();
    assert!(
        bets > 0 && bets < 60,
        "the kill refused none or all of the 60 bets: {bets} accepted"
    );
    deal(&mut rig.croupier, &PLAYER_WINS).await;
    rig.croupier.ok(Cmd::Confirm(round)).await;
    for (name, balance, _) in &expected {
        let mut client = rig.player(name);
        assert_eq!(settled_balance(&mut client).await, *balance, "{name}");
        assert_eq!(rig.wallet_balance(name).await, *balance, "{name}");
    }
    let total = rig.reconciled();
    assert_eq!(total["stakes"], staked, "{total}");
    assert!(
        total["cancels"].as_i64().unwrap() > 0,
        "the lost debit: {total}"
    );
    eprintln!("{bets} of 60 bets accepted around the wallet's kill; {total}");
}
