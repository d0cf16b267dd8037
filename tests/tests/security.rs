//! Issue 8, "Security", across real processes on loopback (validator, broadcaster,
//! archive, wallet): every RPC of every service against every role, bad tokens of every kind, a
//! player trying to reach another's money, request size and rate limits, malformed
//! protobuf bodies and oversized chat. Every refusal changes nothing.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Issuer, Role};
use banco_e2e::archive::ArchiveDb;
use banco_e2e::clients::{Cmd, Croupier, all_accepted, stable};
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, bearer, channel, start_archive, start_validator,
};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use banco_wire::pb::rules_service_client::RulesServiceClient;
use banco_wire::pb::table_service_client::TableServiceClient;
use banco_wire::pb::video_ingest_client::VideoIngestClient;
use banco_wire::pb::wallet_service_client::WalletServiceClient;
use bytes::{Buf as _, BufMut as _};
use prost::Message as _;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::service::Interceptor;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

const TABLE: &str = "T01";
const STAKE: i64 = 500;

/// Sends a token when there is one: the same client type for "no token" and every role.
#[derive(Clone, Debug)]
struct MaybeToken(Option<BearerToken>);

impl MaybeToken {
    fn new(token: Option<&str>) -> MaybeToken {
        MaybeToken(token.map(bearer))
    }
}

impl Interceptor for MaybeToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        match &mut self.0 {
            Some(token) => token.call(request),
            None => Ok(request),
        }
    }
}

/// The three servers, each as a channel.
#[derive(Clone, Debug)]
struct Servers {
    validator: Channel,
    broadcaster: Channel,
    archive: Channel,
    wallet: Channel,
}

/// Every process of a deployment, kept alive for the test.
struct Deployment {
    _dir: tempfile::TempDir,
    keys: Keys,
    _validator: Service,
    _archive: Service,
    _broadcaster: Service,
    _wallet: Service,
    servers: Servers,
}

async fn deploy(extra_args: &[&str]) -> Deployment {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::generate(&dir.path().join("keys"));
    let validator = start_validator(&keys);
    let db = ArchiveDb::sqlite(&dir.path().join("archive.db"));
    let archive = start_archive(&keys, &db.url(), "127.0.0.1:0", None);
    let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
    setup.welcome_credit = 100_000;
    setup.archive_url = Some(archive.url());
    setup.extra_args = extra_args.iter().map(|s| (*s).to_owned()).collect();
    let broadcaster = setup.start();
    let wallet_db = format!("sqlite://{}", dir.path().join("wallet.db").display());
    let wallet_args: Vec<std::ffi::OsString> = vec![
        "wallet".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--db".into(),
        wallet_db.into(),
        "--public-key".into(),
        keys.public_key().into(),
    ];
    let wallet = Service::start("wallet", &wallet_args);
    let servers = Servers {
        wallet: channel(&wallet.url()).await,
        validator: channel(&validator.url()).await,
        broadcaster: channel(&broadcaster.url()).await,
        archive: channel(&archive.url()).await,
    };
    Deployment {
        _dir: dir,
        keys,
        _validator: validator,
        _archive: archive,
        _broadcaster: broadcaster,
        _wallet: wallet,
        servers,
    }
}

/// One RPC and the roles that may call it.
struct Rpc {
    service: &'static str,
    method: &'static str,
    allowed: &'static [Role],
}

const fn rpc(service: &'static str, method: &'static str, allowed: &'static [Role]) -> Rpc {
    Rpc {
        service,
        method,
        allowed,
    }
}

use Role::{Auditor, Cashier, Croupier as CroupierRole, Player, Service as ServiceRole};

/// Every RPC of banco.v1. `every_rpc_is_in_the_table` fails when one is added without a row.
const RPCS: &[Rpc] = &[
    rpc("RulesService", "CheckCard", &[ServiceRole, Auditor]),
    rpc("RulesService", "NextDue", &[ServiceRole, Auditor]),
    rpc("RulesService", "JudgeHand", &[ServiceRole, Auditor]),
    rpc("RulesService", "Settle", &[ServiceRole, Auditor]),
    rpc("RulesService", "Odds", &[ServiceRole, Auditor]),
    rpc("TableService", "OpenShoe", &[CroupierRole]),
    rpc("TableService", "Burn", &[CroupierRole]),
    rpc("TableService", "OpenBetting", &[CroupierRole]),
    rpc("TableService", "CloseBetting", &[CroupierRole]),
    rpc("TableService", "DealCard", &[CroupierRole]),
    rpc("TableService", "UndoLastCard", &[CroupierRole]),
    rpc("TableService", "ConfirmResult", &[CroupierRole]),
    rpc("TableService", "VoidRound", &[CroupierRole]),
    rpc("TableService", "EndShoe", &[CroupierRole]),
    rpc("TableService", "MutePlayer", &[CroupierRole]),
    rpc("TableService", "WatchTable", &[CroupierRole, ServiceRole]),
    rpc("TableService", "GetTable", &[CroupierRole, ServiceRole]),
    rpc("PlayerService", "ListTables", &[Player]),
    rpc("PlayerService", "Subscribe", &[Player]),
    rpc("PlayerService", "PlaceBets", &[Player]),
    rpc("PlayerService", "ClearBets", &[Player]),
    rpc("PlayerService", "Rebet", &[Player]),
    rpc("PlayerService", "PassHand", &[Player]),
    rpc("PlayerService", "TakeSeat", &[Player]),
    rpc("PlayerService", "LeaveSeat", &[Player]),
    rpc("PlayerService", "MyBets", &[Player]),
    rpc("PlayerService", "GetBalance", &[Player]),
    rpc("PlayerService", "SetSelfLimit", &[Player]),
    rpc("PlayerService", "LastResults", &[Player]),
    rpc("PlayerService", "SendChat", &[Player]),
    // An edge relays a table's video to its viewers with its own (service) token.
    rpc("PlayerService", "WatchVideo", &[Player, ServiceRole]),
    rpc("VideoIngest", "Publish", &[ServiceRole]),
    rpc("ArchiveService", "Append", &[ServiceRole]),
    rpc("ArchiveService", "AppendBatch", &[ServiceRole]),
    rpc("ArchiveService", "ListRounds", &[Auditor]),
    rpc("ArchiveService", "GetRound", &[Auditor]),
    rpc("ArchiveService", "ShoeReport", &[Auditor]),
    rpc("ArchiveService", "Stats", &[Auditor]),
    rpc("ArchiveService", "PlayerBets", &[Auditor, Player]),
    rpc("ArchiveService", "Export", &[Auditor]),
    rpc("ArchiveService", "Verify", &[Auditor]),
    rpc("ArchiveService", "GetClip", &[Auditor]),
    rpc("ArchiveService", "UploadClip", &[ServiceRole]),
    rpc("ArchiveService", "PutCheckpoint", &[ServiceRole]),
    rpc("WalletService", "Balance", &[ServiceRole, Cashier]),
    rpc("WalletService", "Debit", &[ServiceRole]),
    rpc("WalletService", "DebitMany", &[ServiceRole]),
    rpc("WalletService", "Credit", &[ServiceRole]),
    rpc("WalletService", "Cancel", &[ServiceRole]),
    rpc("WalletService", "SetSelfLimit", &[ServiceRole]),
    rpc("WalletService", "Deposit", &[Cashier]),
    rpc("WalletService", "Withdraw", &[Cashier]),
    rpc("WalletService", "Block", &[Cashier]),
    rpc("WalletService", "Unblock", &[Cashier]),
    rpc("WalletService", "Statement", &[Cashier, Auditor]),
    rpc("WalletService", "Movements", &[Auditor]),
    rpc("WalletService", "WatchBalances", &[ServiceRole]),
    rpc("WalletService", "TableRounds", &[ServiceRole]),
];

#[test]
fn every_rpc_is_in_the_table() {
    let set = prost_types::FileDescriptorSet::decode(banco_wire::FILE_DESCRIPTOR_SET).unwrap();
    let mut described = BTreeSet::new();
    for file in set.file.iter().filter(|f| f.package() == "banco.v1") {
        for service in &file.service {
            for method in &service.method {
                described.insert(format!("{}/{}", service.name(), method.name()));
            }
        }
    }
    let tabled: BTreeSet<String> = RPCS
        .iter()
        .map(|r| format!("{}/{}", r.service, r.method))
        .collect();
    assert_eq!(tabled.len(), RPCS.len(), "an RPC has two rows");
    assert_eq!(
        described, tabled,
        "every RPC of proto/banco/v1 needs a row in RPCS (and no row may name a missing one)"
    );
}

/// What a call is about: the round open for bets, and whose bets an archive query asks.
#[derive(Clone, Debug)]
struct Context {
    round_id: String,
    subject: String,
}

/// Calls `service/method` with a request that would change something if it were
/// admitted (ids fresh, the open round, real cards), as the holder of `token`.
async fn call(
    servers: &Servers,
    rpc: &Rpc,
    token: Option<&str>,
    ctx: &Context,
) -> Result<(), Status> {
    let auth = MaybeToken::new(token);
    let t = TABLE.to_owned();
    let id = format!(
        "{}-{}-{}",
        rpc.method,
        ctx.subject,
        token.map_or(0, str::len)
    );
    let round = ctx.round_id.clone();
    let cards = || {
        vec![
            "9H".to_owned(),
            "2C".to_owned(),
            "KD".to_owned(),
            "3S".to_owned(),
        ]
    };
    let bet = || pb::Bet {
        kind: pb::BetKind::Player.into(),
        stake_minor: STAKE,
    };
    let mut rules = RulesServiceClient::with_interceptor(servers.validator.clone(), auth.clone());
    let mut table = TableServiceClient::with_interceptor(servers.broadcaster.clone(), auth.clone());
    let mut player =
        PlayerServiceClient::with_interceptor(servers.broadcaster.clone(), auth.clone());
    let mut video = VideoIngestClient::with_interceptor(servers.broadcaster.clone(), auth.clone());
    let mut archive = ArchiveServiceClient::with_interceptor(servers.archive.clone(), auth.clone());
    let mut wallet = WalletServiceClient::with_interceptor(servers.wallet.clone(), auth);
    let who = || ctx.subject.clone();
    let eur = || "EUR".to_owned();
    let record = || pb::RoundRecord {
        round_id: "T01-S0099-H001".to_owned(),
        ..Default::default()
    };
    let unit = pb::VideoAccessUnit {
        table_id: t.clone(),
        sequence: 1,
        keyframe: true,
        codec: "h264".to_owned(),
        ..Default::default()
    };
    let clip = pb::ClipUpload {
        round_id: "T01-S0099-H001".to_owned(),
        size_bytes: 1,
        sha256: vec![0; 32],
        data: vec![0],
    };
    macro_rules! go {
        ($call:expr) => {
            $call.await.map(|_| ())
        };
    }
    match (rpc.service, rpc.method) {
        ("RulesService", "CheckCard") => go!(rules.check_card(pb::CheckCardRequest {
            card: "9H".to_owned(),
            ..Default::default()
        })),
        ("RulesService", "NextDue") => go!(rules.next_due(pb::NextDueRequest { cards: cards() })),
        ("RulesService", "JudgeHand") => {
            go!(rules.judge_hand(pb::JudgeHandRequest { cards: cards() }))
        }
        ("RulesService", "Settle") => go!(rules.settle(pb::SettleRequest {
            cards: cards(),
            bets: vec![bet()],
            ..Default::default()
        })),
        ("RulesService", "Odds") => go!(rules.odds(pb::OddsRequest {
            decks: 8,
            ..Default::default()
        })),
        ("TableService", "OpenShoe") => go!(table.open_shoe(pb::OpenShoeRequest {
            table_id: t,
            command_id: id,
            config: None,
        })),
        ("TableService", "Burn") => go!(table.burn(pb::BurnRequest {
            table_id: t,
            command_id: id,
            exposed_card: "5C".to_owned(),
            source: pb::CardSource::Scanner.into(),
        })),
        ("TableService", "OpenBetting") => go!(table.open_betting(pb::OpenBettingRequest {
            table_id: t,
            command_id: id,
            duration_ms: 0,
        })),
        ("TableService", "CloseBetting") => go!(table.close_betting(pb::CloseBettingRequest {
            table_id: t,
            command_id: id,
        })),
        ("TableService", "DealCard") => go!(table.deal_card(pb::DealCardRequest {
            table_id: t,
            command_id: id,
            card: "9H".to_owned(),
            source: pb::CardSource::Scanner.into(),
        })),
        ("TableService", "UndoLastCard") => go!(table.undo_last_card(pb::UndoLastCardRequest {
            table_id: t,
            command_id: id,
            reason: "misread".to_owned(),
            card: String::new(),
        })),
        ("TableService", "ConfirmResult") => {
            go!(table.confirm_result(pb::ConfirmResultRequest {
                table_id: t,
                command_id: id,
                round_id: round,
            }))
        }
        ("TableService", "VoidRound") => go!(table.void_round(pb::VoidRoundRequest {
            table_id: t,
            command_id: id,
            round_id: round,
            reason: "test".to_owned(),
        })),
        ("TableService", "EndShoe") => go!(table.end_shoe(pb::EndShoeRequest {
            table_id: t,
            command_id: id,
            reason: "test".to_owned(),
        })),
        ("TableService", "MutePlayer") => go!(table.mute_player(pb::MutePlayerRequest {
            table_id: t,
            command_id: id,
            player_id: "bob".to_owned(),
            minutes: 15,
            reason: "test".to_owned(),
        })),
        ("TableService", "WatchTable") => {
            go!(table.watch_table(pb::WatchTableRequest { table_id: t }))
        }
        ("TableService", "GetTable") => go!(table.get_table(pb::GetTableRequest { table_id: t })),
        ("PlayerService", "ListTables") => go!(player.list_tables(pb::ListTablesRequest {})),
        ("PlayerService", "Subscribe") => go!(player.subscribe(pb::SubscribeRequest {
            table_id: t,
            resume_from_seq: 0,
        })),
        ("PlayerService", "PlaceBets") => go!(player.place_bets(pb::PlaceBetsRequest {
            table_id: t,
            round_id: round,
            bets: vec![bet()],
            idempotency_key: id,
        })),
        ("PlayerService", "ClearBets") => go!(player.clear_bets(pb::ClearBetsRequest {
            table_id: t,
            round_id: round,
            idempotency_key: id,
        })),
        ("PlayerService", "Rebet") => go!(player.rebet(pb::RebetRequest {
            table_id: t,
            round_id: round,
            idempotency_key: id,
        })),
        ("PlayerService", "PassHand") => go!(player.pass_hand(pb::PassHandRequest {
            table_id: t,
            round_id: round,
        })),
        ("PlayerService", "TakeSeat") => go!(player.take_seat(pb::TakeSeatRequest {
            table_id: t,
            seat: 0,
        })),
        ("PlayerService", "LeaveSeat") => {
            go!(player.leave_seat(pb::LeaveSeatRequest { table_id: t }))
        }
        ("PlayerService", "MyBets") => go!(player.my_bets(pb::MyBetsRequest::default())),
        ("PlayerService", "GetBalance") => go!(player.get_balance(pb::GetBalanceRequest {})),
        ("PlayerService", "SetSelfLimit") => {
            go!(player.set_self_limit(pb::SetSelfLimitRequest {
                max_bet_minor: 100_000,
            }))
        }
        ("PlayerService", "LastResults") => {
            go!(player.last_results(pb::LastResultsRequest { table_id: t }))
        }
        ("PlayerService", "SendChat") => go!(player.send_chat(pb::SendChatRequest {
            table_id: t,
            text: format!("hello from {}", ctx.subject),
        })),
        ("PlayerService", "WatchVideo") => {
            go!(player.watch_video(pb::WatchVideoRequest { table_id: t }))
        }
        ("VideoIngest", "Publish") => go!(video.publish(futures::stream::iter(vec![unit]))),
        ("ArchiveService", "Append") => go!(archive.append(pb::AppendRequest {
            record: Some(record()),
        })),
        ("ArchiveService", "AppendBatch") => go!(archive.append_batch(pb::AppendBatchRequest {
            records: vec![record()],
        })),
        ("ArchiveService", "ListRounds") => {
            go!(archive.list_rounds(pb::ListRoundsRequest::default()))
        }
        ("ArchiveService", "GetRound") => {
            go!(archive.get_round(pb::GetRoundRequest { round_id: round }))
        }
        ("ArchiveService", "ShoeReport") => go!(archive.shoe_report(pb::ShoeReportRequest {
            shoe_id: "T01-S0001".to_owned(),
        })),
        ("ArchiveService", "Stats") => go!(archive.stats(pb::StatsRequest {
            scope: pb::StatsScope::Table.into(),
            key: t,
        })),
        ("ArchiveService", "PlayerBets") => go!(archive.player_bets(pb::PlayerBetsRequest {
            player_id: ctx.subject.clone(),
            ..Default::default()
        })),
        ("ArchiveService", "Export") => go!(archive.export(pb::ExportRequest::default())),
        ("ArchiveService", "Verify") => go!(archive.verify(pb::VerifyRequest {
            table_id: t,
            accept_unsigned: false,
            heads: Vec::new(),
        })),
        ("ArchiveService", "PutCheckpoint") => go!(archive.put_checkpoint(pb::TableCheckpoint {
            table_id: t,
            head_hash: vec![0; 32],
            signature: vec![0; 64],
            ..Default::default()
        })),
        ("ArchiveService", "GetClip") => {
            go!(archive.get_clip(pb::GetClipRequest { round_id: round }))
        }
        ("ArchiveService", "UploadClip") => {
            go!(archive.upload_clip(futures::stream::iter(vec![clip])))
        }
        ("WalletService", "Balance") => go!(wallet.balance(pb::BalanceRequest {
            player_id: who(),
            currency: eur(),
        })),
        ("WalletService", "Debit") => go!(wallet.debit(pb::DebitRequest {
            tx_id: id,
            player_id: who(),
            currency: eur(),
            amount_minor: STAKE,
            table_id: t,
            round_id: round,
            bet: "player".to_owned(),
            position_total_minor: STAKE,
        })),
        ("WalletService", "DebitMany") => go!(wallet.debit_many(pb::DebitManyRequest {
            debits: vec![pb::DebitRequest {
                tx_id: id,
                player_id: who(),
                currency: eur(),
                amount_minor: STAKE,
                table_id: t,
                round_id: round,
                bet: "player".to_owned(),
                position_total_minor: STAKE,
            }],
        })),
        ("WalletService", "Credit") => go!(wallet.credit(pb::CreditRequest {
            tx_id: id,
            player_id: who(),
            currency: eur(),
            amount_minor: STAKE,
            kind: pb::CreditKind::Refund.into(),
            table_id: t,
            round_id: round,
            bet: "player".to_owned(),
            debit_tx_ids: Vec::new(),
        })),
        ("WalletService", "Cancel") => go!(wallet.cancel(pb::CancelRequest {
            tx_id: id.clone(),
            debit_tx_id: format!("{id}-debit"),
            player_id: who(),
            currency: eur(),
            amount_minor: STAKE,
            table_id: t,
            round_id: round,
        })),
        ("WalletService", "SetSelfLimit") => {
            go!(wallet.set_self_limit(pb::WalletSelfLimitRequest {
                player_id: who(),
                currency: eur(),
                max_bet_minor: 100,
            }))
        }
        ("WalletService", "Deposit") => go!(wallet.deposit(pb::CashRequest {
            key: id,
            player_id: who(),
            currency: eur(),
            amount_minor: STAKE,
        })),
        ("WalletService", "Withdraw") => go!(wallet.withdraw(pb::CashRequest {
            key: id,
            player_id: who(),
            currency: eur(),
            amount_minor: 1,
        })),
        ("WalletService", "Block") => go!(wallet.block(pb::BlockRequest {
            player_id: who(),
            currency: eur(),
        })),
        ("WalletService", "Unblock") => go!(wallet.unblock(pb::BlockRequest {
            player_id: who(),
            currency: eur(),
        })),
        ("WalletService", "Statement") => go!(wallet.statement(pb::StatementRequest {
            player_id: who(),
            currency: eur(),
            ..Default::default()
        })),
        ("WalletService", "Movements") => {
            go!(wallet.movements(pb::MovementsRequest::default()))
        }
        ("WalletService", "WatchBalances") => {
            go!(wallet.watch_balances(pb::WatchBalancesRequest {}))
        }
        ("WalletService", "TableRounds") => go!(wallet.table_rounds(pb::TableRoundsRequest {
            table_id: "T01".to_owned(),
        })),
        (service, method) => panic!("{service}/{method}: no call written for it"),
    }
}

/// Everything a refused call could have changed, read through allowed calls: the table
/// (phase, round, cards, bet totals, chat), `who`'s money and bets at the table, the
/// archive's rounds and bets of `who`.
async fn fingerprint(servers: &Servers, keys: &Keys, who: &str) -> String {
    let croupier = keys.issue_at(
        Role::Croupier,
        "watcher",
        Duration::from_secs(600),
        SystemTime::now(),
    );
    let player = keys.issue_at(
        Role::Player,
        who,
        Duration::from_secs(600),
        SystemTime::now(),
    );
    let auditor = keys.issue_at(
        Role::Auditor,
        "auditor",
        Duration::from_secs(600),
        SystemTime::now(),
    );
    let mut client =
        PlayerServiceClient::with_interceptor(servers.broadcaster.clone(), bearer(&player));
    // The balance first: the first read of it deposits a welcome credit that is due (a
    // journaled command), which the table's state read after it then already shows.
    let balance = client
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut table = Croupier::new(servers.broadcaster.clone(), &croupier, TABLE, "fp");
    let state = stable(&table.state().await.unwrap());
    let bets = client
        .my_bets(pb::MyBetsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let mut archive =
        ArchiveServiceClient::with_interceptor(servers.archive.clone(), bearer(&auditor));
    let rounds = archive
        .list_rounds(pb::ListRoundsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let archived = archive
        .player_bets(pb::PlayerBetsRequest {
            player_id: who.to_owned(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let cashier = keys.issue_at(
        Role::Cashier,
        "cashier",
        Duration::from_secs(600),
        SystemTime::now(),
    );
    let mut wallet =
        WalletServiceClient::with_interceptor(servers.wallet.clone(), bearer(&cashier));
    let account = wallet
        .balance(pb::BalanceRequest {
            player_id: who.to_owned(),
            currency: "EUR".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    let movements = wallet
        .statement(pb::StatementRequest {
            player_id: who.to_owned(),
            currency: "EUR".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    format!(
        "{state:?}\n{balance:?}\n{bets:?}\n{rounds:?}\n{archived:?}\n{account:?}\n{movements:?}"
    )
}

/// A croupier who opens a shoe and betting on T01; the round open for bets.
async fn open_round(servers: &Servers, keys: &Keys) -> (Croupier, String) {
    let token = keys.issue_at(
        Role::Croupier,
        "dealer",
        Duration::from_secs(3600),
        SystemTime::now(),
    );
    let mut croupier = Croupier::new(servers.broadcaster.clone(), &token, TABLE, "setup");
    croupier.ok(Cmd::OpenShoe).await;
    croupier.ok(Cmd::Burn("5C".to_owned())).await;
    let state = croupier.ok(Cmd::OpenBetting).await;
    (croupier, state.round_id)
}

#[tokio::test]
async fn every_role_is_refused_every_call_it_may_not_make_and_nothing_changes() {
    let d = deploy(&[]).await;
    let (_croupier, round_id) = open_round(&d.servers, &d.keys).await;
    // Every token has the same subject, so that what any of them could have done shows in
    // one player's money, bets and chat.
    let subject = "mallory";
    let ctx = Context {
        round_id,
        subject: subject.to_owned(),
    };
    let hour = Duration::from_secs(3600);
    let tokens: Vec<(Role, String)> = Role::ALL
        .into_iter()
        .map(|role| {
            (
                role,
                d.keys.issue_at(role, subject, hour, SystemTime::now()),
            )
        })
        .collect();
    let before = fingerprint(&d.servers, &d.keys, subject).await;
    let mut refused = 0;
    for rpc in RPCS {
        let name = format!("{}/{}", rpc.service, rpc.method);
        let status = call(&d.servers, rpc, None, &ctx).await.err();
        let status = status.unwrap_or_else(|| panic!("{name} without a token was admitted"));
        assert_eq!(status.code(), Code::Unauthenticated, "{name}: {status:?}");
        assert!(status.message().contains("missing"), "{name}: {status:?}");
        refused += 1;
        for (role, token) in tokens.iter().filter(|(r, _)| !rpc.allowed.contains(r)) {
            let status = call(&d.servers, rpc, Some(token), &ctx).await.err();
            let status = status.unwrap_or_else(|| panic!("{name} admitted role {role}"));
            assert_eq!(
                status.code(),
                Code::PermissionDenied,
                "{name} as {role}: {status:?}"
            );
            assert!(
                status.message().contains(role.as_str()),
                "{name} as {role}: the refusal should name the role: {status:?}"
            );
            refused += 1;
        }
    }
    assert_eq!(fingerprint(&d.servers, &d.keys, subject).await, before);
    eprintln!("{refused} forbidden calls refused, nothing changed");

    // And every role may make the calls it is given (the request may still be refused
    // for what it says, never for who sends it).
    for rpc in RPCS {
        for (role, token) in tokens.iter().filter(|(r, _)| rpc.allowed.contains(r)) {
            if let Err(status) = call(&d.servers, rpc, Some(token), &ctx).await {
                assert!(
                    !matches!(
                        status.code(),
                        Code::Unauthenticated | Code::PermissionDenied
                    ),
                    "{}/{} refused role {role}: {status:?}",
                    rpc.service,
                    rpc.method
                );
            }
        }
    }
}

#[tokio::test]
async fn bad_tokens_are_refused_naming_the_problem_on_every_server() {
    let d = deploy(&[]).await;
    let now = SystemTime::now();
    let hour = Duration::from_secs(3600);
    let real = banco_auth::keys::load_signing_key(&d.keys.signing_key()).unwrap();
    let real_kid = banco_auth::key_id(&real.verifying_key());
    let stranger = Issuer::new(signing_key_from_seed(&[9; 32]), "banco").unwrap();
    let impostor = stranger.clone().with_kid(&real_kid).unwrap();
    let foreign = Issuer::new(real, "another-casino").unwrap();
    let valid = d.keys.issue_at(Role::Auditor, "eve", hour, now);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "signed with another key under the real key's id",
            impostor.issue("eve", Role::Auditor, hour, now).unwrap(),
            "bad token signature",
        ),
        (
            "signed with another key",
            stranger.issue("eve", Role::Auditor, hour, now).unwrap(),
            "unknown key id",
        ),
        (
            "expired",
            d.keys
                .issue_at(Role::Auditor, "eve", hour, now - Duration::from_secs(7200)),
            "expired",
        ),
        (
            "not yet valid",
            d.keys
                .issue_at(Role::Auditor, "eve", hour, now + Duration::from_secs(7200)),
            "not yet valid",
        ),
        (
            "for another audience",
            foreign.issue("eve", Role::Auditor, hour, now).unwrap(),
            "audience \"another-casino\"",
        ),
        (
            "garbage",
            "not-a-token-at-all".to_owned(),
            "does not start with",
        ),
        (
            "garbage after the prefix",
            "banco1.!!!!.????".to_owned(),
            "malformed token",
        ),
        (
            "truncated",
            valid[..valid.len() - 10].to_owned(),
            "malformed token",
        ),
        (
            "cut before the signature",
            valid[..valid.rfind('.').unwrap()].to_owned(),
            "expected 3 dot-separated parts",
        ),
    ];
    // Auditors may call the validator and the archive; players the broadcaster: a good
    // token of those roles is admitted, so only the token's fault can refuse these.
    let player_valid = d.keys.issue_at(Role::Player, "eve", hour, now);
    for (server, rpc) in [
        ("validator", &RPCS[0]),
        (
            "archive",
            RPCS.iter().find(|r| r.method == "ListRounds").unwrap(),
        ),
        (
            "broadcaster",
            RPCS.iter().find(|r| r.method == "ListTables").unwrap(),
        ),
    ] {
        let ctx = Context {
            round_id: String::new(),
            subject: "eve".to_owned(),
        };
        let good = if server == "broadcaster" {
            &player_valid
        } else {
            &valid
        };
        if let Err(status) = call(&d.servers, rpc, Some(good), &ctx).await {
            assert!(
                !matches!(
                    status.code(),
                    Code::Unauthenticated | Code::PermissionDenied
                ),
                "{server}: a good token was refused: {status:?}"
            );
        }
        for (what, token, says) in &cases {
            let status = call(&d.servers, rpc, Some(token), &ctx).await.err();
            let status = status.unwrap_or_else(|| panic!("{server}: a token {what} was admitted"));
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{server}, {what}: {status:?}"
            );
            assert!(
                status.message().contains(says),
                "{server}, {what}: the refusal should say `{says}`: {}",
                status.message()
            );
            assert!(
                !status.message().contains(token.as_str()),
                "{server}, {what}: the refusal quotes the token"
            );
        }
    }
}

/// A raw gRPC codec: the request body is whatever bytes are given.
#[derive(Clone, Copy, Debug, Default)]
struct RawCodec;

#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

/// `body` as the request of `path`, unchecked: the reply's bytes or the status.
async fn raw_call(
    channel: &Channel,
    token: &str,
    path: &'static str,
    body: Vec<u8>,
) -> Result<Vec<u8>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let mut request = Request::new(body);
    bearer(token).call(Request::new(())).map(|r| {
        *request.metadata_mut() = r.metadata().clone();
    })?;
    grpc.unary(request, PathAndQuery::from_static(path), RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

fn player(
    servers: &Servers,
    token: &str,
) -> PlayerServiceClient<tonic::service::interceptor::InterceptedService<Channel, BearerToken>> {
    PlayerServiceClient::with_interceptor(servers.broadcaster.clone(), bearer(token))
}

async fn place(
    servers: &Servers,
    token: &str,
    round_id: &str,
    key: &str,
    kind: pb::BetKind,
    stake: i64,
) -> Result<pb::PlaceBetsResponse, Status> {
    player(servers, token)
        .place_bets(pb::PlaceBetsRequest {
            table_id: TABLE.to_owned(),
            round_id: round_id.to_owned(),
            bets: vec![pb::Bet {
                kind: kind.into(),
                stake_minor: stake,
            }],
            idempotency_key: key.to_owned(),
        })
        .await
        .map(tonic::Response::into_inner)
}

#[tokio::test]
async fn a_player_cannot_reach_another_players_money_or_bets() {
    let d = deploy(&[]).await;
    let s = &d.servers;
    let hour = Duration::from_secs(3600);
    let bob = d
        .keys
        .issue_at(Role::Player, "bob", hour, SystemTime::now());
    let alice = d
        .keys
        .issue_at(Role::Player, "alice", hour, SystemTime::now());
    let auditor = d
        .keys
        .issue_at(Role::Auditor, "auditor", hour, SystemTime::now());

    // Round 1: bob bets on Player, which wins with a natural 9; the round reaches the archive.
    let (mut croupier, round1) = open_round(s, &d.keys).await;
    let reply = place(s, &bob, &round1, "bob-1", pb::BetKind::Player, 1_000)
        .await
        .unwrap();
    assert!(all_accepted(&reply), "{reply:?}");
    croupier.ok(Cmd::CloseBetting).await;
    for card in ["9H", "2C", "KD", "3S"] {
        croupier.ok(Cmd::Deal(card.to_owned())).await;
    }
    croupier.ok(Cmd::Confirm(round1.clone())).await;
    let mut archive = ArchiveServiceClient::with_interceptor(s.archive.clone(), bearer(&auditor));
    let archived = banco_e2e::poll(
        Duration::from_secs(10),
        Duration::from_millis(100),
        async || {
            archive
                .player_bets(pb::PlayerBetsRequest {
                    player_id: "bob".to_owned(),
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner()
        },
        |entries| !entries.entries.is_empty(),
    )
    .await;
    assert!(
        !archived.entries.is_empty(),
        "bob's round never reached the archive"
    );

    // Round 2: bob's bet is live.
    let round2 = croupier.ok(Cmd::OpenBetting).await.round_id;
    let reply = place(s, &bob, &round2, "bob-2", pb::BetKind::Banker, 700)
        .await
        .unwrap();
    assert!(all_accepted(&reply), "{reply:?}");
    let before = fingerprint(s, &d.keys, "bob").await;

    // Alice, with every call she has, and bob's own idempotency keys.
    let mut a = player(s, &alice);
    let reply = place(s, &alice, &round2, "bob-2", pb::BetKind::Player, 500)
        .await
        .unwrap();
    assert!(all_accepted(&reply), "alice's own bet: {reply:?}");
    let cleared = a
        .clear_bets(pb::ClearBetsRequest {
            table_id: TABLE.to_owned(),
            round_id: round2.clone(),
            idempotency_key: "bob-1".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        cleared.cleared.len(),
        1,
        "alice clears her own bet only: {cleared:?}"
    );
    assert_eq!(cleared.cleared[0].kind, pb::BetKind::Player as i32);
    let _ = a
        .rebet(pb::RebetRequest {
            table_id: TABLE.to_owned(),
            round_id: round2.clone(),
            idempotency_key: "bob-3".to_owned(),
        })
        .await;
    let mine = a
        .my_bets(pb::MyBetsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(
        mine.entries.iter().all(|e| e.round_id == round2),
        "alice sees only her own round-2 bets: {mine:?}"
    );
    let _ = a
        .set_self_limit(pb::SetSelfLimitRequest { max_bet_minor: 500 })
        .await
        .unwrap();
    // A request carrying a made-up `player` field (number 15) naming bob: unknown fields
    // are ignored, the bet is alice's.
    let mut body = pb::PlaceBetsRequest {
        table_id: TABLE.to_owned(),
        round_id: round2.clone(),
        bets: vec![pb::Bet {
            kind: pb::BetKind::Banker.into(),
            stake_minor: 500,
        }],
        idempotency_key: "alice-banker".to_owned(),
    }
    .encode_to_vec();
    body.extend([0x7a, 3, b'b', b'o', b'b']);
    let reply = raw_call(
        &s.broadcaster,
        &alice,
        "/banco.v1.PlayerService/PlaceBets",
        body,
    )
    .await
    .unwrap();
    let reply = pb::PlaceBetsResponse::decode(reply.as_slice()).unwrap();
    assert!(all_accepted(&reply), "{reply:?}");
    // The archive: alice may read her own bets, not bob's.
    let mut alice_archive =
        ArchiveServiceClient::with_interceptor(s.archive.clone(), bearer(&alice));
    let denied = alice_archive
        .player_bets(pb::PlayerBetsRequest {
            player_id: "bob".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    assert!(denied.message().contains("`bob`"), "{denied:?}");
    alice_archive
        .player_bets(pb::PlayerBetsRequest {
            player_id: "alice".to_owned(),
            ..Default::default()
        })
        .await
        .unwrap();

    // Bob's money, bets (live and archived) are as they were, apart from the table's bet
    // totals and chat, which alice's own bets moved: compare bob's parts.
    let after = fingerprint(s, &d.keys, "bob").await;
    let bobs = |fp: &str| fp.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        bobs(&after)[..2],
        bobs(&before)[..2],
        "bob's balance or bets changed"
    );
    assert_eq!(
        bobs(&after)[3],
        bobs(&before)[3],
        "bob's archived bets changed"
    );
    // Bob's self-limit is his own: a bet above alice's limit is still taken from him, under
    // a key alice used too (keys are each player's own).
    let reply = place(s, &bob, &round2, "bob-3", pb::BetKind::Player, 2_000)
        .await
        .unwrap();
    assert!(all_accepted(&reply), "{reply:?}");
}

#[tokio::test]
async fn oversized_requests_and_floods_are_refused_and_change_nothing() {
    let d = deploy(&["--player-bets-per-second", "1", "--player-bets-burst", "5"]).await;
    let s = &d.servers;
    let hour = Duration::from_secs(3600);
    let (mut croupier, round) = open_round(s, &d.keys).await;
    let carol = d
        .keys
        .issue_at(Role::Player, "carol", hour, SystemTime::now());
    let dave = d
        .keys
        .issue_at(Role::Player, "dave", hour, SystemTime::now());
    let before = fingerprint(s, &d.keys, "carol").await;

    // 100 KiB in one PlaceBets, and in one DealCard: refused before decoding.
    let huge = "k".repeat(100 << 10);
    let status = place(s, &carol, &round, &huge, pb::BetKind::Player, STAKE)
        .await
        .unwrap_err();
    assert!(
        matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{status:?}"
    );
    assert!(
        status.message().contains("65536"),
        "the limit is named: {status:?}"
    );
    let status = croupier
        .send("big-card", &Cmd::Deal(huge.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{status:?}"
    );
    assert_eq!(fingerprint(s, &d.keys, "carol").await, before);

    // Carol floods PlaceBets: 5 at once, then 1 a second.
    let started = Instant::now();
    let (mut taken, mut refused) = (0i64, 0);
    for i in 0..30 {
        match place(
            s,
            &carol,
            &round,
            &format!("carol-{i}"),
            pb::BetKind::Player,
            STAKE,
        )
        .await
        {
            Ok(reply) => {
                assert!(all_accepted(&reply), "{reply:?}");
                taken += 1;
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                assert!(
                    status.message().contains("1 bet requests per second")
                        && status.message().contains("retry in"),
                    "{status:?}"
                );
                refused += 1;
            }
        }
    }
    let allowed = 5 + started.elapsed().as_secs() as i64 + 1;
    assert!(refused > 0, "30 bets in a row were all taken");
    assert!(
        taken <= allowed,
        "{taken} taken, the limit allows {allowed}"
    );
    // Another player is not held up by carol's flood.
    let reply = place(s, &dave, &round, "dave-1", pb::BetKind::Banker, STAKE)
        .await
        .unwrap();
    assert!(all_accepted(&reply), "{reply:?}");
    // Carol's other calls have their own budget; only what was taken is staked.
    let balance = player(s, &carol)
        .get_balance(pb::GetBalanceRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(balance.in_play_minor, taken * STAKE, "{balance:?}");
}

#[tokio::test]
async fn malformed_protobuf_and_oversized_chat_are_refused_and_change_nothing() {
    let d = deploy(&[]).await;
    let s = &d.servers;
    let hour = Duration::from_secs(3600);
    let (_croupier, _round) = open_round(s, &d.keys).await;
    let erin = d
        .keys
        .issue_at(Role::Player, "erin", hour, SystemTime::now());
    let frank = d
        .keys
        .issue_at(Role::Player, "frank", hour, SystemTime::now());
    let croupier = d
        .keys
        .issue_at(Role::Croupier, "dealer", hour, SystemTime::now());
    let service = d
        .keys
        .issue_at(Role::Service, "svc", hour, SystemTime::now());
    let before = fingerprint(s, &d.keys, "erin").await;

    let bodies: [&[u8]; 5] = [
        &[0xff, 0xff, 0xff, 0xff, 0xff], // a tag whose varint never ends
        &[0x0a, 0x80],                   // a string cut short
        &[0x0f],                         // wire type 7 does not exist
        &[0x1a, 0x05, 0x08],             // a nested message longer than its bytes
        &[0x0a, 0x02, 0xc3, 0x28],       // a string that is not UTF-8
    ];
    let targets: [(&Channel, &str, &'static str); 6] = [
        (&s.broadcaster, &erin, "/banco.v1.PlayerService/PlaceBets"),
        (&s.broadcaster, &erin, "/banco.v1.PlayerService/SendChat"),
        (&s.broadcaster, &erin, "/banco.v1.PlayerService/ClearBets"),
        (&s.broadcaster, &croupier, "/banco.v1.TableService/DealCard"),
        (&s.archive, &service, "/banco.v1.ArchiveService/Append"),
        (&s.validator, &service, "/banco.v1.RulesService/CheckCard"),
    ];
    for (channel, token, path) in targets {
        for body in bodies {
            let status = raw_call(channel, token, path, body.to_vec())
                .await
                .unwrap_err();
            assert!(
                matches!(status.code(), Code::InvalidArgument | Code::Internal),
                "{path} {body:?}: {status:?}"
            );
        }
    }
    // Every server still serves.
    let valid = pb::GetBalanceRequest {}.encode_to_vec();
    raw_call(
        &s.broadcaster,
        &erin,
        "/banco.v1.PlayerService/GetBalance",
        valid,
    )
    .await
    .unwrap();
    let mut rules = RulesServiceClient::with_interceptor(s.validator.clone(), bearer(&service));
    rules
        .judge_hand(pb::JudgeHandRequest {
            cards: vec!["9H".into(), "2C".into(), "KD".into(), "3S".into()],
        })
        .await
        .unwrap();
    assert_eq!(fingerprint(s, &d.keys, "erin").await, before);

    // Oversized chat: refused with the limit, and never broadcast.
    let mut watcher = player(s, &frank)
        .subscribe(pb::SubscribeRequest {
            table_id: TABLE.to_owned(),
            resume_from_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut chat = player(s, &erin);
    let long = "a".repeat(5_000);
    let reply = chat
        .send_chat(pb::SendChatRequest {
            table_id: TABLE.to_owned(),
            text: long,
        })
        .await
        .unwrap()
        .into_inner();
    let refusal = reply.refusal.expect("an oversized line is refused");
    assert!(
        refusal.message.contains("5000 characters") && refusal.message.contains("at most 200"),
        "{refusal:?}"
    );
    let reply = chat
        .send_chat(pb::SendChatRequest {
            table_id: TABLE.to_owned(),
            text: "good luck".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.refusal, None);
    // The first chat line frank receives is the short one.
    let first_chat = loop {
        let event = watcher
            .message()
            .await
            .unwrap()
            .expect("the stream goes on");
        if let Some(pb::table_event::Event::ChatMessage(line)) = event.event {
            break line;
        }
    };
    assert_eq!(first_chat.text, "good luck");
    assert_eq!(first_chat.sender, "erin");
}
