//! `banco audit`: the auditor's client of ArchiveService.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;

use crate::croupier::endpoint;

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
    /// One shoe: every hand, results and roads.
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
    /// The raw export on stdout.
    Export {
        /// jsonl (`banco rules judge` replays it) or csv (a row per bet).
        #[arg(long, default_value = "jsonl")]
        format: String,
        #[command(flatten)]
        filter: Filter,
    },
    /// Recompute the chain and signatures; exit 1 and name the first bad record if broken.
    Verify {
        #[arg(long)]
        table: Option<String>,
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn winner(raw: i32) -> &'static str {
    match pb::Winner::try_from(raw) {
        Ok(pb::Winner::Banker) => "banker",
        Ok(pb::Winner::Player) => "player",
        Ok(pb::Winner::Tie) => "tie",
        _ => "-",
    }
}

pub(crate) fn run(args: &AuditArgs) -> anyhow::Result<ExitCode> {
    let bearer = banco_auth::client::read_token_file(&args.token_file)?.bearer;
    let endpoint = endpoint(&args.server, args.ca_cert.as_deref())?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("could not connect to {}", args.server))?;
        let mut client = ArchiveServiceClient::with_interceptor(channel, bearer);
        let mut out = std::io::stdout().lock();
        match &args.command {
            AuditCommand::Rounds { filter, limit } => {
                let mut token = String::new();
                let mut shown = 0;
                loop {
                    let page = client
                        .list_rounds(pb::ListRoundsRequest {
                            filter: Some(filter.to_pb()?),
                            page_size: (*limit - shown).min(1000),
                            page_token: token,
                        })
                        .await?
                        .into_inner();
                    for r in &page.rounds {
                        let result = r.result.as_ref().map_or("-".to_owned(), |h| {
                            format!("{} {}-{}", winner(h.winner), h.player_total, h.banker_total)
                        });
                        writeln!(
                            out,
                            "{}  {}  {:<14} {}{}  bets {}  staked {}  returned {}",
                            r.round_id,
                            r.finished_at.map_or(0, |t| t.seconds),
                            result,
                            if r.voided { "VOIDED " } else { "" },
                            if r.corrections > 0 { format!("corrections {}", r.corrections) } else { String::new() },
                            r.bets,
                            r.total_stake_minor,
                            r.total_returned_minor
                        )?;
                    }
                    shown += u32::try_from(page.rounds.len()).unwrap_or(u32::MAX);
                    if page.next_page_token.is_empty() || shown >= *limit {
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
                let cards: Vec<&str> = r.cards.iter().map(|c| c.card.as_str()).collect();
                writeln!(out, "cards {}", cards.join(" "))?;
                if let Some(h) = &r.result {
                    writeln!(out, "result {} (player {} banker {}){}", winner(h.winner), h.player_total, h.banker_total, if h.natural { " natural" } else { "" })?;
                }
                if r.voided {
                    writeln!(out, "VOIDED: {}", r.void_reason)?;
                }
                for c in &r.corrections {
                    writeln!(out, "correction: {} taken back by {}: {}", c.card, c.by, c.reason)?;
                }
                for b in &r.bets {
                    let kind = pb::BetKind::try_from(b.kind).map_or("?", |k| k.as_str_name());
                    let returned = b.settlement.as_ref().map_or(0, |s| s.returned_minor);
                    writeln!(out, "bet {} {} stake {} returned {} refunded {}", b.player_id, kind, b.stake_minor, returned, b.refunded_minor)?;
                }
                if let Some(clip) = &r.clip {
                    writeln!(out, "clip {}  {} bytes  sha256 {}", clip.path, clip.size_bytes, hex(&clip.sha256))?;
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
                let results: String = s.results.iter().map(|w| match winner(*w) { "banker" => 'B', "player" => 'P', "tie" => 'T', _ => '?' }).collect();
                writeln!(out, "results {results}")?;
                writeln!(out, "staked {}  returned {}", s.total_stake_minor, s.total_returned_minor)?;
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
                writeln!(out, "house gross win {}", s.house_gross_win_minor)?;
                for p in &s.positions {
                    let kind = pb::BetKind::try_from(p.kind).map_or("?", |k| k.as_str_name());
                    writeln!(out, "  {kind:<24} bets {:>8}  staked {:>12}  returned {:>12}  rtp {:.4} (theory {:.4})", p.bets, p.staked_minor, p.returned_minor, p.observed_rtp, p.theoretical_rtp)?;
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
                        let kind = pb::BetKind::try_from(b.kind).map_or("?", |k| k.as_str_name());
                        let returned = b.settlement.as_ref().map_or(0, |s| s.returned_minor);
                        writeln!(out, "{}  {kind:<24} stake {}  returned {}  refunded {}{}", e.round_id, b.stake_minor, returned, b.refunded_minor, if e.voided { "  VOIDED" } else { "" })?;
                    }
                    if page.next_page_token.is_empty() {
                        break;
                    }
                    token = page.next_page_token;
                }
            }
            AuditCommand::Export { format, filter } => {
                let format = match format.as_str() {
                    "jsonl" => pb::ExportFormat::Jsonl,
                    "csv" => pb::ExportFormat::Csv,
                    other => anyhow::bail!("--format {other}: expected jsonl or csv"),
                };
                let mut stream = client
                    .export(pb::ExportRequest { filter: Some(filter.to_pb()?), format: format.into() })
                    .await?
                    .into_inner();
                while let Some(chunk) = stream.message().await? {
                    out.write_all(&chunk.data)?;
                }
            }
            AuditCommand::Video { round, out: path } => {
                return fetch_clip(&mut client, round, path, &mut out).await;
            }
            AuditCommand::Verify { table } => {
                let v = client
                    .verify(pb::VerifyRequest { table_id: table.clone().unwrap_or_default() })
                    .await?
                    .into_inner();
                if v.ok {
                    writeln!(out, "ok: {} records checked; head {} {}", v.records_checked, v.head_round_id, hex(&v.head_hash))?;
                } else {
                    let bad = v.first_bad.unwrap_or_default();
                    writeln!(out, "BROKEN at {}: {}", bad.round_id, bad.problem)?;
                    writeln!(out, "  expected hash {}\n  found hash    {}", hex(&bad.expected_hash), hex(&bad.found_hash))?;
                    writeln!(out, "  {} records checked; last good {}", v.records_checked, v.head_round_id)?;
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `clip: none (no video): …` for a round with nothing to record, `clip: LOST (…): …`
/// for one whose clip was lost.
fn clip_missing_line(missing: &pb::ClipMissing) -> String {
    let why = match missing.reason() {
        pb::ClipMissingReason::NoVideo => "no video",
        pb::ClipMissingReason::RecorderFailed => "the recorder failed",
        pb::ClipMissingReason::Missed => "the recorder missed the round",
        pb::ClipMissingReason::NotFinished => "not finished in time",
        pb::ClipMissingReason::FileGone => "the file is gone",
        pb::ClipMissingReason::Refused => "refused by the archive",
        pb::ClipMissingReason::Unspecified => "no reason given",
    };
    let status = if missing.reason() == pb::ClipMissingReason::NoVideo {
        "none"
    } else {
        "LOST"
    };
    format!("clip: {status} ({why}): {}", missing.detail)
}

/// `banco audit video`: the clip into `<path>.part`, hashed as it arrives, kept as `path`
/// only if it is the clip the round's record names.
async fn fetch_clip(
    client: &mut ArchiveServiceClient<
        tonic::service::interceptor::InterceptedService<
            tonic::transport::Channel,
            banco_auth::BearerToken,
        >,
    >,
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
        return Ok(ExitCode::FAILURE);
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
