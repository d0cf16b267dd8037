//! `banco audit fairness SHOE`: re-deals an automated shoe from its revealed shuffle key and
//! checks every card the archive holds against it (see `banco_table::fairness` for the
//! construction, which archive.proto states for clients in other languages).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use banco_records::ShoeId;
use banco_rules::Card;
use banco_rules::shoe::ShoeConfig;
use banco_table::fairness::{self, RecordedRound, RecordedShoe, ShuffleKey};
use banco_wire::pb;

use super::{Archive, shoe_rounds};

/// What the archive says of one shoe: enough to re-deal it.
struct Archived {
    report: pb::ShoeReportResponse,
    /// Each round's id and its cards in dealing order, in play order.
    rounds: Vec<(String, Vec<Card>)>,
    corrections: u32,
}

async fn fetch(client: &mut Archive, shoe_id: &str) -> anyhow::Result<Archived> {
    let report = client
        .shoe_report(pb::ShoeReportRequest {
            shoe_id: shoe_id.to_owned(),
        })
        .await
        .map_err(crate::croupier::status_error)
        .context("ShoeReport")?
        .into_inner();
    let mut rounds = Vec::new();
    let mut corrections = 0;
    for summary in shoe_rounds(client, shoe_id).await? {
        let record = client
            .get_round(pb::GetRoundRequest {
                round_id: summary.round_id.clone(),
            })
            .await
            .map_err(crate::croupier::status_error)
            .with_context(|| format!("GetRound {}", summary.round_id))?
            .into_inner();
        let cards = record
            .cards
            .iter()
            .map(|c| {
                Card::parse(&c.card).map_err(|e| {
                    anyhow::anyhow!("round {}: card `{}`: {e}", record.round_id, c.card)
                })
            })
            .collect::<anyhow::Result<Vec<Card>>>()?;
        corrections += u32::try_from(record.corrections.len()).unwrap_or(u32::MAX);
        rounds.push((record.round_id, cards));
    }
    Ok(Archived {
        report,
        rounds,
        corrections,
    })
}

/// Checks shoe `shoe_id` against its revealed key (or `key`, one the auditor got from the
/// table's ShoeEnded event): exit 0 when every card matches, 1 naming the first difference
/// or when the shoe cannot be checked (not committed to, key not revealed).
pub(super) async fn run(
    client: &mut Archive,
    shoe_id: &str,
    key: Option<&str>,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let refused = || Ok(ExitCode::from(crate::exit::REFUSED));
    let shoe = shoe_id.parse::<ShoeId>()?.number();
    let given = key
        .map(ShuffleKey::from_hex)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--key: {e}"))?;
    let archived = fetch(client, shoe_id).await?;
    let report = &archived.report;
    if report.commitment.is_empty() {
        writeln!(
            out,
            "NOT CHECKABLE: shoe {shoe_id} was shuffled by hand at the table: its order was never \
             committed to"
        )?;
        return refused();
    }
    let key = match (given, report.shuffle_key.as_str()) {
        (Some(key), _) => key,
        (None, "") => {
            writeln!(
                out,
                "NOT CHECKABLE YET: shoe {shoe_id}'s key is not revealed in the archive (the shoe \
                 has not ended, or the round that reveals it is not archived yet); give it with \
                 --key if you have it from the table's SHOE_END event"
            )?;
            return refused();
        }
        (None, revealed) => ShuffleKey::from_hex(revealed)
            .map_err(|e| anyhow::anyhow!("the archive's key for {shoe_id}: {e}"))?,
    };
    let config = ShoeConfig::try_from(report.config.unwrap_or_default())
        .map_err(|e| anyhow::anyhow!("the archive's config for {shoe_id}: {e}"))?;
    let burn = match report.burn_card.as_str() {
        "" => None,
        card => Some(
            Card::parse(card)
                .map_err(|e| anyhow::anyhow!("the archive's burn card `{card}`: {e}"))?,
        ),
    };
    let recorded: Vec<RecordedRound<'_>> = archived
        .rounds
        .iter()
        .map(|(round_id, cards)| RecordedRound { round_id, cards })
        .collect();
    let checked = fairness::check(
        &RecordedShoe {
            table: &report.table_id,
            shoe,
            config,
            commitment: &report.commitment,
            burn,
            rounds: &recorded,
        },
        &key,
    );
    writeln!(
        out,
        "shoe {shoe_id}  table {}  {} rounds",
        report.table_id,
        recorded.len()
    )?;
    writeln!(out, "commitment {}", report.commitment)?;
    writeln!(out, "key        {}", key.to_hex())?;
    match checked {
        Ok(fair) => {
            writeln!(
                out,
                "FAIR: the key is the one committed to, and all {} cards out (the burn card and \
                 every card dealt) are its order; {} burned face down and {} left in the shoe, unseen",
                fair.checked, fair.face_down, fair.left
            )?;
            if archived.corrections > 0 {
                writeln!(
                    out,
                    "  {} cards taken back by a croupier are not checked",
                    archived.corrections
                )?;
            }
            writeln!(
                out,
                "  (`banco audit verify` checks that these records are the table's own)"
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(unfair) => {
            writeln!(out, "NOT FAIR: {unfair}")?;
            refused()
        }
    }
}
