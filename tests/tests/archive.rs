//! Issue 5, "It must show", on real processes on loopback: the validator, the archive
//! (`banco archive`, SQLite file; the catch-up test again on PostgreSQL when
//! `DATABASE_URL` is set) and the broadcaster delivering to it through its outbox
//! (`--archive`, rounds signed with `--table-key`, checked with `--table-key-pub`). The
//! archive is read only as an auditor reads it: `banco audit …`, `banco rules judge`,
//! the `sqlite3` tool, and ArchiveService's gRPC client for the role checks.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use banco::clients::player::bets_to_pb;
use banco_auth::Role;
use banco_e2e::archive::{ArchiveDb, Auditor, Verified, judge, sqlite3};
use banco_e2e::clients::{Cmd, Croupier, Player, first_table, numbered_players, player_client};
use banco_e2e::model::{Books, Expected, Limits, Stakes, check_decisions, kind_from_pb};
use banco_e2e::procs::{
    BroadcasterSetup, Keys, Service, bearer, channel, start_archive, start_validator,
};
use banco_e2e::random_bets::{below, random_request};
use banco_e2e::{banco, poll_blocking};
use banco_rules::shoe::{ShoeConfig, ShuffledShoe};
use banco_rules::{BetKind, Card, Coup, Paytable, Settlement, Shoe, ShoeState};
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use serde_json::Value;
use tonic::Code;
use tonic::transport::Channel;

const WELCOME: i64 = 200_000;

/// validator + archive + broadcaster (delivering to the archive), each its own process.
/// Fields drop in order: the processes first, the database and the temp dir last.
struct Rig {
    broadcaster: Service,
    archive: Service,
    _validator: Service,
    /// Where the archive listens; a restart binds it again (the broadcaster's `--archive`).
    archive_addr: String,
    auditor: Auditor,
    keys: Keys,
    table_keys: Keys,
    channel: Channel,
    db: ArchiveDb,
    dir: tempfile::TempDir,
}

impl Rig {
    async fn start(db: Option<ArchiveDb>) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let keys = Keys::generate(&dir.path().join("keys"));
        // The table's own signing key pair, apart from the token key.
        let table_keys = Keys::generate(&dir.path().join("table-key"));
        let db = db.unwrap_or_else(|| ArchiveDb::sqlite(&dir.path().join("archive.db")));
        let validator = start_validator(&keys);
        let archive = start_archive(
            &keys,
            &db.url(),
            "127.0.0.1:0",
            Some(&table_keys.public_key()),
        );
        let archive_addr = archive.addr().to_owned();
        let mut setup = BroadcasterSetup::new(&keys, &validator, &dir.path().join("data"));
        setup.welcome_credit = WELCOME;
        setup.archive_url = Some(archive.url());
        setup.table_key = Some(table_keys.signing_key());
        let broadcaster = setup.start();
        let channel = channel(&broadcaster.url()).await;
        let auditor = Auditor::new(&keys, &archive.url(), dir.path());
        Rig {
            broadcaster,
            archive,
            _validator: validator,
            archive_addr,
            auditor,
            keys,
            table_keys,
            channel,
            db,
            dir,
        }
    }

    fn kill_archive(&mut self) {
        self.archive.kill();
        assert!(!self.archive.is_running());
    }

    /// The archive again, on the same address and database.
    fn restart_archive(&mut self) {
        self.start_archive_again(true);
    }

    /// The archive again, trusting the table's key or (`signed` false) started with
    /// `--accept-unsigned` instead.
    fn start_archive_again(&mut self, signed: bool) {
        let table_key = self.table_keys.public_key();
        self.archive = start_archive(
            &self.keys,
            &self.db.url(),
            &self.archive_addr,
            signed.then_some(table_key.as_path()),
        );
        assert_eq!(self.archive.addr(), self.archive_addr);
    }

    fn sqlite_path(&self) -> &Path {
        match &self.db {
            ArchiveDb::Sqlite(path) => path,
            ArchiveDb::Postgres { .. } => panic!("not an SQLite archive"),
        }
    }

    /// Waits until `banco audit verify` says ok with `n` records; panics otherwise.
    fn verified(&self, n: u64) -> Duration {
        let (verified, took) = self.auditor.wait_verified(n, Duration::from_secs(180));
        match verified {
            Verified::Ok { records, .. } if records == n => took,
            other => panic!("waiting for {n} verified records: {other:?}"),
        }
    }
}

/// How a round ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Confirm,
    /// Voided after this many cards (fewer than a hand).
    VoidAfter(usize),
}

/// A round as dealt, what its players were told, and how the model settled it.
#[derive(Clone, Debug)]
struct Played {
    round_id: String,
    cards: Vec<Card>,
    voided: bool,
    /// Accepted stakes per player and position, summed from the PlaceBets replies.
    told: BTreeMap<String, Stakes>,
    settlements: BTreeMap<String, Vec<Settlement>>,
}

/// A croupier dealing from seeded shoes and players betting, checked against the model.
struct Game {
    croupier: Croupier,
    players: Vec<Player>,
    books: Books,
    rng: ChaCha20Rng,
    shoe: Option<ShuffledShoe>,
    played: Vec<Played>,
}

impl Game {
    async fn new(rig: &Rig, players: usize, seed: u64) -> Game {
        let croupier = Croupier::new(
            rig.channel.clone(),
            &rig.keys.issue("croupier", "dealer1", "1h"),
            "T01",
            "console",
        );
        let players = numbered_players(&rig.keys, &rig.channel, players);
        let info = first_table(player_client(
            rig.channel.clone(),
            &rig.keys.issue("player", "lister", "1h"),
        ))
        .await;
        Game {
            croupier,
            players,
            books: Books::new(Limits::from_info(&info), Paytable::standard(), WELCOME),
            rng: ChaCha20Rng::seed_from_u64(seed),
            shoe: None,
            played: Vec::new(),
        }
    }

    /// One round; whether it was the last of its shoe.
    async fn round(&mut self, ending: Ending) -> bool {
        if self.shoe.is_none() {
            self.croupier.ok(Cmd::OpenShoe).await;
            let mut shuffled = Shoe::shuffled(ShoeConfig::default(), &mut self.rng).unwrap();
            let burn = shuffled.burn().unwrap();
            self.croupier.ok(Cmd::Burn(burn.exposed.to_string())).await;
            self.shoe = Some(shuffled);
        }
        let state = self.croupier.ok(Cmd::OpenBetting).await;
        let round_id = state.round_id.clone();
        let mut told: BTreeMap<String, Stakes> = BTreeMap::new();
        for wave in 1..=2 {
            self.bet_wave(&round_id, wave, &mut told).await;
        }
        let mut state = self.croupier.ok(Cmd::CloseBetting).await;
        let shuffled = self.shoe.as_mut().unwrap();
        let mut coup = Coup::default();
        let mut dealt = 0;
        while state.due() != pb::Due::Complete && ending != Ending::VoidAfter(dealt) {
            let card = shuffled.next_card().unwrap();
            coup.deal(card).unwrap();
            state = self.croupier.ok(Cmd::Deal(card.to_string())).await;
            dealt += 1;
        }
        let (state, settlements, voided) = match ending {
            Ending::Confirm => {
                let state = self.croupier.ok(Cmd::Confirm(round_id.clone())).await;
                assert_eq!(state.phase(), pb::TablePhase::Settled, "{round_id}");
                (state, self.books.settle(coup.cards()), false)
            }
            Ending::VoidAfter(n) => {
                assert_eq!(coup.cards().len(), n, "{round_id}: voided mid-hand");
                let state = self
                    .croupier
                    .ok(Cmd::Void {
                        round_id: round_id.clone(),
                        reason: format!("scanner fault after {n} cards"),
                    })
                    .await;
                assert_eq!(state.phase(), pb::TablePhase::Voided, "{round_id}");
                self.books.void();
                (state, BTreeMap::new(), true)
            }
        };
        let _ = state;
        // The shoe moves on with every hand that had a card, settled or voided.
        let ended =
            !coup.cards().is_empty() && shuffled.hand_finished().unwrap() == ShoeState::Ended;
        if ended {
            self.shoe = None;
        }
        self.played.push(Played {
            round_id,
            cards: coup.cards().to_vec(),
            voided,
            told,
            settlements,
        });
        ended
    }

    /// Each player bets with odds 2 in 3, all at once; each reply is checked against the
    /// model, and what was accepted is added to `told`.
    async fn bet_wave(&mut self, round_id: &str, wave: u32, told: &mut BTreeMap<String, Stakes>) {
        let requests: Vec<Option<Vec<(BetKind, i64)>>> = (0..self.players.len())
            .map(|_| (below(&mut self.rng, 3) != 0).then(|| random_request(&mut self.rng)))
            .collect();
        let mut expected = Vec::new();
        for (p, r) in self.players.iter().zip(&requests) {
            expected.push(r.as_ref().map(|r| {
                let existing = self.books.round.get(&p.name).cloned();
                (self.books.predict(&p.name, r), existing)
            }));
        }
        let sends = self.players.iter().zip(&requests).map(|(p, r)| {
            let mut client = p.client.clone();
            let request = r.as_ref().map(|r| pb::PlaceBetsRequest {
                table_id: "T01".into(),
                round_id: round_id.to_owned(),
                bets: bets_to_pb(r),
                idempotency_key: format!("{}-{round_id}-{wave}", p.name),
            });
            async move {
                match request {
                    Some(request) => Some(client.place_bets(request).await),
                    None => None,
                }
            }
        });
        let replies = futures::future::join_all(sends).await;
        for (i, reply) in replies.into_iter().enumerate() {
            let (Some(request), Some(reply), Some((want, existing))) =
                (&requests[i], reply, &expected[i])
            else {
                continue;
            };
            let name = self.players[i].name.clone();
            let reply = reply
                .unwrap_or_else(|s| panic!("{name} PlaceBets in {round_id}: {s}"))
                .into_inner();
            if let Err(e) = check_decisions(want, request, existing.as_ref(), &reply) {
                panic!("{name} in {round_id}: {e}");
            }
            if want.iter().all(|e| matches!(e, Expected::Accepted(_))) {
                self.books.apply(&name, request, want);
            }
            for d in &reply.decisions {
                if let Some(pb::bet_decision::Decision::Accepted(a)) = &d.decision {
                    *told
                        .entry(name.clone())
                        .or_default()
                        .entry(kind_from_pb(a.kind))
                        .or_default() += a.accepted_minor;
                }
            }
            if let Err(e) = self.books.check_balance(&name, reply.balance.as_ref()) {
                panic!("{name} in {round_id}: {e}");
            }
        }
    }

    /// Every player's balance now, as GetBalance tells them.
    async fn balances(&mut self) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        for p in &mut self.players {
            // Once the wallet has every payout the table owes.
            let balance = banco_e2e::poll(
                std::time::Duration::from_secs(10),
                std::time::Duration::from_millis(20),
                async || {
                    p.client
                        .get_balance(pb::GetBalanceRequest {})
                        .await
                        .unwrap()
                        .into_inner()
                },
                |balance| balance.pending_minor == 0,
            )
            .await;
            out.insert(p.name.clone(), balance.available_minor);
        }
        out
    }
}

/// The round ids `banco audit rounds` lists (newest first), oldest first.
fn listed_rounds(auditor: &Auditor, args: &[&str]) -> Vec<String> {
    let mut all = vec!["rounds", "--limit", "10000"];
    all.extend_from_slice(args);
    let out = auditor.ok(&all);
    let mut ids: Vec<String> = out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    ids.reverse();
    ids
}

/// `€1,234.56` (as `banco audit` shows money) in minor units.
fn euros(text: &str) -> i64 {
    let (sign, rest) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text),
    };
    let digits: String = rest
        .strip_prefix('€')
        .unwrap_or_else(|| panic!("not euros: {text}"))
        .chars()
        .filter(|&c| c != ',' && c != '.')
        .collect();
    sign * digits
        .parse::<i64>()
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// `banco audit export --format jsonl <args>`, parsed line by line.
fn export_jsonl(auditor: &Auditor, args: &[&str]) -> (String, Vec<Value>) {
    let mut all = vec!["export", "--format", "jsonl"];
    all.extend_from_slice(args);
    let text = auditor.ok(&all);
    let values = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("export line {l}: {e}")))
        .collect();
    (text, values)
}

/// An exported line's bets: player → position → (stake, returned, refunded).
fn exported_bets(line: &Value) -> BTreeMap<String, BTreeMap<BetKind, (i64, i64, i64)>> {
    let mut out: BTreeMap<String, BTreeMap<BetKind, (i64, i64, i64)>> = BTreeMap::new();
    for b in line["bets"].as_array().unwrap() {
        let kind = BetKind::parse(b["position"].as_str().unwrap()).unwrap();
        out.entry(b["player_id"].as_str().unwrap().to_owned())
            .or_default()
            .insert(
                kind,
                (
                    b["stake_minor"].as_i64().unwrap(),
                    b["returned_minor"].as_i64().unwrap(),
                    b["refunded_minor"].as_i64().unwrap(),
                ),
            );
    }
    out
}

/// Checks the archive's record of `played` (exported, in play order) against the table,
/// the players' replies and the model.
fn check_exported(lines: &[Value], played: &[Played]) {
    assert_eq!(lines.len(), played.len(), "rounds exported");
    for (n, (line, p)) in lines.iter().zip(played).enumerate() {
        let id = &p.round_id;
        assert_eq!(line["round_id"].as_str().unwrap(), id, "export order");
        assert_eq!(
            line["chain_seq"].as_u64().unwrap(),
            n as u64 + 1,
            "{id}: chain_seq"
        );
        let cards: Vec<String> = p.cards.iter().map(ToString::to_string).collect();
        let exported: Vec<String> = line["cards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(exported, cards, "{id}: cards");
        assert_eq!(line["voided"].as_bool().unwrap(), p.voided, "{id}: voided");
        let bets = exported_bets(line);
        let stakes: BTreeMap<String, Stakes> = bets
            .iter()
            .map(|(player, b)| (player.clone(), b.iter().map(|(&k, v)| (k, v.0)).collect()))
            .collect();
        assert_eq!(
            stakes, p.told,
            "{id}: stakes in the archive vs the PlaceBets replies"
        );
        for (player, b) in &bets {
            for (kind, &(stake, returned, refunded)) in b {
                if p.voided {
                    assert_eq!(
                        (returned, refunded),
                        (0, stake),
                        "{id} {player} {kind}: void"
                    );
                } else {
                    let s = p.settlements[player]
                        .iter()
                        .find(|s| s.kind == *kind)
                        .unwrap();
                    assert_eq!(
                        (s.stake, s.returned, refunded),
                        (stake, returned, 0),
                        "{id} {player} {kind}"
                    );
                }
            }
        }
    }
}

/// Outbox catch-up: 5 rounds reach the archive; the archive is SIGKILLed; 100 more rounds
/// are played with players betting, every croupier command and bet answered while the
/// archive is down (the table does not wait for it: the time per round is printed beside
/// that of the first 5); the archive restarts on the same address and database, and all
/// 105 arrive: `banco audit verify` says ok for 105 records, `banco audit rounds` lists
/// all 105 in play order with nothing missing, the export numbers them 1 to 105 in the
/// chain, every round's cards, stakes and payouts are those the table dealt, the players
/// were told (PlaceBets replies) and the rules pay, and each player's balance (GetBalance)
/// moved by exactly the sum of their archived results (`banco audit bets`).
async fn outbox_catch_up(db: Option<ArchiveDb>) {
    let mut rig = Rig::start(db).await;
    let backend = rig.db.backend();
    let mut game = Game::new(&rig, 4, 505).await;

    let started = Instant::now();
    for _ in 0..5 {
        game.round(Ending::Confirm).await;
    }
    let first = started.elapsed();
    rig.verified(5);

    rig.kill_archive();
    let down = Instant::now();
    for _ in 0..100 {
        game.round(Ending::Confirm).await;
    }
    let hundred = down.elapsed();
    assert!(
        rig.broadcaster.is_running(),
        "the broadcaster survived the archive's absence"
    );

    rig.restart_archive();
    let catch_up = rig.verified(105);
    eprintln!(
        "archive catch-up ({backend}): first 5 rounds {first:?} ({:?}/round, archive up); \
         100 rounds with the archive down {hundred:?} ({:?}/round); \
         after the restart, 105 records verified in {catch_up:?}",
        first / 5,
        hundred / 100
    );

    let ids: Vec<String> = game.played.iter().map(|p| p.round_id.clone()).collect();
    assert_eq!(
        listed_rounds(&rig.auditor, &["--table", "T01"]),
        ids,
        "banco audit rounds"
    );
    assert_eq!(
        listed_rounds(&rig.auditor, &[]),
        ids,
        "banco audit rounds (no filter)"
    );
    let (_, lines) = export_jsonl(&rig.auditor, &["--table", "T01"]);
    check_exported(&lines, &game.played);

    // What each player was told against what the archive holds of them.
    let balances = game.balances().await;
    for (player, balance) in &balances {
        assert_eq!(
            *balance,
            game.books.balance(player),
            "{player}: balance vs the model"
        );
        let out = rig.auditor.ok(&["bets", "--player", player]);
        let mut net = 0;
        let mut rows = 0;
        for line in out.lines().filter(|l| !l.trim().is_empty()) {
            // `T01-S0001-H001  <placed at>  banker  stake €25.00  returned €48.75  refunded €0.00`
            let t: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(
                (t[3], t[5], t[7]),
                ("stake", "returned", "refunded"),
                "{line}"
            );
            assert!(t[1].ends_with('Z'), "placed at, RFC 3339 UTC: {line}");
            let num = |i: usize| euros(t[i]);
            net += num(6) + num(8) - num(4);
            rows += 1;
        }
        let positions: usize = game
            .played
            .iter()
            .filter_map(|p| p.told.get(player))
            .map(BTreeMap::len)
            .sum();
        assert_eq!(rows, positions, "{player}: bets in `banco audit bets`");
        assert!(rows > 0, "{player} never bet");
        assert_eq!(
            WELCOME + net,
            *balance,
            "{player}: welcome credit + archived results = balance"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_catch_up_sqlite() {
    outbox_catch_up(None).await;
}

/// The same catch-up with the archive on PostgreSQL (a schema of its own in
/// `DATABASE_URL`'s database); skipped, saying why, when there is none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_catch_up_postgres() {
    match ArchiveDb::postgres("catch_up") {
        Ok(db) => outbox_catch_up(Some(db)).await,
        Err(why) => banco_testkit::skipped("outbox_catch_up_postgres", &why),
    }
}

/// Exported shoe replays: a whole shoe (with three rounds voided after 0, 2 and 3 cards)
/// exported with `banco audit export --shoe S --format jsonl` and piped into
/// `banco rules judge`: every settled round is judged to the winner, totals and natural
/// the archive exported (and the rules give for the cards dealt), each judged line
/// carrying its round id; the voided rounds are passed through as voided, and judge exits
/// 0. `--settled-only` leaves the voided rounds out of the export. The export of
/// everything is the same bytes (one shoe played); the shoe report's results are the same
/// winners, and it draws the roads. `--format csv` is a header and one row per accepted bet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exported_shoe_replays_through_judge() {
    let rig = Rig::start(None).await;
    let mut game = Game::new(&rig, 3, 2).await;
    let voids = [(2, 0), (5, 2), (8, 3)];
    let mut n = 0;
    loop {
        let ending = voids
            .iter()
            .find(|(at, _)| *at == n)
            .map_or(Ending::Confirm, |&(_, cards)| Ending::VoidAfter(cards));
        n += 1;
        if game.round(ending).await {
            break;
        }
    }
    let rounds = game.played.len();
    rig.verified(rounds as u64);
    let shoe_id = game.played[0]
        .round_id
        .rsplit_once('-')
        .unwrap()
        .0
        .to_owned();
    eprintln!("exported shoe {shoe_id}: {rounds} rounds, 3 voided");

    let (text, lines) = export_jsonl(&rig.auditor, &["--shoe", &shoe_id]);
    check_exported(&lines, &game.played);
    let (everything, _) = export_jsonl(&rig.auditor, &[]);
    assert_eq!(
        everything, text,
        "one shoe played: the whole export is the shoe"
    );

    let (code, judged) = judge(text.as_bytes());
    assert_eq!(
        judged.len(),
        lines.len(),
        "one judged line per exported round"
    );
    let mut passed_through = Vec::new();
    for (i, (out, line)) in judged.iter().zip(&lines).enumerate() {
        let id = line["round_id"].as_str().unwrap();
        let out: Value = serde_json::from_str(out).unwrap();
        assert!(out.get("error").is_none(), "{id} refused by judge: {out}");
        assert_eq!(
            out["round_id"], line["round_id"],
            "judge carries the round id"
        );
        if out["voided"] == true {
            assert!(line["voided"].as_bool().unwrap(), "{id}");
            assert_eq!(out["void_reason"], line["void_reason"], "{id}");
            assert_eq!(
                out["cards_dealt"].as_u64().unwrap(),
                game.played[i].cards.len() as u64,
                "{id}"
            );
            passed_through.push(id.to_owned());
            continue;
        }
        for field in ["winner", "player_total", "banker_total", "natural"] {
            assert_eq!(
                out[field], line[field],
                "{id}: {field}, judge vs the archive"
            );
        }
        let cards: Vec<Card> = game.played[i].cards.clone();
        let rules = Coup::judge(&cards).unwrap();
        assert_eq!(
            out["winner"].as_str().unwrap(),
            serde_json::to_value(rules.winner())
                .unwrap()
                .as_str()
                .unwrap(),
            "{id}: judge vs the rules"
        );
    }
    let voided: Vec<String> = game
        .played
        .iter()
        .filter(|p| p.voided)
        .map(|p| p.round_id.clone())
        .collect();
    assert_eq!(
        passed_through, voided,
        "judge passes exactly the voided rounds through"
    );
    assert_eq!(
        code,
        Some(0),
        "the whole export replays, voided rounds and all"
    );

    // --settled-only leaves the voided rounds out, and judge accepts every line.
    let (settled, settled_lines) =
        export_jsonl(&rig.auditor, &["--shoe", &shoe_id, "--settled-only"]);
    assert_eq!(settled_lines.len(), rounds - voided.len());
    assert!(
        settled_lines
            .iter()
            .all(|l| !l["voided"].as_bool().unwrap())
    );
    let (code, judged) = judge(settled.as_bytes());
    assert_eq!(code, Some(0), "settled rounds only: {judged:?}");
    assert_eq!(judged.len(), rounds - voided.len());
    // Asking for the voided rounds only and none of them is refused, naming both.
    let both = rig
        .auditor
        .run(&["export", "--settled-only", "--voided-only"]);
    assert_eq!(both.status.code(), Some(2), "{both:?}");

    // The shoe report's results, in order, voided rounds left out.
    let shoe = rig.auditor.ok(&["shoe", &shoe_id]);
    let results: String = lines
        .iter()
        .filter(|v| !v["voided"].as_bool().unwrap())
        .map(|v| match v["winner"].as_str().unwrap() {
            "banker" => 'B',
            "player" => 'P',
            _ => 'T',
        })
        .collect();
    assert!(shoe.contains(&format!("results {results}\n")), "{shoe}");
    assert!(
        shoe.contains("Big Road"),
        "the shoe report draws the roads: {shoe}"
    );

    // CSV: a header, then one row per accepted bet.
    let csv = rig
        .auditor
        .ok(&["export", "--format", "csv", "--shoe", &shoe_id]);
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(
        header,
        [
            "round_id",
            "table_id",
            "shoe_id",
            "finished_at_ms",
            "winner",
            "voided",
            "player_id",
            "position",
            "stake_minor",
            "returned_minor",
            "refunded_minor",
            "rounding"
        ]
    );
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let mut from_csv: BTreeSet<(String, String, BetKind, i64)> = BTreeSet::new();
    let mut count = 0;
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f.len(), header.len(), "{row}");
        assert_eq!(f[col("shoe_id")], shoe_id);
        from_csv.insert((
            f[col("round_id")].to_owned(),
            f[col("player_id")].to_owned(),
            BetKind::parse(f[col("position")]).unwrap(),
            f[col("stake_minor")].parse().unwrap(),
        ));
        count += 1;
    }
    let told: BTreeSet<(String, String, BetKind, i64)> = game
        .played
        .iter()
        .flat_map(|p| {
            p.told.iter().flat_map(move |(player, stakes)| {
                stakes
                    .iter()
                    .map(move |(&k, &s)| (p.round_id.clone(), player.clone(), k, s))
            })
        })
        .collect();
    assert_eq!(count, told.len(), "one CSV row per bet");
    assert_eq!(from_csv, told, "CSV rows vs the accepted bets");
    eprintln!("exported shoe {shoe_id}: {} bets in the CSV", told.len());
}

/// Tampering through the CLI: with the archive stopped, one round's `winner` column is
/// changed with the `sqlite3` tool; started again, `banco audit verify` exits 1 naming
/// that round. Put back, it verifies; then another round's rows are deleted, and
/// `verify` exits 1 reporting a gap at that round's place in the chain (its chain_seq,
/// between the rounds before and after it, both named).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampering_is_found_by_verify() {
    let mut rig = Rig::start(None).await;
    let mut game = Game::new(&rig, 2, 33).await;
    for _ in 0..8 {
        game.round(Ending::Confirm).await;
    }
    rig.verified(8);
    let db = rig.sqlite_path().to_owned();

    // An edited winner.
    rig.kill_archive();
    let edited = game.played[3].round_id.clone();
    let was = sqlite3(
        &db,
        &format!("SELECT winner FROM rounds WHERE round_id = '{edited}'"),
    );
    let was = was.trim().to_owned();
    let forged = if was == "banker" { "player" } else { "banker" };
    sqlite3(
        &db,
        &format!("UPDATE rounds SET winner = '{forged}' WHERE round_id = '{edited}'"),
    );
    rig.restart_archive();
    for args in [&[][..], &["--table", "T01"][..]] {
        match rig.auditor.verify(args) {
            Verified::Broken { stdout } => {
                eprintln!(
                    "verify {args:?} after editing {edited}'s winner ({was} → {forged}):\n{stdout}"
                );
                assert!(
                    stdout.starts_with(&format!("BROKEN at {edited}: ")),
                    "{stdout}"
                );
                assert!(stdout.contains("winner"), "{stdout}");
                assert!(
                    stdout.contains(&format!("last good {}", game.played[2].round_id)),
                    "{stdout}"
                );
            }
            other => panic!("verify {args:?} after the edit: {other:?}"),
        }
    }

    // Put back, it verifies again.
    rig.kill_archive();
    sqlite3(
        &db,
        &format!("UPDATE rounds SET winner = '{was}' WHERE round_id = '{edited}'"),
    );
    rig.restart_archive();
    assert!(
        matches!(rig.auditor.verify(&[]), Verified::Ok { records: 8, .. }),
        "the winner put back"
    );

    // Stats' house result raised by €1,000.00: Stats serves it, every record is intact, and
    // Verify names the row.
    let house = |rig: &Rig| -> String {
        let stats = rig.auditor.ok(&["stats", "--table", "T01"]);
        stats
            .lines()
            .find(|l| l.contains("house"))
            .unwrap_or_else(|| panic!("no house line in:\n{stats}"))
            .to_owned()
    };
    let before = house(&rig);
    rig.kill_archive();
    sqlite3(
        &db,
        "UPDATE stats_totals SET house = house + 100000 WHERE scope = 'table'",
    );
    rig.restart_archive();
    assert_ne!(house(&rig), before, "Stats serves the edited figure");
    match rig.auditor.verify(&[]) {
        Verified::Broken { stdout } => {
            eprintln!("verify after editing stats_totals:\n{stdout}");
            assert!(
                stdout.starts_with(
                    "BROKEN: stats_totals (table T01, table T01) disagrees with the records: \
                     records say house: "
                ),
                "{stdout}"
            );
        }
        other => panic!("verify after the Stats edit: {other:?}"),
    }
    rig.kill_archive();
    sqlite3(
        &db,
        "UPDATE stats_totals SET house = house - 100000 WHERE scope = 'table'",
    );
    rig.restart_archive();
    assert!(matches!(
        rig.auditor.verify(&[]),
        Verified::Ok { records: 8, .. }
    ));

    // A deleted round: a gap.
    rig.kill_archive();
    let deleted = game.played[5].round_id.clone();
    sqlite3(
        &db,
        &format!(
            "DELETE FROM bets WHERE round_id = '{deleted}'; DELETE FROM rounds WHERE round_id = '{deleted}'"
        ),
    );
    assert_eq!(
        sqlite3(&db, "SELECT COUNT(*) FROM rounds").trim(),
        "7",
        "one round deleted"
    );
    rig.restart_archive();
    match rig.auditor.verify(&[]) {
        Verified::Broken { stdout } => {
            eprintln!("verify after deleting {deleted} (chain_seq 6):\n{stdout}");
            let after = &game.played[6].round_id;
            let before = &game.played[4].round_id;
            assert!(
                stdout.starts_with(&format!("BROKEN at {after}: gap")),
                "{stdout}"
            );
            assert!(stdout.contains("round(s) 6 to 6 are missing"), "{stdout}");
            assert!(
                stdout.contains(&format!("follows 5 ({before})")),
                "{stdout}"
            );
        }
        other => panic!("verify after the deletion: {other:?}"),
    }
}

/// The archive restored from a backup taken two rounds earlier: every record left is
/// intact and the checkpoint it keeps is the backup's, so `banco audit verify` alone says
/// ok (what the README says can go unseen); given the table's own checkpoint file with
/// `--head`, it names the rounds the archive no longer has, and exits 1. Before
/// checkpoints nothing outside the archive held the chain's head, and nothing could.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_tail_is_found_against_the_tables_checkpoint() {
    let mut rig = Rig::start(None).await;
    let mut game = Game::new(&rig, 1, 11).await;
    let file = rig.dir.path().join("data/T01/T01.checkpoint.json");
    let signed_at = |seq: u64| {
        let checkpoint = poll_blocking(
            Duration::from_secs(30),
            Duration::from_millis(100),
            || banco_table::actor::Checkpoint::read(&file).ok(),
            |c| c.as_ref().is_some_and(|c| c.chain_seq == seq),
        );
        checkpoint.unwrap_or_else(|| panic!("no checkpoint of round {seq} in {}", file.display()))
    };
    for _ in 0..2 {
        game.round(Ending::Confirm).await;
    }
    rig.verified(2);
    let early = signed_at(2);
    rig.kill_archive();
    let db = rig.sqlite_path().to_owned();
    let backup = rig.dir.path().join("backup");
    std::fs::create_dir_all(&backup).unwrap();
    let files = |dir: &Path| -> Vec<std::path::PathBuf> {
        ["", "-wal", "-shm"]
            .iter()
            .map(|suffix| dir.join(format!("archive.db{suffix}")))
            .collect()
    };
    for (from, to) in files(db.parent().unwrap()).iter().zip(files(&backup)) {
        if from.exists() {
            std::fs::copy(from, to).unwrap();
        }
    }
    rig.restart_archive();
    for _ in 0..2 {
        game.round(Ending::Confirm).await;
    }
    rig.verified(4);
    let head = signed_at(4);
    match rig.auditor.verify(&["--head", &file.to_string_lossy()]) {
        Verified::Ok { records: 4, stdout } => assert!(
            stdout.contains(&format!(
                "head T01:4:{} (signed by the table",
                head.head_hash
            )),
            "{stdout}"
        ),
        other => panic!("verify with the table's head: {other:?}"),
    }

    // Restored from the backup: rounds 3 and 4 are gone.
    rig.kill_archive();
    for (from, to) in files(&backup).iter().zip(files(db.parent().unwrap())) {
        let _ = std::fs::remove_file(&to);
        if from.exists() {
            std::fs::copy(from, to).unwrap();
        }
    }
    rig.restart_archive();
    match rig.auditor.verify(&[]) {
        Verified::Ok { records: 2, stdout } => {
            eprintln!("verify of the restored archive, alone:\n{stdout}");
            assert!(
                stdout.contains("head T01:2:"),
                "its own checkpoint: {stdout}"
            );
        }
        other => panic!("verify of the restored archive: {other:?}"),
    }
    match rig.auditor.verify(&["--head", &file.to_string_lossy()]) {
        Verified::Broken { stdout } => {
            eprintln!("verify of the restored archive against the table's head:\n{stdout}");
            assert!(
                stdout.contains(
                    "table T01: the head given by the auditor (signed by the table, round 4 at"
                ),
                "{stdout}"
            );
            assert!(
                stdout.contains(&format!(
                    "round 4 of table T01 (hash {}) is not in the archive",
                    head.head_hash
                )),
                "{stdout}"
            );
        }
        other => panic!("verify of the restored archive with --head: {other:?}"),
    }
    // A head noted by hand at round 2 is in the chain.
    let noted = format!("T01:2:{}", early.head_hash);
    assert!(matches!(
        rig.auditor.verify(&["--head", &noted]),
        Verified::Ok { records: 2, .. }
    ));
}

/// An archive that cannot check the tables' signatures: without `--table-key-pub` it
/// refuses to start, naming both flags, and changes nothing; started with
/// `--accept-unsigned`, `banco audit verify` refuses to say ok for the records it could
/// not check (exit 1, how many) until the auditor accepts that with `--accept-unsigned`,
/// and then still says the signatures were NOT checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_records_are_never_ok_unasked() {
    let mut rig = Rig::start(None).await;
    let mut game = Game::new(&rig, 1, 7).await;
    for _ in 0..3 {
        game.round(Ending::Confirm).await;
    }
    rig.verified(3);
    rig.kill_archive();

    let out = banco()
        .args([
            "archive",
            "--db",
            &rig.db.url(),
            "--listen",
            "127.0.0.1:0",
            "--public-key",
        ])
        .arg(rig.keys.public_key())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "started without table keys: {stderr}"
    );
    assert!(
        stderr.contains("no --table-key-pub given") && stderr.contains("--accept-unsigned"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening on"), "{stderr}");

    rig.start_archive_again(false);
    match rig.auditor.verify(&[]) {
        Verified::Broken { stdout } => {
            eprintln!("verify of an unsigned archive:\n{stdout}");
            assert!(
                stdout.starts_with("BROKEN: 3 of 3 records' table signatures were not checked"),
                "{stdout}"
            );
            assert!(stdout.contains("accept_unsigned"), "{stdout}");
        }
        other => panic!("verify without --accept-unsigned: {other:?}"),
    }
    match rig.auditor.verify(&["--accept-unsigned"]) {
        Verified::Ok { records: 3, stdout } => assert!(
            stdout.contains("table signatures NOT checked (0 of 3)"),
            "{stdout}"
        ),
        other => panic!("verify --accept-unsigned: {other:?}"),
    }

    // Trusting the key again, the same records verify with every signature checked.
    rig.kill_archive();
    rig.restart_archive();
    match rig.auditor.verify(&[]) {
        Verified::Ok { records: 3, stdout } => {
            assert!(stdout.contains("3 table signatures checked"), "{stdout}")
        }
        other => panic!("verify with the key: {other:?}"),
    }
}

/// Roles, on ArchiveService's gRPC client: a player may read their own bets
/// (PlayerBets for their id) but not another player's, nor ListRounds (PERMISSION_DENIED);
/// an auditor reads everything (ListRounds, GetRound, ShoeReport, Stats, PlayerBets of
/// anyone, Export, Verify); a croupier token cannot Append; a service token can (a stored
/// record again is acknowledged as a duplicate) but cannot ListRounds; a token signed by
/// another key, an expired one, or none is UNAUTHENTICATED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_decide_who_reads_and_who_appends() {
    let rig = Rig::start(None).await;
    let mut game = Game::new(&rig, 2, 44).await;
    for _ in 0..3 {
        game.round(Ending::Confirm).await;
    }
    rig.verified(3);
    let archive = channel(&rig.archive.url()).await;
    let client =
        |token: &str| ArchiveServiceClient::with_interceptor(archive.clone(), bearer(token));
    let bets_of = |player: &str| pb::PlayerBetsRequest {
        player_id: player.to_owned(),
        ..Default::default()
    };
    let list = || pb::ListRoundsRequest::default();
    let round_id = game.played[0].round_id.clone();
    let shoe_id = round_id.rsplit_once('-').unwrap().0.to_owned();
    let own_bets = game
        .played
        .iter()
        .filter_map(|p| p.told.get("p00"))
        .map(BTreeMap::len)
        .sum::<usize>();

    // A player: their own bets, nothing else.
    let mut player = client(&rig.keys.issue("player", "p00", "1h"));
    let mine = player
        .player_bets(bets_of("p00"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(mine.entries.len(), own_bets, "p00's own bets");
    assert!(
        mine.entries
            .iter()
            .all(|e| e.bet.as_ref().unwrap().player_id == "p00")
    );
    let denied = player.player_bets(bets_of("p01")).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let denied = player.list_rounds(list()).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let denied = player
        .get_round(pb::GetRoundRequest {
            round_id: round_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let denied = player
        .verify(pb::VerifyRequest::default())
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");

    // An auditor: everything.
    let mut auditor = client(&rig.keys.issue("auditor", "regulator", "1h"));
    let listed = auditor.list_rounds(list()).await.unwrap().into_inner();
    assert_eq!(listed.rounds.len(), 3);
    let record = auditor
        .get_round(pb::GetRoundRequest {
            round_id: round_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(record.chain_seq, 1);
    let shoe = auditor
        .shoe_report(pb::ShoeReportRequest {
            shoe_id: shoe_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(shoe.rounds, 3);
    let stats = auditor
        .stats(pb::StatsRequest {
            scope: pb::StatsScope::Table.into(),
            key: "T01".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stats.rounds, 3);
    for p in ["p00", "p01"] {
        auditor.player_bets(bets_of(p)).await.unwrap();
    }
    let mut export = auditor
        .export(pb::ExportRequest {
            filter: None,
            format: pb::ExportFormat::Jsonl.into(),
            settled_only: false,
        })
        .await
        .unwrap()
        .into_inner();
    let mut exported = 0;
    while let Some(chunk) = export.message().await.unwrap() {
        exported += chunk.records;
    }
    assert_eq!(exported, 3);
    let verified = auditor
        .verify(pb::VerifyRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(verified.ok && verified.records_checked == 3, "{verified:?}");

    // A croupier cannot Append (nor read).
    let append = || pb::AppendRequest {
        record: Some(record.clone()),
    };
    let mut croupier = client(&rig.keys.issue("croupier", "dealer1", "1h"));
    let denied = croupier.append(append()).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let denied = croupier.list_rounds(list()).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");

    // A service appends (the stored record again: a duplicate), but reads nothing.
    let mut service = client(&rig.keys.issue("service", "broadcaster", "1h"));
    let ack = service.append(append()).await.unwrap().into_inner();
    assert!(ack.duplicate && ack.refusal.is_none(), "{ack:?}");
    assert_eq!(ack.hash, record.hash);
    let denied = service.list_rounds(list()).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let denied = service.player_bets(bets_of("p00")).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");

    // Forged (another signing key), expired, none: UNAUTHENTICATED.
    let other = Keys::generate(&rig.dir.path().join("forger"));
    let forged = other.issue("auditor", "regulator", "1h");
    let expired = rig.keys.issue_at(
        Role::Auditor,
        "regulator",
        Duration::from_secs(60),
        SystemTime::now() - Duration::from_secs(3600),
    );
    for (what, token) in [("forged", &forged), ("expired", &expired)] {
        let status = client(token).list_rounds(list()).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
        let status = client(token).append(append()).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
    }
    let status = ArchiveServiceClient::new(archive.clone())
        .list_rounds(list())
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "no token: {status:?}");
}
