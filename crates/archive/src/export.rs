//! Export: every round matching a filter, in play order (table, then chain), as JSON
//! lines or CSV, in chunks.
//!
//! A JSON line's top-level `"cards"` is the hand in dealing order, so `banco rules judge`
//! (which ignores the other fields) replays an exported shoe. A voided round dealt short
//! has fewer cards than a hand, and judge says so on its line.

use banco_table::FinishedRound;
use banco_wire::pb;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::error::ArchiveError;
use crate::record::{bet_rows, parse_table_record, winner_name};
use crate::store::{ExportRow, RoundFilterSql, Store};

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
struct JsonBet {
    player_id: String,
    position: String,
    refunded_minor: i64,
    returned_minor: i64,
    stake_minor: i64,
}

/// A JSON line (keys in alphabetical order).
#[derive(Serialize)]
struct JsonLine<'a> {
    banker_total: Option<u8>,
    bets: Vec<JsonBet>,
    cards: Vec<String>,
    chain_seq: u64,
    corrections: usize,
    finished_at_ms: u64,
    hash: &'a str,
    natural: bool,
    player_total: Option<u8>,
    round_id: &'a str,
    shoe_id: String,
    table_id: &'a str,
    void_reason: Option<&'a str>,
    voided: bool,
    winner: Option<&'static str>,
}

/// Appends one round as a JSON line (with its newline) to `out`.
pub fn write_jsonl_line(out: &mut Vec<u8>, round: &FinishedRound, chain_seq: u64, hash: &str) {
    let result = round.result.as_ref();
    let line = JsonLine {
        banker_total: result.map(|r| r.banker_total()),
        bets: bet_rows(round)
            .into_iter()
            .map(|b| JsonBet {
                player_id: b.player_id,
                position: b.position,
                refunded_minor: b.refunded,
                returned_minor: b.returned,
                stake_minor: b.stake,
            })
            .collect(),
        cards: round.cards.iter().map(|c| c.card.to_string()).collect(),
        chain_seq,
        corrections: round.corrections.len(),
        finished_at_ms: round.finished_at,
        hash,
        natural: result.is_some_and(|r| r.is_natural()),
        player_total: result.map(|r| r.player_total()),
        round_id: round.round_id.as_str(),
        shoe_id: crate::record::shoe_id(&round.table, round.shoe),
        table_id: &round.table,
        void_reason: round.void.as_ref().map(|v| v.reason.as_str()),
        voided: round.void.is_some(),
        winner: result.map(|r| winner_name(r.winner())),
    };
    // Plain data: serialising it cannot fail.
    let _ = serde_json::to_writer(&mut *out, &line);
    out.push(b'\n');
}

/// One round as a JSON line (with its newline).
pub fn jsonl_line(round: &FinishedRound, chain_seq: u64, hash: &str) -> String {
    let mut out = Vec::new();
    write_jsonl_line(&mut out, round, chain_seq, hash);
    String::from_utf8(out).unwrap_or_default()
}

/// A CSV field, quoted when it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// One row per bet of the round.
pub fn csv_rows(round: &FinishedRound) -> (String, u64) {
    let winner = round
        .result
        .as_ref()
        .map_or("", |r| winner_name(r.winner()));
    let shoe_id = crate::record::shoe_id(&round.table, round.shoe);
    let mut out = String::new();
    let mut rows = 0;
    for b in bet_rows(round) {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}/{}\n",
            csv_field(round.round_id.as_str()),
            csv_field(&round.table),
            csv_field(&shoe_id),
            round.finished_at,
            winner,
            round.void.is_some(),
            csv_field(&b.player_id),
            b.position,
            b.stake,
            b.returned,
            b.refunded,
            b.rounding_remainder,
            b.rounding_denominator,
        ));
        rows += 1;
    }
    (out, rows)
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

/// Encodes a page of rounds: JSON lines, or CSV rows (one per bet), and how many.
fn encode(page: &[ExportRow], format: Format) -> Result<(Vec<u8>, u64), ArchiveError> {
    let mut out = Vec::with_capacity(page.len() * 1024);
    let mut records = 0u64;
    for stored in page {
        let round = parse_table_record(&stored.table_record)
            .map_err(|e| ArchiveError::Corrupt(format!("round {}: {e}", stored.round_id)))?;
        match format {
            Format::Jsonl => {
                let seq = u64::try_from(stored.chain_seq).unwrap_or(0);
                write_jsonl_line(&mut out, &round, seq, &stored.hash);
                records += 1;
            }
            Format::Csv => {
                let (rows, n) = csv_rows(&round);
                out.extend_from_slice(rows.as_bytes());
                records += n;
            }
        }
    }
    Ok((out, records))
}

/// Reads pages in chain order while the previous page is encoded on a blocking thread
/// (the two overlap), and sends the output in chunks of about [`CHUNK_BYTES`]. Memory is
/// bounded by two pages and a chunk, whatever the number of rounds.
async fn produce(
    store: &Store,
    filter: &RoundFilterSql,
    format: Format,
    tx: &mpsc::Sender<Result<pb::ExportChunk, ArchiveError>>,
) -> Result<(), ArchiveError> {
    let mut buffer: Vec<u8> = Vec::with_capacity(2 * CHUNK_BYTES);
    // Every record is one line; the CSV header is a line but no record.
    let mut header_lines = 0u64;
    if format == Format::Csv {
        buffer.extend_from_slice(CSV_HEADER.as_bytes());
        header_lines = 1;
    }
    let mut page = store.export_page(filter, None, BATCH).await?;
    while !page.is_empty() {
        let after = page
            .last()
            .map(|last| (last.table_id.clone(), last.chain_seq));
        let encoding = tokio::task::spawn_blocking(move || encode(&page, format));
        let next = match &after {
            Some((table, seq)) => {
                store
                    .export_page(filter, Some((table, *seq)), BATCH)
                    .await?
            }
            None => Vec::new(),
        };
        let (bytes, _) = encoding
            .await
            .map_err(|e| ArchiveError::Corrupt(format!("export encoder failed: {e}")))??;
        buffer.extend_from_slice(&bytes);
        // Sends whole lines in chunks of about CHUNK_BYTES, keeping the tail for the next.
        while buffer.len() >= CHUNK_BYTES {
            let cut = buffer[..CHUNK_BYTES]
                .iter()
                .rposition(|&b| b == b'\n')
                .or_else(|| buffer.iter().position(|&b| b == b'\n'))
                .map_or(buffer.len(), |i| i + 1);
            let rest = buffer.split_off(cut);
            let lines = lines(&buffer);
            let chunk = pb::ExportChunk {
                data: std::mem::replace(&mut buffer, rest),
                records: lines - std::mem::take(&mut header_lines),
                last: false,
            };
            if tx.send(Ok(chunk)).await.is_err() {
                return Ok(());
            }
        }
        page = next;
    }
    let _ = tx
        .send(Ok(pb::ExportChunk {
            records: lines(&buffer) - header_lines,
            data: buffer,
            last: true,
        }))
        .await;
    Ok(())
}

fn lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}
