//! Export: every round matching a filter, in play order (table, then chain), as JSON
//! lines or CSV, in chunks.
//!
//! A JSON line's top-level `"cards"` is the hand in dealing order, so `banco rules judge`
//! (which ignores the other fields) replays an exported shoe; a voided round (its
//! `voided` true, maybe dealt short) is passed through by judge as voided.
//! `settled_only` leaves voided rounds out.

use banco_records::round::FinishedRound;
use banco_wire::pb;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::error::ArchiveError;
use crate::record::{BetRow, RoundRow, bet_rows, round_row};
use crate::store::ExportLines;
use crate::store::{RoundFilterSql, Store};

/// Rounds read per query.
const BATCH: u32 = 2000;
/// A chunk is sent once it holds this many bytes.
const CHUNK_BYTES: usize = 64 * 1024;

/// The CSV header: one row per bet.
pub const CSV_HEADER: &str = "round_id,table_id,shoe_id,finished_at_ms,winner,voided,player_id,position,stake_minor,returned_minor,refunded_minor,rounding\n";

/// Which encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
}

/// A bet of a JSON line (keys in alphabetical order, as a `serde_json` map writes them).
#[derive(Serialize)]
struct JsonBet<'a> {
    player_id: &'a str,
    position: &'a str,
    refunded_minor: i64,
    returned_minor: i64,
    stake_minor: i64,
}

/// A JSON line (keys in alphabetical order).
#[derive(Serialize)]
struct JsonLine<'a> {
    banker_total: Option<i64>,
    bets: Vec<JsonBet<'a>>,
    cards: Vec<&'a str>,
    chain_seq: u64,
    corrections: i64,
    finished_at_ms: i64,
    hash: &'a str,
    natural: bool,
    player_total: Option<i64>,
    round_id: &'a str,
    shoe_id: &'a str,
    table_id: &'a str,
    void_reason: Option<&'a str>,
    voided: bool,
    winner: Option<&'a str>,
}

/// Appends one round (its stored columns and bets, in record order) as a JSON line, with
/// its newline, to `out`.
fn write_jsonl_row(out: &mut Vec<u8>, row: &RoundRow, bets: &[BetRow], chain_seq: u64, hash: &str) {
    let line = JsonLine {
        banker_total: row.banker_total,
        bets: bets
            .iter()
            .map(|b| JsonBet {
                player_id: &b.player_id,
                position: &b.position,
                refunded_minor: b.refunded,
                returned_minor: b.returned,
                stake_minor: b.stake,
            })
            .collect(),
        cards: row.dealt.split_whitespace().collect(),
        chain_seq,
        corrections: row.corrections,
        finished_at_ms: row.finished_at,
        hash,
        natural: row.natural,
        player_total: row.player_total,
        round_id: &row.round_id,
        shoe_id: &row.shoe_id,
        table_id: &row.table_id,
        void_reason: row.void_reason.as_deref(),
        voided: row.voided,
        winner: row.winner.as_deref(),
    };
    // Plain data: serialising it cannot fail.
    let _ = serde_json::to_writer(&mut *out, &line);
    out.push(b'\n');
}

/// What Export writes for a round, from its columns and bets (in the record's order),
/// packed.
pub fn lines_of(row: &RoundRow, bets: &[BetRow], chain_seq: u64, hash: &str) -> ExportLines {
    let (jsonl, csv) = render(row, bets, chain_seq, hash);
    ExportLines {
        jsonl: crate::packed::pack(&jsonl),
        csv: crate::packed::pack(&csv),
    }
}

/// The JSON line and the CSV rows of a round, as Export writes them.
pub fn render(row: &RoundRow, bets: &[BetRow], chain_seq: u64, hash: &str) -> (Vec<u8>, Vec<u8>) {
    let mut jsonl = Vec::with_capacity(1024);
    write_jsonl_row(&mut jsonl, row, bets, chain_seq, hash);
    let mut csv = String::with_capacity(bets.len() * 100);
    write_csv_rows(&mut csv, row, bets);
    (jsonl, csv.into_bytes())
}

/// What Export writes for a round, packed.
pub fn lines(round: &FinishedRound, chain_seq: u64, hash: &str) -> ExportLines {
    lines_of(&round_row(round), &bet_rows(round), chain_seq, hash)
}

/// Appends a CSV field, quoted when it must be.
fn push_csv_field(out: &mut String, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// Appends one CSV row per bet of a round (its stored columns and bets) to `out`.
fn write_csv_rows(out: &mut String, row: &RoundRow, bets: &[BetRow]) {
    use std::fmt::Write as _;
    for b in bets {
        push_csv_field(out, &row.round_id);
        out.push(',');
        push_csv_field(out, &row.table_id);
        out.push(',');
        push_csv_field(out, &row.shoe_id);
        let _ = write!(
            out,
            ",{},{},{},",
            row.finished_at,
            row.winner.as_deref().unwrap_or(""),
            row.voided
        );
        push_csv_field(out, &b.player_id);
        let _ = writeln!(
            out,
            ",{},{},{},{},{}/{}",
            b.position,
            b.stake,
            b.returned,
            b.refunded,
            b.rounding_remainder,
            b.rounding_denominator,
        );
    }
}

/// Which rounds an Export request asks for: its filter, and with `settled_only` the
/// voided rounds left out.
pub fn filter(request: &pb::ExportRequest) -> Result<RoundFilterSql, ArchiveError> {
    let mut sql = crate::query::filter_sql(request.filter.as_ref())?;
    if request.settled_only {
        if request.filter.as_ref().is_some_and(|f| f.voided_only) {
            return Err(ArchiveError::bad_request(
                "settled_only",
                "cannot be used with filter.voided_only: together they match no round",
            ));
        }
        sql.settled_only();
    }
    Ok(sql)
}

/// Streams the export into `tx` until done, the receiver goes away, or an error (sent
/// as the stream's last item).
pub async fn run(
    store: Store,
    filter: RoundFilterSql,
    format: Format,
    tx: mpsc::Sender<Result<pb::ExportChunk, ArchiveError>>,
) {
    if let Err(e) = produce(&store, &filter, format, &tx).await {
        let _ = tx.send(Err(e)).await;
    }
}

/// Reads pages of rounds in chain order (what was rendered for each at append) and sends
/// them in chunks of about [`CHUNK_BYTES`]. Memory is bounded by a page and a chunk,
/// whatever the number of rounds.
async fn produce(
    store: &Store,
    filter: &RoundFilterSql,
    format: Format,
    tx: &mpsc::Sender<Result<pb::ExportChunk, ArchiveError>>,
) -> Result<(), ArchiveError> {
    let mut buffer: Vec<u8> = Vec::with_capacity(2 * CHUNK_BYTES);
    let mut records = 0u64;
    if format == Format::Csv {
        buffer.extend_from_slice(CSV_HEADER.as_bytes());
    }
    let mut after: Option<(String, i64)> = None;
    loop {
        let page = store
            .export_page(
                filter,
                after.as_ref().map(|(t, s)| (t.as_str(), *s)),
                format == Format::Csv,
                BATCH,
            )
            .await?;
        let Some(last) = page.last() else { break };
        after = Some((last.table_id.clone(), last.chain_seq));
        for round in &page {
            let text = crate::packed::unpack(
                &round.text,
                &format!(
                    "the export of round {} of {}",
                    round.chain_seq, round.table_id
                ),
            )?;
            buffer.extend_from_slice(&text);
            records += round.records;
            // Rounds are whole lines: a chunk ends at the end of a round.
            if buffer.len() >= CHUNK_BYTES {
                let chunk = pb::ExportChunk {
                    data: std::mem::replace(&mut buffer, Vec::with_capacity(2 * CHUNK_BYTES)),
                    records: std::mem::take(&mut records),
                    last: false,
                };
                if tx.send(Ok(chunk)).await.is_err() {
                    return Ok(());
                }
            }
        }
    }
    let _ = tx
        .send(Ok(pb::ExportChunk {
            records,
            data: buffer,
            last: true,
        }))
        .await;
    Ok(())
}
