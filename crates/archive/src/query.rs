//! Auditor queries: ListRounds, GetRound, ShoeReport and PlayerBets, each answered from
//! the table's record of every round (the indexed columns only choose which rounds).

use banco_rules::{Scoreboard, Winner};
use banco_wire::pb;

use crate::error::ArchiveError;
use crate::hexbytes::hex_to_bytes_lossy;
use crate::record::{parse_table_record, round_record, timestamp, timestamp_ms, winner_name};
use crate::store::{RoundFilterSql, Store, StoredRound};

/// Largest page; 0 asks for [`DEFAULT_PAGE`].
pub const MAX_PAGE: u32 = 1000;
pub const DEFAULT_PAGE: u32 = 100;

fn page_size(field: &str, size: u32) -> Result<u32, ArchiveError> {
    match size {
        0 => Ok(DEFAULT_PAGE),
        1..=MAX_PAGE => Ok(size),
        _ => Err(ArchiveError::bad_request(
            field,
            format!("{size}: at most {MAX_PAGE}"),
        )),
    }
}

/// A wire filter as SQL; refuses an unknown winner.
pub fn filter_sql(filter: Option<&pb::RoundFilter>) -> Result<RoundFilterSql, ArchiveError> {
    let mut sql = RoundFilterSql::default();
    let Some(f) = filter else { return Ok(sql) };
    if !f.table_id.is_empty() {
        sql.table(&f.table_id);
    }
    if !f.shoe_id.is_empty() {
        sql.shoe(&f.shoe_id);
    }
    if let Some(from) = &f.from {
        sql.from_ms(timestamp_ms(from));
    }
    if let Some(to) = &f.to {
        sql.to_ms(timestamp_ms(to));
    }
    if !f.player_id.is_empty() {
        sql.player(&f.player_id);
    }
    if f.winner != 0 {
        let winner = banco_wire::convert::winner("filter.winner", f.winner)?;
        sql.winner(winner_name(winner));
    }
    if f.voided_only {
        sql.voided_only();
    }
    if f.corrected_only {
        sql.corrected_only();
    }
    Ok(sql)
}

/// The wire record of a stored round.
pub fn record_of(stored: StoredRound) -> Result<pb::RoundRecord, ArchiveError> {
    let bytes = stored.table_record()?;
    let round = parse_table_record(&bytes)
        .map_err(|e| ArchiveError::Corrupt(format!("round {}: {e}", stored.row.round_id)))?;
    Ok(round_record(&round, bytes, &stored.chain))
}

fn summary(stored: &StoredRound) -> Result<pb::RoundSummary, ArchiveError> {
    let round = parse_table_record(&stored.table_record()?)
        .map_err(|e| ArchiveError::Corrupt(format!("round {}: {e}", stored.row.round_id)))?;
    let r = &stored.row;
    Ok(pb::RoundSummary {
        round_id: r.round_id.clone(),
        table_id: r.table_id.clone(),
        shoe_id: r.shoe_id.clone(),
        croupier: r.croupier.clone(),
        finished_at: Some(timestamp(round.finished_at)),
        result: round.result.as_ref().map(pb::HandResult::from),
        voided: r.voided,
        corrections: u32::try_from(r.corrections).unwrap_or(u32::MAX),
        bets: u32::try_from(r.bets).unwrap_or(u32::MAX),
        total_stake_minor: r.total_stake,
        total_returned_minor: r.total_returned + r.total_refunded,
    })
}

pub async fn list_rounds(
    store: &Store,
    request: &pb::ListRoundsRequest,
) -> Result<pb::ListRoundsResponse, ArchiveError> {
    let filter = filter_sql(request.filter.as_ref())?;
    let size = page_size("page_size", request.page_size)?;
    let page = store
        .list_rounds(&filter, size, &request.page_token)
        .await?;
    Ok(pb::ListRoundsResponse {
        rounds: page.items.iter().map(summary).collect::<Result<_, _>>()?,
        next_page_token: page.next_page_token,
    })
}

pub async fn get_round(store: &Store, round_id: &str) -> Result<pb::RoundRecord, ArchiveError> {
    if round_id.is_empty() {
        return Err(ArchiveError::bad_request("round_id", "empty"));
    }
    match store.get_round(round_id).await? {
        Some(stored) => {
            let mut record = record_of(stored)?;
            record.clip = store.clip(round_id).await?.as_ref().map(pb::ClipRef::from);
            record.clip_missing = store
                .clip_missing(round_id)
                .await?
                .as_ref()
                .map(pb::ClipMissing::try_from)
                .transpose()?;
            record.clip_signature = store
                .clip_seal(round_id)
                .await?
                .map(|seal| hex_to_bytes_lossy(&seal))
                .unwrap_or_default();
            Ok(record)
        }
        None => Err(ArchiveError::NotFound(format!(
            "no round `{round_id}` in the archive"
        ))),
    }
}

/// Every round of a shoe in play order, with its results and roads. The table's record
/// carries neither the shoe's config nor its burn and cut card, so those stay unset.
pub async fn shoe_report(
    store: &Store,
    shoe_id: &str,
) -> Result<pb::ShoeReportResponse, ArchiveError> {
    if shoe_id.is_empty() {
        return Err(ArchiveError::bad_request("shoe_id", "empty"));
    }
    let mut filter = RoundFilterSql::default();
    filter.shoe(shoe_id);
    let mut rounds = Vec::new();
    let mut after: Option<(String, i64)> = None;
    loop {
        let batch = store
            .rounds_in_chain_order(&filter, after.as_ref().map(|(t, s)| (t.as_str(), *s)), 1000)
            .await?;
        let Some(last) = batch.last() else { break };
        after = Some((
            last.row.table_id.clone(),
            i64::try_from(last.chain.chain_seq).unwrap_or(0),
        ));
        rounds.extend(batch);
    }
    let Some(first) = rounds.first() else {
        return Err(ArchiveError::NotFound(format!(
            "no round of shoe `{shoe_id}` in the archive"
        )));
    };
    let mut report = pb::ShoeReportResponse {
        shoe_id: shoe_id.to_owned(),
        table_id: first.row.table_id.clone(),
        opened_at: Some(timestamp(
            u64::try_from(first.row.betting_opened_at).unwrap_or(0),
        )),
        ..Default::default()
    };
    let mut results: Vec<Winner> = Vec::new();
    for stored in &rounds {
        let round = parse_table_record(&stored.table_record()?)
            .map_err(|e| ArchiveError::Corrupt(format!("round {}: {e}", stored.row.round_id)))?;
        let r = &stored.row;
        if !r.croupier.is_empty() && !report.croupiers.contains(&r.croupier) {
            report.croupiers.push(r.croupier.clone());
        }
        report.rounds += 1;
        report.voided += u32::from(r.voided);
        report.corrections += u32::try_from(r.corrections).unwrap_or(0);
        report.cards_dealt += u32::try_from(r.cards).unwrap_or(0);
        report.total_stake_minor += r.total_stake;
        report.total_returned_minor += r.total_returned + r.total_refunded;
        report.ended_at = Some(timestamp(round.finished_at));
        if let Some(revealed) = round.revealed.as_ref().filter(|r| r.shoe == round.shoe) {
            report.shuffle_key = revealed.key.clone();
        }
        if let Some(opening) = &round.shoe_opening {
            report.config = Some(pb::ShoeConfig::from(opening.config));
            report.opened_at = Some(timestamp(opening.opened_at));
            report.commitment = opening.commitment.clone().unwrap_or_default();
            if let Some(burn) = &opening.burn {
                report.burn_card = banco_wire::convert::card_to_pb(burn.exposed);
                report.burned_face_down = u32::from(burn.face_down);
            }
        }
        if round.cut_card {
            report.cut_card_round_id = round.round_id.to_string();
        }
        if let Some(result) = &round.result
            && round.void.is_none()
        {
            results.push(result.winner());
            report
                .results
                .push(pb::Winner::from(result.winner()).into());
        }
    }
    report.roads = Some(pb::Roads::from(&Scoreboard::from_results(&results)));
    if !report.commitment.is_empty()
        && report.shuffle_key.is_empty()
        && let Some(last) = rounds.last()
    {
        report.shuffle_key = revealed_after(store, last).await?;
    }
    Ok(report)
}

/// The key of `last`'s shoe revealed by the table's next round, as it is for a shoe ended
/// between rounds; empty when that round does not (yet) exist or reveals another.
async fn revealed_after(store: &Store, last: &StoredRound) -> Result<String, ArchiveError> {
    let mut filter = RoundFilterSql::default();
    filter.table(&last.row.table_id);
    let after = i64::try_from(last.chain.chain_seq).unwrap_or(i64::MAX);
    let next = store
        .rounds_in_chain_order(&filter, Some((last.row.table_id.as_str(), after)), 1)
        .await?;
    let Some(next) = next.first() else {
        return Ok(String::new());
    };
    let round = parse_table_record(&next.table_record()?)
        .map_err(|e| ArchiveError::Corrupt(format!("round {}: {e}", next.row.round_id)))?;
    let shoe = u32::try_from(last.row.shoe).unwrap_or(0);
    Ok(round
        .revealed
        .filter(|r| r.shoe == shoe)
        .map(|r| r.key)
        .unwrap_or_default())
}

/// Every bet of one player, newest round first, paged.
pub async fn player_bets(
    store: &Store,
    request: &pb::PlayerBetsRequest,
) -> Result<pb::PlayerBetsResponse, ArchiveError> {
    if request.player_id.is_empty() {
        return Err(ArchiveError::bad_request("player_id", "empty"));
    }
    let size = page_size("page_size", request.page_size)?;
    let mut filter = RoundFilterSql::default();
    filter.player(&request.player_id);
    if let Some(from) = &request.from {
        filter.from_ms(timestamp_ms(from));
    }
    if let Some(to) = &request.to {
        filter.to_ms(timestamp_ms(to));
    }
    // Pages are of rounds (a round's bets are never split over two pages).
    let page = store
        .list_rounds(&filter, size, &request.page_token)
        .await?;
    let mut entries = Vec::new();
    for stored in page.items {
        let table_id = stored.row.table_id.clone();
        let record = record_of(stored)?;
        for bet in record
            .bets
            .iter()
            .filter(|b| b.player_id == request.player_id)
        {
            entries.push(pb::PlayerBetEntry {
                round_id: record.round_id.clone(),
                table_id: table_id.clone(),
                bet: Some(bet.clone()),
                result: record.result.clone(),
                voided: record.voided,
            });
        }
    }
    Ok(pb::PlayerBetsResponse {
        entries,
        next_page_token: page.next_page_token,
    })
}
