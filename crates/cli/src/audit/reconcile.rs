//! `banco audit reconcile`: every wallet movement of the tables matched with a stake,
//! return or refund of an archived round, and every archived round's money with the
//! wallet. Prints the totals per table and each difference; exits 1 if there is any.
//!
//! The archive is read with one Export stream, the wallet page by page (`banco wallet`'s
//! Movements, or its database opened read-only), and the matching is done in memory
//! ([`matching`]).
//!
//! With `--day`, the rounds are those that finished that day; their movements are looked
//! for from a day before it to a day after (a stake taken before midnight, a credit made
//! after, once the wallet was back), and a movement made that day for a round finished
//! on another day is that day's. A round the archive lacks is told "not archived yet" when
//! it comes after its table's newest archived round (see [`matching`]).

mod matching;
mod sources;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use self::matching::{Difference, DifferenceKind, Outside, Report, Totals};
use self::sources::{Scope, WalletSource};
use super::{Archive, Shown};

/// A day, in milliseconds.
const DAY_MS: u64 = 86_400_000;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ReconcileArgs {
    /// The wallet: `grpc://HOST:PORT` or `grpcs://HOST:PORT` (`banco wallet`, read with
    /// the `--token-file` auditor token), or its database read directly and only read,
    /// `sqlite://PATH` (an embedded wallet is `<data-dir>/wallet.db`) or `postgres://…`.
    #[arg(long, value_name = "URL")]
    wallet: String,
    /// The CA that signed the wallet's certificate (PEM), for `grpcs://`.
    #[arg(long, value_name = "PEM")]
    wallet_ca: Option<PathBuf>,
    /// Only the rounds that finished on this day, `YYYY-MM-DD` (UTC, or this machine's
    /// zone with `--local-time`).
    #[arg(long)]
    day: Option<String>,
    /// Only this table.
    #[arg(long)]
    table: Option<String>,
    /// The report as JSON, amounts in minor units, for programs.
    #[arg(long)]
    json: bool,
}

/// Reads both sides, matches them, prints the report; 1 if any difference.
pub(crate) async fn run(
    archive: &mut Archive,
    token: banco_auth::BearerToken,
    args: &ReconcileArgs,
    shown: &Shown,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let day = args
        .day
        .as_deref()
        .map(|day| shown.times.day_ms(day))
        .transpose()?;
    let wallet = WalletSource::open(&args.wallet, args.wallet_ca.as_deref(), token).await?;
    let scope = Scope {
        table: args.table.clone(),
        period: day,
    };
    let rounds = sources::archived_rounds(archive, &scope).await?;
    let wide = Scope {
        period: day.map(|(from, to)| (from.saturating_sub(DAY_MS), to.saturating_add(DAY_MS))),
        ..scope.clone()
    };
    let read = wallet.movements(&wide).await;
    wallet.close().await;
    let movements = match day {
        Some(day) => matching::of_period(&rounds, read?, day),
        None => read?,
    };
    let outside = outside(archive, &rounds, &movements, day.is_some()).await?;
    let report = matching::reconcile(&rounds, &movements, &outside);
    if args.json {
        let json = serde_json::json!({
            "currency": shown.currency.as_str(),
            "day": args.day,
            "table": args.table,
            "report": report,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        write_report(out, &report, shown)?;
    }
    Ok(if report.differences.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::REFUSED)
    })
}

/// What the archive says of the rounds the movements name and `rounds` lacks: each
/// table's newest round, and (for a day, whose selection leaves other days out) which of
/// them were archived after all. A call per table, and one per such round of a day: only
/// rounds on either side of midnight, unless rounds are missing.
async fn outside(
    archive: &mut Archive,
    rounds: &[matching::ArchivedRound],
    movements: &[banco_wallet::store::Movement],
    by_day: bool,
) -> anyhow::Result<Outside> {
    let unknown = matching::unknown_rounds(rounds, movements);
    let tables: std::collections::BTreeSet<&str> = unknown.values().map(String::as_str).collect();
    let mut outside = Outside {
        newest: sources::newest_rounds(archive, tables).await?,
        ..Outside::default()
    };
    if by_day {
        for (round, table) in &unknown {
            let newest = outside.newest.get(table).map(String::as_str);
            if !matching::in_play(round, newest) && sources::is_archived(archive, round).await? {
                outside.archived.insert(round.clone());
            }
        }
    }
    Ok(outside)
}

fn write_report(out: &mut impl Write, report: &Report, shown: &Shown) -> anyhow::Result<()> {
    let money = |minor| shown.money(minor);
    let totals_line = |name: &str, t: &Totals| {
        format!(
            "{name}: rounds {}  bets {}  movements {}  debits {}  cancels {}  credits {}  \
             stakes {}  returns {}  house result {}  by the wallet {}",
            t.rounds,
            t.bets,
            t.movements,
            money(t.debits),
            money(t.cancels),
            money(t.credits),
            money(t.stakes),
            money(t.returns),
            shown.currency.amount(t.house_result).signed(),
            shown.currency.amount(t.wallet_result).signed(),
        )
    };
    for (table, totals) in &report.tables {
        writeln!(out, "{}", totals_line(&format!("table {table}"), totals))?;
    }
    writeln!(out, "{}", totals_line("total", &report.total))?;
    for r in &report.not_archived_yet {
        writeln!(
            out,
            "round {} not archived yet (in play, or on its way to the archive): movements {}  \
             debits {}  cancels {}  credits {}",
            r.round,
            r.movements,
            money(r.debits),
            money(r.cancels),
            money(r.credits)
        )?;
    }
    for d in &report.differences {
        writeln!(out, "{}", difference_line(d, shown))?;
    }
    if report.differences.is_empty() {
        writeln!(out, "ok: every movement matches the archive, to the cent")?;
    } else {
        let n = report.differences.len();
        writeln!(out, "{n} difference{}", if n == 1 { "" } else { "s" })?;
    }
    Ok(())
}

/// `DIFFERENCE <what>: round … player … position … tx …: wallet …, archive …`.
fn difference_line(d: &Difference, shown: &Shown) -> String {
    let (wallet, expected) = match d.kind {
        DifferenceKind::MovementAltered => ("moved", "its amount"),
        _ => ("wallet", "archive"),
    };
    format!(
        "DIFFERENCE {}: round {}  player {}  position {}  tx {}: {wallet} {}, {expected} {}",
        d.kind.words(),
        d.round,
        d.player,
        d.position,
        d.tx,
        shown.money(d.wallet_minor),
        shown.money(d.expected_minor)
    )
}

#[cfg(test)]
mod tests {
    use banco_table::Currency;

    use super::*;
    use crate::times::Times;

    #[test]
    fn a_difference_names_round_player_position_tx_and_both_amounts() {
        let shown = Shown {
            currency: Currency::parse("EUR").unwrap_or_default(),
            times: Times::utc(),
        };
        let d = Difference {
            kind: DifferenceKind::ReturnDiffers,
            table: "T01".to_owned(),
            round: "T01-S0001-H002".to_owned(),
            player: "alice".to_owned(),
            position: "tie".to_owned(),
            tx: "credit:T01-S0001-H002:alice:tie".to_owned(),
            wallet_minor: 800,
            expected_minor: 900,
        };
        assert_eq!(
            difference_line(&d, &shown),
            "DIFFERENCE return differs: round T01-S0001-H002  player alice  position tie  \
             tx credit:T01-S0001-H002:alice:tie: wallet €8.00, archive €9.00"
        );
    }
}
