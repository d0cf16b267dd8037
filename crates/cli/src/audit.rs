//! `banco audit`: the auditor's client of ArchiveService (and, for `reconcile`, of the
//! wallet's movements).

mod fairness;
mod reconcile;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use banco_records::hex::to_hex as hex;
use banco_rules::{Scoreboard, Winner};
use banco_table::Currency;
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;

use crate::croupier::endpoint;
use crate::player::bets::kind_name;
use crate::player::render::{dealt_cards, hand_result};
use crate::times::{TimeArgs, Times};

pub type Archive = ArchiveServiceClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        banco_auth::BearerToken,
    >,
>;

#[derive(Debug, clap::Args)]
pub(crate) struct AuditArgs {
    /// The archive, e.g. `http://127.0.0.1:7103`.
    #[arg(long, default_value = "http://127.0.0.1:7103")]
    server: String,
    /// CA certificate (PEM) to trust for an `https://` server.
    #[arg(long, value_name = "PEM")]
    ca_cert: Option<PathBuf>,
    /// File holding an auditor token (`banco token issue --role auditor`).
    #[arg(long)]
    token_file: PathBuf,
    /// The ISO 4217 code of the tables' money (the archive keeps minor units).
    #[arg(long, default_value = "EUR", global = true)]
    currency: String,
    #[command(flatten)]
    times: TimeArgs,
    #[command(subcommand)]
    command: AuditCommand,
}

/// Which rounds (every given filter must match).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Filter {
    #[arg(long)]
    table: Option<String>,
    #[arg(long)]
    shoe: Option<String>,
    #[arg(long)]
    player: Option<String>,
    /// banker, player or tie.
    #[arg(long)]
    winner: Option<String>,
    #[arg(long)]
    voided_only: bool,
    #[arg(long)]
    corrected_only: bool,
}

impl Filter {
    fn to_pb(&self) -> anyhow::Result<pb::RoundFilter> {
        let winner = match self.winner.as_deref() {
            None => pb::Winner::Unspecified,
            Some("banker") => pb::Winner::Banker,
            Some("player") => pb::Winner::Player,
            Some("tie") => pb::Winner::Tie,
            Some(other) => anyhow::bail!("--winner {other}: expected banker, player or tie"),
        };
        Ok(pb::RoundFilter {
            table_id: self.table.clone().unwrap_or_default(),
            shoe_id: self.shoe.clone().unwrap_or_default(),
            player_id: self.player.clone().unwrap_or_default(),
            winner: winner.into(),
            voided_only: self.voided_only,
            corrected_only: self.corrected_only,
            ..Default::default()
        })
    }
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum AuditCommand {
    /// Round summaries, newest first.
    Rounds {
        #[command(flatten)]
        filter: Filter,
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// One whole round.
    Round { id: String },
    /// One shoe: when and by whom it was played, every hand, the results and the roads.
    Shoe { id: String },
    /// Aggregates over one table, shoe, croupier or UTC day.
    Stats {
        #[arg(long, group = "scope")]
        table: Option<String>,
        #[arg(long, group = "scope")]
        shoe: Option<String>,
        #[arg(long, group = "scope")]
        croupier: Option<String>,
        /// `YYYY-MM-DD` (UTC).
        #[arg(long, group = "scope")]
        day: Option<String>,
    },
    /// Every bet of one player.
    Bets {
        #[arg(long)]
        player: String,
    },
    /// The raw export on stdout (exact minor units and unix milliseconds, for programs).
    Export {
        /// jsonl (`banco rules judge` replays it) or csv (a row per bet).
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// Leave voided rounds out: only the hands that were settled.
        #[arg(long, conflicts_with = "voided_only")]
        settled_only: bool,
        #[command(flatten)]
        filter: Filter,
    },
    /// Recompute the chain and signatures; exit 1 and name the first bad record if broken.
    Verify {
        #[arg(long)]
        table: Option<String>,
        /// Say ok for a whole chain whose table signatures the archive could not check
        /// (one started with `--accept-unsigned`); without it such a chain is refused.
        #[arg(long)]
        accept_unsigned: bool,
        /// A head the chain must reach, from outside the archive: a table's checkpoint
        /// file (`<data-dir>/<table>/<table>.checkpoint.json`, signed by the table), or
        /// `TABLE:SEQ:HASH` noted earlier (e.g. `banco audit verify`'s own `head` line).
        /// Repeatable.
        #[arg(long = "head", value_name = "FILE|TABLE:SEQ:HASH")]
        heads: Vec<String>,
    },
    /// Match every wallet movement of the tables with a stake, return or refund of an
    /// archived round, and every round's money with the wallet: the totals per table, then
    /// each difference; exit 1 if there is any.
    Reconcile(reconcile::ReconcileArgs),
    /// Re-deal an automated shoe from its revealed shuffle key and check that the key is
    /// the one committed to at the shoe's opening and that the burn and every card dealt
    /// are its order; exit 1 naming the first difference.
    Fairness {
        /// The shoe, e.g. `T01-S0003`.
        shoe: String,
        /// The shoe's key (64 hex digits), from the table's SHOE_END event, when the
        /// archive has not got it yet.
        #[arg(long)]
        key: Option<String>,
    },
    /// Fetch a round's video clip (MP4) into `--out`, checking its size and SHA-256
    /// against the round's archive record; exit 1 (and keep no file) if they differ.
    Video {
        /// The round, e.g. `T01-S0001-H004`.
        round: String,
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// How the auditor's lines show money and instants.
struct Shown {
    currency: Currency,
    times: Times,
}

impl Shown {
    fn money(&self, minor: i64) -> String {
        self.currency.amount(minor).to_string()
    }

    fn at(&self, ts: Option<&banco_wire::Timestamp>) -> String {
        ts.map_or_else(|| "-".to_owned(), |ts| self.times.of(ts))
    }
}

/// The one-line outcome of a round: voided, or the result with the winner named.
fn outcome(voided: bool, result: Option<&pb::HandResult>) -> String {
    match (voided, result) {
        (true, _) => "VOIDED".to_owned(),
        (false, Some(result)) => hand_result(result),
        (false, None) => "no result".to_owned(),
    }
}

/// A shoe's results as `B`, `P` and `T`, for the roads.
fn winners(results: &[i32]) -> Vec<Winner> {
    results
        .iter()
        .filter_map(|&w| match pb::Winner::try_from(w) {
            Ok(pb::Winner::Banker) => Some(Winner::Banker),
            Ok(pb::Winner::Player) => Some(Winner::Player),
            Ok(pb::Winner::Tie) => Some(Winner::Tie),
            _ => None,
        })
        .collect()
}

pub(crate) fn run(args: &AuditArgs) -> anyhow::Result<ExitCode> {
    let shown = Shown {
        currency: Currency::parse(&args.currency).context("--currency")?,
        times: args.times.times(),
    };
    let bearer = crate::player::connect::read_token(&args.token_file)?;
    let endpoint = endpoint(&args.server, args.ca_cert.as_deref())?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("could not connect to {}", args.server))?;
        let mut client = ArchiveServiceClient::with_interceptor(channel, bearer.clone());
        let mut out = std::io::stdout().lock();
        match &args.command {
            AuditCommand::Rounds { filter, limit } => {
                let mut token = String::new();
                let mut listed = 0;
                loop {
                    let page = client
                        .list_rounds(pb::ListRoundsRequest {
                            filter: Some(filter.to_pb()?),
                            page_size: (*limit - listed).min(1000),
                            page_token: token,
                        })
                        .await?
                        .into_inner();
                    for r in &page.rounds {
                        let mut line = format!(
                            "{}  {}  {}",
                            r.round_id,
                            shown.at(r.finished_at.as_ref()),
                            outcome(r.voided, r.result.as_ref())
                        );
                        if r.corrections > 0 {
                            line.push_str(&format!("  corrections {}", r.corrections));
                        }
                        writeln!(
                            out,
                            "{line}  bets {}  staked {}  returned {}",
                            r.bets,
                            shown.money(r.total_stake_minor),
                            shown.money(r.total_returned_minor)
                        )?;
                    }
                    listed += u32::try_from(page.rounds.len()).unwrap_or(u32::MAX);
                    if page.next_page_token.is_empty() || listed >= *limit {
                        break;
                    }
                    token = page.next_page_token;
                }
            }
            AuditCommand::Round { id } => {
                let r = client
                    .get_round(pb::GetRoundRequest { round_id: id.clone() })
                    .await?
                    .into_inner();
                writeln!(out, "round {}  table {}  shoe {}  chain_seq {}", r.round_id, r.table_id, r.shoe_id, r.chain_seq)?;
                writeln!(out, "croupier {}", if r.croupier.is_empty() { "-" } else { &r.croupier })?;
                writeln!(
                    out,
                    "betting opened {}  closed {}  finished {}",
                    shown.at(r.betting_opened_at.as_ref()),
                    shown.at(r.betting_closed_at.as_ref()),
                    shown.at(r.finished_at.as_ref())
                )?;
                writeln!(out, "cards {}", dealt_cards(&r.cards))?;
                if let Some(h) = &r.result {
                    writeln!(out, "result {}", hand_result(h))?;
                }
                if r.voided {
                    writeln!(out, "VOIDED: {}", r.void_reason)?;
                }
                for c in &r.corrections {
                    writeln!(out, "correction: {} taken back by {} at {}: {}", c.card, c.by, shown.at(c.at.as_ref()), c.reason)?;
                }
                for b in &r.bets {
                    let returned = b.settlement.as_ref().map_or(0, |s| s.returned_minor);
                    writeln!(
                        out,
                        "bet {} {} stake {} returned {} refunded {}",
                        b.player_id,
                        kind_name(b.kind),
                        shown.money(b.stake_minor),
                        shown.money(returned),
                        shown.money(b.refunded_minor)
                    )?;
                }
                if let Some(clip) = &r.clip {
                    writeln!(out, "clip {}  {} bytes  sha256 {}", clip.path, clip.size_bytes, hex(&clip.sha256))?;
                }
                if !r.clip_signature.is_empty() {
                    writeln!(out, "clip sealed by the table: {}", hex(&r.clip_signature))?;
                }
                if let Some(missing) = &r.clip_missing {
                    writeln!(out, "{}", clip_missing_line(missing))?;
                }
                writeln!(out, "prev_hash {}\nhash {}\nkey_id {}", hex(&r.prev_hash), hex(&r.hash), r.key_id)?;
            }
            AuditCommand::Shoe { id } => {
                let s = client
                    .shoe_report(pb::ShoeReportRequest { shoe_id: id.clone() })
                    .await?
                    .into_inner();
                writeln!(out, "shoe {}  table {}  rounds {}  voided {}  corrections {}  cards {}", s.shoe_id, s.table_id, s.rounds, s.voided, s.corrections, s.cards_dealt)?;
                writeln!(out, "opened {}  ended {}  croupiers {}", shown.at(s.opened_at.as_ref()), shown.at(s.ended_at.as_ref()), if s.croupiers.is_empty() { "-".to_owned() } else { s.croupiers.join(", ") })?;
                if !s.burn_card.is_empty() {
                    writeln!(out, "burn {} exposed, {} burned face down", s.burn_card, s.burned_face_down)?;
                }
                if !s.cut_card_round_id.is_empty() {
                    writeln!(out, "cut card out in {}", s.cut_card_round_id)?;
                }
                for r in shoe_rounds(&mut client, id).await? {
                    writeln!(out, "  {}  {}  bets {}  staked {}  returned {}", r.round_id, outcome(r.voided, r.result.as_ref()), r.bets, shown.money(r.total_stake_minor), shown.money(r.total_returned_minor))?;
                }
                let results = winners(&s.results);
                let letters: String = results.iter().map(|w| w.letter()).collect();
                writeln!(out, "results {letters}")?;
                writeln!(out, "staked {}  returned {}", shown.money(s.total_stake_minor), shown.money(s.total_returned_minor))?;
                write!(out, "{}", crate::roads::render(&Scoreboard::from_results(&results)))?;
            }
            AuditCommand::Stats { table, shoe, croupier, day } => {
                let (scope, key) = match (table, shoe, croupier, day) {
                    (Some(k), _, _, _) => (pb::StatsScope::Table, k),
                    (_, Some(k), _, _) => (pb::StatsScope::Shoe, k),
                    (_, _, Some(k), _) => (pb::StatsScope::Croupier, k),
                    (_, _, _, Some(k)) => (pb::StatsScope::Day, k),
                    _ => anyhow::bail!("stats needs one of --table, --shoe, --croupier, --day"),
                };
                let s = client
                    .stats(pb::StatsRequest { scope: scope.into(), key: key.clone() })
                    .await?
                    .into_inner();
                let share = |n: u64| {
                    let decided = s.banker_wins + s.player_wins + s.ties;
                    if decided == 0 { 0.0 } else { 100.0 * n as f64 / decided as f64 }
                };
                writeln!(out, "{key}: rounds {}  voided {}  corrections {}", s.rounds, s.voided, s.corrections)?;
                writeln!(out, "banker {} ({:.2}%)  player {} ({:.2}%)  tie {} ({:.2}%)", s.banker_wins, share(s.banker_wins), s.player_wins, share(s.player_wins), s.ties, share(s.ties))?;
                writeln!(out, "naturals {}  player pairs {}  banker pairs {}", s.naturals, s.player_pairs, s.banker_pairs)?;
                writeln!(out, "longest streak: banker {}  player {}", s.longest_banker_streak, s.longest_player_streak)?;
                writeln!(out, "house gross win {}", shown.currency.amount(s.house_gross_win_minor).signed())?;
                for p in &s.positions {
                    writeln!(out, "  {:<13} bets {:>8}  staked {:>16}  returned {:>16}  rtp {:.4} (theory {:.4})", kind_name(p.kind), p.bets, shown.money(p.staked_minor), shown.money(p.returned_minor), p.observed_rtp, p.theoretical_rtp)?;
                }
            }
            AuditCommand::Bets { player } => {
                let mut token = String::new();
                loop {
                    let page = client
                        .player_bets(pb::PlayerBetsRequest { player_id: player.clone(), page_size: 1000, page_token: token, ..Default::default() })
                        .await?
                        .into_inner();
                    for e in &page.entries {
                        let Some(b) = &e.bet else { continue };
                        let returned = b.settlement.as_ref().map_or(0, |s| s.returned_minor);
                        writeln!(out, "{}  {}  {:<13} stake {}  returned {}  refunded {}{}", e.round_id, shown.at(b.placed_at.as_ref()), kind_name(b.kind), shown.money(b.stake_minor), shown.money(returned), shown.money(b.refunded_minor), if e.voided { "  VOIDED" } else { "" })?;
                    }
                    if page.next_page_token.is_empty() {
                        break;
                    }
                    token = page.next_page_token;
                }
            }
            AuditCommand::Export { format, settled_only, filter } => {
                let format = match format.as_str() {
                    "jsonl" => pb::ExportFormat::Jsonl,
                    "csv" => pb::ExportFormat::Csv,
                    other => anyhow::bail!("--format {other}: expected jsonl or csv"),
                };
                let mut stream = client
                    .export(pb::ExportRequest { filter: Some(filter.to_pb()?), format: format.into(), settled_only: *settled_only })
                    .await?
                    .into_inner();
                while let Some(chunk) = stream.message().await? {
                    out.write_all(&chunk.data)?;
                }
            }
            AuditCommand::Reconcile(reconcile) => {
                return reconcile::run(&mut client, bearer, reconcile, &shown, &mut out).await;
            }
            AuditCommand::Fairness { shoe, key } => {
                return fairness::run(&mut client, shoe, key.as_deref(), &mut out).await;
            }
            AuditCommand::Video { round, out: path } => {
                return fetch_clip(&mut client, round, path, &mut out).await;
            }
            AuditCommand::Verify { table, accept_unsigned, heads } => {
                let heads = heads.iter().map(|h| head(h)).collect::<anyhow::Result<Vec<_>>>()?;
                let v = client
                    .verify(pb::VerifyRequest { table_id: table.clone().unwrap_or_default(), accept_unsigned: *accept_unsigned, heads })
                    .await?
                    .into_inner();
                if v.ok {
                    writeln!(out, "ok: {} records checked; head {} {}", v.records_checked, v.head_round_id, hex(&v.head_hash))?;
                    if v.signatures_checked == v.records_checked {
                        writeln!(out, "  {} table signatures checked, {} clip seals", v.signatures_checked, v.clip_seals_checked)?;
                    } else {
                        // Said plainly: a re-hashed, edited chain verifies without them.
                        writeln!(out, "  table signatures NOT checked ({} of {}): the archive was started with --accept-unsigned, so the hashes prove the chain is whole but not who wrote it", v.signatures_checked, v.records_checked)?;
                    }
                    for h in &v.heads_checked {
                        let signed = if h.signature.is_empty() { "given" } else { "signed by the table" };
                        let at = banco_wire::Timestamp { seconds: i64::try_from(h.at_unix_ms / 1000).unwrap_or(0), nanos: i32::try_from(h.at_unix_ms % 1000).unwrap_or(0) * 1_000_000 };
                        writeln!(out, "  head {}:{}:{} ({signed}, {}) is in the chain", h.table_id, h.chain_seq, hex(&h.head_hash), shown.at(Some(&at)))?;
                    }
                } else {
                    let bad = v.first_bad.unwrap_or_default();
                    if bad.round_id.is_empty() {
                        // A table derived from every record (Stats' aggregates), not one record.
                        writeln!(out, "BROKEN: {}", bad.problem)?;
                    } else {
                        writeln!(out, "BROKEN at {}: {}", bad.round_id, bad.problem)?;
                        writeln!(out, "  expected hash {}\n  found hash    {}", hex(&bad.expected_hash), hex(&bad.found_hash))?;
                    }
                    writeln!(out, "  {} records checked; last good {}", v.records_checked, v.head_round_id)?;
                    return Ok(ExitCode::from(crate::exit::REFUSED));
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// A head for `--head`: a table's checkpoint file, or `TABLE:SEQ:HASH`.
fn head(given: &str) -> anyhow::Result<pb::TableCheckpoint> {
    let path = std::path::Path::new(given);
    if path.is_file() {
        let checkpoint = banco_table::actor::Checkpoint::read(path)
            .map_err(|e| anyhow::anyhow!("--head {e}"))?;
        let bytes = |hex: &str, what: &str| {
            banco_records::hex::from_hex(hex)
                .with_context(|| format!("--head {given}: {what} is not hex"))
        };
        return Ok(pb::TableCheckpoint {
            head_hash: bytes(&checkpoint.head_hash, "head_hash")?,
            signature: bytes(&checkpoint.signature, "signature")?,
            table_id: checkpoint.table,
            chain_seq: checkpoint.chain_seq,
            at_unix_ms: checkpoint.at,
            key_id: checkpoint.key_id,
        });
    }
    let bad = || {
        anyhow::anyhow!(
            "--head {given}: neither a checkpoint file nor TABLE:SEQ:HASH (a round number and its \
             64 hex digit hash, e.g. T01:42:9f…)"
        )
    };
    let mut parts = given.rsplitn(3, ':');
    let (Some(hash), Some(seq), Some(table)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let head_hash = banco_records::hex::from_hex(hash)
        .filter(|h| h.len() == 32)
        .ok_or_else(bad)?;
    Ok(pb::TableCheckpoint {
        table_id: table.to_owned(),
        chain_seq: seq.parse().map_err(|_| bad())?,
        head_hash,
        ..Default::default()
    })
}

/// Every round of `shoe`, in play order.
async fn shoe_rounds(client: &mut Archive, shoe: &str) -> anyhow::Result<Vec<pb::RoundSummary>> {
    let filter = pb::RoundFilter {
        shoe_id: shoe.to_owned(),
        ..Default::default()
    };
    let mut rounds = all_rounds(client, filter).await?;
    rounds.reverse();
    Ok(rounds)
}

/// Every round `filter` matches, newest first (as ListRounds answers), page after page.
pub async fn all_rounds(
    client: &mut Archive,
    filter: pb::RoundFilter,
) -> anyhow::Result<Vec<pb::RoundSummary>> {
    let mut rounds = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = client
            .list_rounds(pb::ListRoundsRequest {
                filter: Some(filter.clone()),
                page_size: 1000,
                page_token,
            })
            .await
            .map_err(crate::croupier::status_error)
            .context("ListRounds")?
            .into_inner();
        rounds.extend(page.rounds);
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    Ok(rounds)
}

/// `clip: none (no video): …` for a round with nothing to record, `clip: LOST (…): …`
/// for one whose clip was lost.
fn clip_missing_line(missing: &pb::ClipMissing) -> String {
    let status = if missing.reason() == pb::ClipMissingReason::NoVideo {
        "none"
    } else {
        "LOST"
    };
    format!(
        "clip: {status} ({}): {}",
        clip_missing_reason(missing.reason()),
        missing.detail
    )
}

/// Why a round has no clip, in words.
pub fn clip_missing_reason(reason: pb::ClipMissingReason) -> &'static str {
    match reason {
        pb::ClipMissingReason::NoVideo => "no video",
        pb::ClipMissingReason::RecorderFailed => "the recorder failed",
        pb::ClipMissingReason::Missed => "the recorder missed the round",
        pb::ClipMissingReason::NotFinished => "not finished in time",
        pb::ClipMissingReason::FileGone => "the file is gone",
        pb::ClipMissingReason::Refused => "refused by the archive",
        pb::ClipMissingReason::Unspecified => "no reason given",
    }
}

/// `banco audit video`: the clip into `<path>.part`, hashed as it arrives, kept as `path`
/// only if it is the clip the round's record names.
async fn fetch_clip(
    client: &mut Archive,
    round: &str,
    path: &std::path::Path,
    out: &mut impl std::io::Write,
) -> anyhow::Result<ExitCode> {
    use sha2::{Digest as _, Sha256};
    let record = client
        .get_round(pb::GetRoundRequest {
            round_id: round.to_owned(),
        })
        .await?
        .into_inner();
    let Some(clip) = record.clip else {
        match &record.clip_missing {
            Some(missing) => anyhow::bail!(
                "round {round} has no clip in the archive; {}",
                clip_missing_line(missing)
            ),
            None => anyhow::bail!("round {round} has no clip in the archive"),
        }
    };
    let mut part_name = path.as_os_str().to_owned();
    part_name.push(".part");
    let part = PathBuf::from(part_name);
    let mut file = std::fs::File::create(&part)
        .with_context(|| format!("--out {}: cannot write", path.display()))?;
    let mut stream = client
        .get_clip(pb::GetClipRequest {
            round_id: round.to_owned(),
        })
        .await?
        .into_inner();
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = stream.message().await? {
        anyhow::ensure!(
            chunk.offset == size,
            "the archive sent bytes at offset {} where {size} was due",
            chunk.offset
        );
        hasher.update(&chunk.data);
        file.write_all(&chunk.data)?;
        size += chunk.data.len() as u64;
    }
    file.sync_all()?;
    drop(file);
    let sha256 = hasher.finalize().to_vec();
    if size != clip.size_bytes || sha256 != clip.sha256 {
        let _ = std::fs::remove_file(&part);
        writeln!(
            out,
            "MISMATCH: the clip of round {round} has {size} bytes with sha256 {}; its record says {} bytes with sha256 {}",
            hex(&sha256),
            clip.size_bytes,
            hex(&clip.sha256)
        )?;
        return Ok(ExitCode::from(crate::exit::REFUSED));
    }
    std::fs::rename(&part, path).with_context(|| format!("--out {}", path.display()))?;
    writeln!(
        out,
        "clip of round {round}: {size} bytes, sha256 {}: matches the archive record; written to {}",
        hex(&sha256),
        path.display()
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use banco_wire::pb;

    use super::clip_missing_line;

    #[test]
    fn a_round_without_its_clip_says_lost_or_no_video_and_why() {
        let line = |reason: pb::ClipMissingReason, detail: &str| {
            clip_missing_line(&pb::ClipMissing {
                reason: reason.into(),
                detail: detail.to_owned(),
            })
        };
        assert_eq!(
            line(pb::ClipMissingReason::RecorderFailed, "no keyframe"),
            "clip: LOST (the recorder failed): no keyframe"
        );
        assert_eq!(
            line(pb::ClipMissingReason::Refused, "keeps no clips"),
            "clip: LOST (refused by the archive): keeps no clips"
        );
        assert_eq!(
            line(pb::ClipMissingReason::NoVideo, "no camera"),
            "clip: none (no video): no camera"
        );
    }
}
