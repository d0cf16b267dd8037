//! One balance across tables: two broadcasters (T01 and T02) spending through one `banco
//! wallet` (`--wallet grpc://…`), as real processes. Proves that a player's deposit at the
//! cashier is their balance at both tables, that a bet at one table leaves less to bet at
//! the other, that an overdraft across the two is refused with nothing taken, and that one
//! self-limit, set at one table, holds at the other; the same self-limit with a casino's
//! own (seamless) wallet, the limits kept in one `banco wallet` (`--wallet-limits`). And
//! that a table whose journal was lost is not started again on a new one while the wallet
//! holds its rounds.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use banco::clients::player::bets_to_pb;
use banco_e2e::clients::{Authed, Cmd, Croupier, all_accepted, player_client, refusals};
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, cashier_deposit, seamless_secret_file, start_seamless_wallet,
    start_validator, start_wallet,
};
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use tonic::transport::{Channel, Endpoint};

async fn connect(url: &str) -> Channel {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .unwrap()
        .connect_timeout(Duration::from_secs(5));
    endpoint.connect().await.unwrap()
}

/// A broadcaster hosting `table`, spending through the wallet at `wallet_url`.
fn broadcaster(keys: &Keys, validator: &Service, dir: &Path, table: &str, wallet: &str) -> Service {
    let mut setup = BroadcasterSetup::new(keys, validator, &dir.join(table));
    setup.table = table.to_owned();
    setup.extra_args.extend([
        "--wallet".to_owned(),
        wallet.to_owned(),
        "--no-clips".to_owned(),
    ]);
    setup.start()
}

/// Opens a shoe and betting at the croupier's table; the round open for bets.
async fn open_round(croupier: &mut Croupier) -> String {
    croupier.ok(Cmd::OpenShoe).await;
    croupier.ok(Cmd::Burn("5C".to_owned())).await;
    croupier.ok(Cmd::OpenBetting).await.round_id
}

fn refusal_code(reply: &pb::PlaceBetsResponse) -> Vec<pb::RefusalCode> {
    refusals(reply).iter().map(pb::Refusal::code).collect()
}

/// Two broadcasters, T01 and T02, spending through one `banco wallet`; a round open for
/// bets at each. Fields drop in order: the processes before their folder.
struct TwoTables {
    a: Service,
    b: Service,
    wallet: Service,
    _validator: Service,
    croupier_a: Croupier,
    croupier_b: Croupier,
    round_a: String,
    round_b: String,
    keys: Keys,
    dir: tempfile::TempDir,
}

impl TwoTables {
    /// With each `(player, amount)` deposited at the cashier first.
    async fn start(deposits: &[(&str, &str)]) -> TwoTables {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::generate(&dir.path().join("keys"));
        let validator = start_validator(&keys);
        let db = format!("sqlite://{}", dir.path().join("wallet.db").display());
        let wallet = start_wallet(&keys, &db);
        let wallet_url = format!("grpc://{}", wallet.addr());
        for (player, amount) in deposits {
            cashier_deposit(&keys, dir.path(), &wallet, player, amount);
        }
        let a = broadcaster(&keys, &validator, dir.path(), "T01", &wallet_url);
        let b = broadcaster(&keys, &validator, dir.path(), "T02", &wallet_url);
        let token = keys.issue("croupier", "dealer", "1h");
        let mut croupier_a = Croupier::new(connect(&a.url()).await, &token, "T01", "a");
        let mut croupier_b = Croupier::new(connect(&b.url()).await, &token, "T02", "b");
        let round_a = open_round(&mut croupier_a).await;
        let round_b = open_round(&mut croupier_b).await;
        TwoTables {
            a,
            b,
            wallet,
            _validator: validator,
            croupier_a,
            croupier_b,
            round_a,
            round_b,
            keys,
            dir,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_balance_and_one_self_limit_across_two_broadcasters() {
    let rig = TwoTables::start(&[("alice", "100.00")]).await;
    let (a, b, keys) = (&rig.a, &rig.b, &rig.keys);
    let (round_a, round_b) = (rig.round_a.clone(), rig.round_b.clone());

    let alice = keys.issue("player", "alice", "1h");
    let mut at_a = player_client(connect(&a.url()).await, &alice);
    let mut at_b = player_client(connect(&b.url()).await, &alice);
    let balance = |r: pb::Balance| r.available_minor;
    // The cashier's deposit is the balance at both tables, before any bet.
    for client in [&mut at_a, &mut at_b] {
        let got = client.get_balance(pb::GetBalanceRequest {}).await.unwrap();
        assert_eq!(balance(got.into_inner()), 10_000);
    }

    let place = |table: &str, round: &str, kind, amount, key: &str| pb::PlaceBetsRequest {
        table_id: table.to_owned(),
        round_id: round.to_owned(),
        bets: bets_to_pb(&[(kind, amount)]),
        idempotency_key: key.to_owned(),
    };
    let at_t01 = at_a
        .place_bets(place("T01", &round_a, BetKind::Banker, 6_000, "a1"))
        .await
        .unwrap()
        .into_inner();
    assert!(all_accepted(&at_t01), "{at_t01:?}");
    assert_eq!(balance(at_t01.balance.unwrap()), 4_000);
    // More than is left, at the other table: refused by the wallet, nothing taken.
    let at_t02 = at_b
        .place_bets(place("T02", &round_b, BetKind::Player, 6_000, "b1"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        refusal_code(&at_t02),
        [pb::RefusalCode::InsufficientFunds],
        "{at_t02:?}"
    );
    let left = at_b.get_balance(pb::GetBalanceRequest {}).await.unwrap();
    assert_eq!(balance(left.into_inner()), 4_000);
    // What is left can be bet there.
    let rest = at_b
        .place_bets(place("T02", &round_b, BetKind::Player, 4_000, "b2"))
        .await
        .unwrap()
        .into_inner();
    assert!(all_accepted(&rest), "{rest:?}");
    assert_eq!(balance(rest.balance.unwrap()), 0);

    // One self-limit: set at T01 (a lowering: at once), it holds at T02.
    let bob = keys.issue("player", "bob", "1h");
    cashier_deposit(keys, rig.dir.path(), &rig.wallet, "bob", "100.00");
    let mut bob_a = player_client(connect(&a.url()).await, &bob);
    let mut bob_b = player_client(connect(&b.url()).await, &bob);
    one_self_limit_at_both(&mut bob_a, &mut bob_b, &round_b).await;
}

type PlayerClient = PlayerServiceClient<Authed>;

/// A self-limit of €20.00 lowered at T01 (at once), then at T02 a bet of €25.00 refused for
/// it and one of €20.00 taken from the €100.00 there was.
async fn one_self_limit_at_both(at_a: &mut PlayerClient, at_b: &mut PlayerClient, round_b: &str) {
    let limit = at_a
        .set_self_limit(pb::SetSelfLimitRequest {
            max_bet_minor: 2_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(limit.max_bet_minor, 2_000);
    let place = |amount, key: &str| pb::PlaceBetsRequest {
        table_id: "T02".to_owned(),
        round_id: round_b.to_owned(),
        bets: bets_to_pb(&[(BetKind::Banker, amount)]),
        idempotency_key: key.to_owned(),
    };
    let over = at_b
        .place_bets(place(2_500, "k1"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        refusal_code(&over),
        [pb::RefusalCode::SelfLimit],
        "{over:?}"
    );
    let within = at_b
        .place_bets(place(2_000, "k2"))
        .await
        .unwrap()
        .into_inner();
    assert!(all_accepted(&within), "{within:?}");
    assert_eq!(within.balance.unwrap().available_minor, 8_000);
}

/// The money a casino's own (seamless) wallet, the self-limits banco's: two broadcasters
/// told to keep them in one `banco wallet` (`--wallet-limits grpc://…`, a store that holds
/// no money of the player's) hold one self-limit at both tables, set at one and refused at
/// the other. (Each broadcaster's own store, the default, would hold it at its own tables
/// only: the broadcaster warns of it.) A flag of the seamless wallet given for another
/// wallet is refused, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_self_limit_across_two_broadcasters_of_a_seamless_wallet() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let secret = seamless_secret_file(dir.path());
    // banco's own wallet standing in for the casino's (the seamless listener), holding the
    // money; a second `banco wallet`, which has never seen the player, the self-limits.
    let casino_db = format!("sqlite://{}", dir.path().join("casino.db").display());
    let (casino, seamless) = start_seamless_wallet(&keys, &casino_db, &secret);
    cashier_deposit(&keys, dir.path(), &casino, "bob", "100.00");
    let limits_db = format!("sqlite://{}", dir.path().join("limits.db").display());
    let limits = start_wallet(&keys, &limits_db);
    let flags = || {
        vec![
            "--wallet".to_owned(),
            format!("seamless+http://{seamless}/"),
            "--wallet-secret-file".to_owned(),
            secret.display().to_string(),
            "--wallet-limits".to_owned(),
            format!("grpc://{}", limits.addr()),
            "--no-clips".to_owned(),
        ]
    };
    let mut tables = Vec::new();
    for table in ["T01", "T02"] {
        let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join(table));
        setup.table = table.to_owned();
        setup.extra_args.extend(flags());
        tables.push(setup.start());
    }
    let token = keys.issue("croupier", "dealer", "1h");
    let mut croupier_b = Croupier::new(connect(&tables[1].url()).await, &token, "T02", "b");
    let round_b = open_round(&mut croupier_b).await;

    let bob = keys.issue("player", "bob", "1h");
    let mut at_a = player_client(connect(&tables[0].url()).await, &bob);
    let mut at_b = player_client(connect(&tables[1].url()).await, &bob);
    // The casino's balance, at both tables.
    for client in [&mut at_a, &mut at_b] {
        let got = client.get_balance(pb::GetBalanceRequest {}).await.unwrap();
        assert_eq!(got.into_inner().available_minor, 10_000);
    }
    // Lowered at T01, it holds at T02.
    one_self_limit_at_both(&mut at_a, &mut at_b, &round_b).await;

    // `--wallet-limits` means nothing to a wallet that keeps self-limits itself.
    let mut wrong = BroadcasterSetup::new(&keys, &validator, &dir.path().join("wrong"));
    wrong.extra_args.extend([
        "--wallet".to_owned(),
        format!("grpc://{}", casino.addr()),
        "--wallet-limits".to_owned(),
        format!("grpc://{}", limits.addr()),
    ]);
    let (status, stderr) = exits(&wrong.args());
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("--wallet-limits is for a seamless wallet"),
        "{stderr}"
    );
}

/// One player, €50.00 in the wallet, and ten bets of €20.00 sent at the same instant, five
/// at each of two tables on two broadcasters: exactly two are accepted (no balance below
/// zero), the other eight refused for insufficient funds with nothing taken, and what the
/// tables hold is what the wallet took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overdraft_sent_to_two_tables_at_once_takes_exactly_what_is_affordable() {
    let mut rig = TwoTables::start(&[("carol", "50.00")]).await;
    let rounds = [
        ("T01", rig.round_a.clone(), rig.a.url()),
        ("T02", rig.round_b.clone(), rig.b.url()),
    ];
    let carol = rig.keys.issue("player", "carol", "1h");
    let mut requests = Vec::new();
    for (table, round, url) in &rounds {
        let channel = connect(url).await;
        for n in 0..5 {
            let mut client = player_client(channel.clone(), &carol);
            let request = pb::PlaceBetsRequest {
                table_id: (*table).to_owned(),
                round_id: round.clone(),
                bets: bets_to_pb(&[(BetKind::Player, 2_000)]),
                idempotency_key: format!("{table}-{n}"),
            };
            requests.push(async move { client.place_bets(request).await });
        }
    }
    let replies: Vec<pb::PlaceBetsResponse> = futures::future::join_all(requests)
        .await
        .into_iter()
        .map(|r| r.unwrap().into_inner())
        .collect();
    let taken = replies.iter().filter(|r| all_accepted(r)).count();
    assert_eq!(taken, 2, "{replies:#?}");
    for reply in replies.iter().filter(|r| !all_accepted(r)) {
        assert_eq!(
            refusal_code(reply),
            [pb::RefusalCode::InsufficientFunds],
            "{reply:?}"
        );
    }
    // What the two tables hold is what the wallet took; the rest is back.
    let mut held = 0;
    for croupier in [&mut rig.croupier_a, &mut rig.croupier_b] {
        let closed = croupier.ok(Cmd::CloseBetting).await;
        held += closed.bet_totals.iter().map(|t| t.total_minor).sum::<i64>();
    }
    assert_eq!(held, 4_000);
    let mut at_a = player_client(connect(&rig.a.url()).await, &carol);
    let left = banco_e2e::poll(
        Duration::from_secs(10),
        Duration::from_millis(50),
        async || {
            at_a.get_balance(pb::GetBalanceRequest {})
                .await
                .unwrap()
                .into_inner()
        },
        |b| b.available_minor == 1_000 && b.pending_minor == 0,
    )
    .await;
    assert_eq!(left.available_minor, 1_000, "{left:?}");
}

/// Runs `banco` with `args` and waits for it to exit (a minute at most: it must not keep
/// running); its exit status and standard error.
fn exits(args: &[std::ffi::OsString]) -> (std::process::ExitStatus, String) {
    use std::io::Read as _;
    let mut child = banco_e2e::banco()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = banco_e2e::poll_blocking(
        Duration::from_secs(60),
        Duration::from_millis(50),
        || child.try_wait().unwrap(),
        Option::is_some,
    );
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("banco {args:?} kept running");
    };
    (status, reader.join().unwrap())
}

/// A table's journal lost (or its folder mistyped) while the wallet keeps the movements of
/// its rounds: started again on a new journal, the table would number its rounds from
/// T01-S0001-H001 again, and the wallet would answer their bets as replays of the earlier
/// ones, taking no money. The broadcaster refuses to start, naming the table, its journal
/// and the newest round the wallet holds, with `banco wallet` and with its embedded
/// wallet alike; and a new table whose wallet cannot be reached is not started either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_journal_for_a_table_the_wallet_holds_rounds_of_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let db = format!("sqlite://{}", dir.path().join("wallet.db").display());
    let wallet = start_wallet(&keys, &db);
    cashier_deposit(&keys, dir.path(), &wallet, "alice", "100.00");
    let shared = format!("grpc://{}", wallet.addr());
    let mut grpc = BroadcasterSetup::new(&keys, &validator, &dir.path().join("grpc"));
    grpc.extra_args.extend([
        "--wallet".to_owned(),
        shared.clone(),
        "--no-clips".to_owned(),
    ]);
    let mut embedded = BroadcasterSetup::new(&keys, &validator, &dir.path().join("embedded"));
    embedded.welcome_credit = 10_000;
    embedded.extra_args.push("--no-clips".to_owned());

    let alice = keys.issue("player", "alice", "1h");
    let token = keys.issue("croupier", "dealer", "1h");
    for setup in [&grpc, &embedded] {
        let mut table = setup.start();
        let mut croupier = Croupier::new(connect(&table.url()).await, &token, "T01", "c");
        let round = open_round(&mut croupier).await;
        let reply = player_client(connect(&table.url()).await, &alice)
            .place_bets(pb::PlaceBetsRequest {
                table_id: "T01".to_owned(),
                round_id: round.clone(),
                bets: bets_to_pb(&[(BetKind::Banker, 1_000)]),
                idempotency_key: "k1".to_owned(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(all_accepted(&reply), "{reply:?}");
        assert!(
            table.interrupt(Duration::from_secs(30)),
            "the broadcaster did not stop"
        );
        let journal = setup.data_dir.join("T01");
        std::fs::remove_dir_all(&journal).unwrap();

        let (status, stderr) = exits(&setup.args());
        assert_eq!(status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("could not start table T01")
                && stderr.contains(&format!("the journal {}", journal.display()))
                && stderr.contains(&format!(
                    "is new, but the wallet holds movements of table T01 (the newest of round \
                     {round})"
                ))
                && stderr.contains("Restore the table's journal"),
            "{stderr}"
        );
    }

    // A wallet that does not answer cannot say it holds none: a new table waits for it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("grpc://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut unreachable = BroadcasterSetup::new(&keys, &validator, &dir.path().join("nowhere"));
    unreachable
        .extra_args
        .extend(["--wallet".to_owned(), nowhere, "--no-clips".to_owned()]);
    let (status, stderr) = exits(&unreachable.args());
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not start table T01")
            && stderr.contains("and the wallet could not say whether it holds movements of table T01's earlier rounds"),
        "{stderr}"
    );
}
