//! Issue 17's reconciliation on real processes on loopback: the validator, the archive
//! (SQLite), `banco wallet` (SQLite) and a broadcaster spending through it and delivering
//! its rounds to the archive. A few rounds are played (a win and a loss, a tie, a position
//! cleared and bet again, a request refused over the player's own limit, a void), then
//! `banco audit reconcile` must find every movement matched, to the cent, read through the
//! wallet's Movements and from its database file alike; then one credit's amount edited and
//! another credit deleted in that file must each be named, with exit 1.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, SystemTime};

use banco::clients::player::bets_to_pb;
use banco_e2e::archive::{Auditor, Verified, sqlite3};
use banco_e2e::clients::{Authed, Cmd, Croupier, all_accepted, player_client};
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, SignedArchive, cashier_deposit, channel, start_validator,
    start_wallet,
};
use banco_e2e::{output_text, poll_blocking};
use banco_rules::BetKind;
use banco_wire::pb;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use serde_json::Value;

/// The processes, and the files they keep. Fields drop in order: processes first.
struct Rig {
    _broadcaster: Service,
    _wallet: Service,
    _archive: SignedArchive,
    _validator: Service,
    wallet_url: String,
    wallet_db: PathBuf,
    auditor: Auditor,
    keys: Keys,
    channel: tonic::transport::Channel,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn start() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::generate(&dir.path().join("keys"));
        let validator = start_validator(&keys);
        let archive_db = format!("sqlite://{}", dir.path().join("archive.db").display());
        let archive = SignedArchive::start(&keys, &archive_db, dir.path());
        let wallet_db = dir.path().join("wallet.db");
        let wallet = start_wallet(&keys, &format!("sqlite://{}", wallet_db.display()));
        let wallet_url = format!("grpc://{}", wallet.addr());
        for player in ["alice", "bob", "carol"] {
            cashier_deposit(&keys, dir.path(), &wallet, player, "300.00");
        }
        let broadcaster = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"))
            .with_wallet(&archive, &wallet_url)
            .start();
        let channel = channel(&broadcaster.url()).await;
        let auditor = Auditor::new(&keys, &archive.service.url(), dir.path());
        Rig {
            _broadcaster: broadcaster,
            _wallet: wallet,
            _archive: archive,
            _validator: validator,
            wallet_url,
            wallet_db,
            auditor,
            keys,
            channel,
            _dir: dir,
        }
    }

    fn player(&self, name: &str) -> PlayerServiceClient<Authed> {
        player_client(self.channel.clone(), &self.keys.issue("player", name, "1h"))
    }

    /// `banco audit reconcile --wallet <wallet> <args>`.
    fn reconcile(&self, wallet: &str, args: &[&str]) -> Output {
        let mut all = vec!["reconcile", "--wallet", wallet];
        all.extend_from_slice(args);
        self.auditor.run(&all)
    }

    /// The wallet's database, as `reconcile` reads it directly.
    fn wallet_file(&self) -> String {
        format!("sqlite://{}", self.wallet_db.display())
    }
}

async fn bet(
    client: &mut PlayerServiceClient<Authed>,
    round: &str,
    bets: &[(BetKind, i64)],
    key: &str,
) -> pb::PlaceBetsResponse {
    client
        .place_bets(pb::PlaceBetsRequest {
            table_id: "T01".to_owned(),
            round_id: round.to_owned(),
            bets: bets_to_pb(bets),
            idempotency_key: key.to_owned(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// Closes betting, deals `cards` (in dealing order: a complete hand), confirms.
async fn deal_and_confirm(croupier: &mut Croupier, round: &str, cards: &[&str]) {
    croupier.ok(Cmd::CloseBetting).await;
    for card in cards {
        croupier.ok(Cmd::Deal((*card).to_owned())).await;
    }
    let state = croupier.ok(Cmd::Confirm(round.to_owned())).await;
    assert_eq!(state.phase(), pb::TablePhase::Settled, "{round}");
}

/// The UTC date now, `YYYY-MM-DD`.
fn utc_day() -> String {
    let days = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 86_400;
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap() + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The JSON report's totals.
fn totals(out: &Output) -> Value {
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(out)));
    json["report"]["total"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_matches_every_movement_and_names_an_edited_one() {
    let rig = Rig::start().await;
    let mut croupier = Croupier::new(
        rig.channel.clone(),
        &rig.keys.issue("croupier", "dealer1", "1h"),
        "T01",
        "console",
    );
    let (mut alice, mut bob, mut carol) =
        (rig.player("alice"), rig.player("bob"), rig.player("carol"));
    croupier.ok(Cmd::OpenShoe).await;
    croupier.ok(Cmd::Burn("5C".to_owned())).await;

    // Round 1, Player wins 9 to 7: alice loses 10.00 on banker and wins 5.00 on player,
    // bob wins 20.00 on player; carol bets 8.00 on player and 6.00 on tie, clears them,
    // bets 5.00 on each again, wins on player and loses on tie.
    let r1 = croupier.ok(Cmd::OpenBetting).await.round_id;
    let two = [(BetKind::Banker, 1_000), (BetKind::Player, 500)];
    assert!(all_accepted(&bet(&mut alice, &r1, &two, "a1").await));
    let one = [(BetKind::Player, 2_000)];
    assert!(all_accepted(&bet(&mut bob, &r1, &one, "b1").await));
    let first = [(BetKind::Player, 800), (BetKind::Tie, 600)];
    assert!(all_accepted(&bet(&mut carol, &r1, &first, "c1").await));
    let cleared = carol
        .clear_bets(pb::ClearBetsRequest {
            table_id: "T01".to_owned(),
            round_id: r1.clone(),
            idempotency_key: "c2".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cleared.cleared.len(), 2, "{cleared:?}");
    let again = [(BetKind::Player, 500), (BetKind::Tie, 500)];
    assert!(all_accepted(&bet(&mut carol, &r1, &again, "c3").await));
    deal_and_confirm(&mut croupier, &r1, &["9H", "2C", "KD", "5S"]).await;

    // Round 2, a tie of naturals: alice's 5.00 on tie pays 8 to 1 and her 5.00 on banker
    // pushes, as do bob's 10.00 on banker; bob's next request goes over his own limit of
    // 30.00 and is refused, its debits cancelled.
    let r2 = croupier.ok(Cmd::OpenBetting).await.round_id;
    let limit = bob
        .set_self_limit(pb::SetSelfLimitRequest {
            max_bet_minor: 3_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(limit.max_bet_minor, 3_000);
    let two = [(BetKind::Banker, 500), (BetKind::Tie, 500)];
    assert!(all_accepted(&bet(&mut alice, &r2, &two, "a2").await));
    let one = [(BetKind::Banker, 1_000)];
    assert!(all_accepted(&bet(&mut bob, &r2, &one, "b2").await));
    let over = [(BetKind::Player, 500), (BetKind::Banker, 2_500)];
    let refused = bet(&mut bob, &r2, &over, "b3").await;
    assert!(!all_accepted(&refused), "{refused:?}");
    deal_and_confirm(&mut croupier, &r2, &["4C", "9S", "5D", "KH"]).await;

    // Round 3, voided while betting is open: alice's 7.00 comes back.
    let r3 = croupier.ok(Cmd::OpenBetting).await.round_id;
    let one = [(BetKind::Banker, 700)];
    assert!(all_accepted(&bet(&mut alice, &r3, &one, "a3").await));
    croupier
        .ok(Cmd::Void {
            round_id: r3.clone(),
            reason: "scanner fault".to_owned(),
        })
        .await;

    let (verified, _) = rig.auditor.wait_verified(3, Duration::from_secs(120));
    assert!(
        matches!(verified, Verified::Ok { records: 3, .. }),
        "{verified:?}"
    );

    // The credits reach the wallet behind the table: poll until nothing is pending.
    let clean = poll_blocking(
        Duration::from_secs(60),
        Duration::from_millis(200),
        || rig.reconcile(&rig.wallet_url, &[]),
        |out| out.status.code() == Some(0),
    );
    let stdout = String::from_utf8_lossy(&clean.stdout).into_owned();
    assert_eq!(clean.status.code(), Some(0), "{}", output_text(&clean));
    // Stakes 45.00 + 20.00 + 7.00; returns 60.00 + 60.00 + 7.00 (the void).
    let total = stdout.lines().find(|l| l.starts_with("total: ")).unwrap();
    assert!(total.contains("rounds 3  bets 9 "), "{total}");
    assert!(total.contains("stakes €72.00  returns €127.00"), "{total}");
    assert!(
        total.contains("house result -€55.00  by the wallet -€55.00"),
        "{total}"
    );
    assert!(stdout.contains("ok: every movement matches"), "{stdout}");

    // The same figures in minor units, through the service and from the file.
    let by_service = totals(&rig.reconcile(&rig.wallet_url, &["--json"]));
    let from_file = rig.reconcile(&rig.wallet_file(), &["--json", "--table", "T01"]);
    assert_eq!(
        from_file.status.code(),
        Some(0),
        "{}",
        output_text(&from_file)
    );
    assert_eq!(totals(&from_file), by_service);
    assert_eq!(by_service["stakes"], 7_200);
    assert_eq!(by_service["returns"], 12_700);
    // Every credit: the returns and carol's cleared 14.00.
    assert_eq!(by_service["credits"], 14_100);
    let (debits, cancels) = (
        by_service["debits"].as_i64().unwrap(),
        by_service["cancels"].as_i64().unwrap(),
    );
    // bob's refused request took nothing in the end, whichever of its debits went first.
    assert_eq!(debits - cancels, 7_200 + 1_400);
    assert_eq!(by_service["wallet_result"], -5_500);
    let day = utc_day();
    let of_day = rig.reconcile(&rig.wallet_url, &["--json", "--day", &day]);
    if day == utc_day() {
        assert_eq!(totals(&of_day), by_service, "{}", output_text(&of_day));
    }

    // One credit's amount edited in the wallet's file: named, both amounts, exit 1.
    let bobs = format!("credit:{r1}:bob:player");
    sqlite3(
        &rig.wallet_db,
        &format!(
            "UPDATE movements SET amount = amount + 100, delta = delta + 100 WHERE tx = '{bobs}'"
        ),
    );
    for wallet in [rig.wallet_file(), rig.wallet_url.clone()] {
        let out = rig.reconcile(&wallet, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = format!(
            "DIFFERENCE return differs: round {r1}  player bob  position player  tx {bobs}: \
             wallet €41.00, archive €40.00"
        );
        assert!(stdout.contains(&line), "{wallet}: {}", output_text(&out));
        assert!(
            stdout.lines().any(|l| l == "1 difference"),
            "{}",
            output_text(&out)
        );
    }

    // Another credit deleted: still owed to the player.
    let alices = format!("credit:{r2}:alice:tie");
    sqlite3(
        &rig.wallet_db,
        &format!("DELETE FROM movements WHERE tx = '{alices}'"),
    );
    let out = rig.reconcile(&rig.wallet_file(), &["--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let differences = json["report"]["differences"].as_array().unwrap();
    let pending: Vec<&Value> = differences
        .iter()
        .filter(|d| d["kind"] == "credit_pending")
        .collect();
    assert_eq!(pending.len(), 1, "{differences:?}");
    assert_eq!(pending[0]["tx"], alices.as_str());
    assert_eq!(pending[0]["expected_minor"], 4_500);
    assert_eq!(pending[0]["wallet_minor"], 0);
    assert_eq!(differences.len(), 2, "{differences:?}");
}
