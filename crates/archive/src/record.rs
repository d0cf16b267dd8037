//! What the archive derives from a table's finished round: the indexed columns of a stored
//! round and its bets, and the whole `RoundRecord` of GetRound. Everything here is
//! computed from the table's record, the only source of truth, so Verify can derive it
//! again and compare.

use banco_records::ShoeId;
use banco_records::round::CardSource;
use banco_records::round::FinishedRound;
use banco_rules::{BetKind, CoupResult, Settlement, Winner};
use banco_wire::pb;

use crate::error::ArchiveError;
use crate::hexbytes::hex_to_bytes_lossy;

/// Reads the table's record; refuses garbage naming the field.
pub fn parse_table_record(bytes: &[u8]) -> Result<FinishedRound, ArchiveError> {
    serde_json::from_slice(bytes).map_err(|e| ArchiveError::BadRecord {
        field: "record.table_record".to_owned(),
        why: format!("not a table's finished round: {e}"),
    })
}

/// `banker`, `player` or `tie`: how a winner is stored and filtered on.
pub const fn winner_name(winner: Winner) -> &'static str {
    match winner {
        Winner::Banker => "banker",
        Winner::Player => "player",
        Winner::Tie => "tie",
    }
}

/// The croupier a round is credited to: who confirmed its result, or voided it; for a
/// record written before the table named them, whoever opened betting or corrected a
/// card, else "".
pub fn croupier(round: &FinishedRound) -> String {
    round
        .confirmed_by
        .clone()
        .or_else(|| round.void.as_ref().map(|v| v.by.clone()))
        .or_else(|| round.opened_by.clone())
        .or_else(|| round.corrections.last().map(|c| c.by.clone()))
        .unwrap_or_default()
}

/// The shoe events of a round: the burn and the commitment to the shuffle on the shoe's
/// first round, the cut card on the round it came out in, a revealed shuffle key on the
/// round that carries it.
fn shoe_events(round: &FinishedRound) -> Vec<pb::ShoeEventRecord> {
    let mut events = Vec::new();
    if let Some(opening) = &round.shoe_opening
        && let Some(commitment) = &opening.commitment
    {
        events.push(pb::ShoeEventRecord {
            kind: pb::ShoeEventRecordKind::ShuffleCommitted.into(),
            at: Some(timestamp(opening.opened_at)),
            commitment: commitment.clone(),
            shoe_id: ShoeId::new(&round.table, round.shoe).to_string(),
            ..Default::default()
        });
    }
    if let Some(burn) = round.shoe_opening.as_ref().and_then(|o| o.burn.as_ref()) {
        events.push(pb::ShoeEventRecord {
            kind: pb::ShoeEventRecordKind::Burn.into(),
            card: banco_wire::convert::card_to_pb(burn.exposed),
            burned_face_down: u32::from(burn.face_down),
            at: Some(timestamp(burn.at)),
            ..Default::default()
        });
    }
    if round.cut_card {
        // The card that brought the cut card out is the last one of the hand's first
        // cards dealt after it; the table records only that it came out in this hand.
        events.push(pb::ShoeEventRecord {
            kind: pb::ShoeEventRecordKind::CutCard.into(),
            card: String::new(),
            burned_face_down: 0,
            at: round.cards.last().map(|c| timestamp(c.at)),
            ..Default::default()
        });
    }
    if let Some(revealed) = &round.revealed {
        events.push(pb::ShoeEventRecord {
            kind: pb::ShoeEventRecordKind::ShuffleRevealed.into(),
            at: Some(timestamp(round.finished_at)),
            shuffle_key: revealed.key.clone(),
            shoe_id: ShoeId::new(&round.table, revealed.shoe).to_string(),
            ..Default::default()
        });
    }
    events
}

/// One bet's stored row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BetRow {
    pub player_id: String,
    pub position: String,
    pub stake: i64,
    /// Returned by settlement (stake back plus winnings); 0 when voided.
    pub returned: i64,
    /// Returned by a void; 0 otherwise.
    pub refunded: i64,
    pub won: bool,
    pub rounding_remainder: i64,
    pub rounding_denominator: i64,
}

/// The indexed columns of one stored round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRow {
    pub round_id: String,
    pub table_id: String,
    pub shoe_id: String,
    pub shoe: i64,
    pub hand: i64,
    pub croupier: String,
    pub betting_opened_at: i64,
    pub betting_closed_at: Option<i64>,
    pub finished_at: i64,
    /// UTC date of `finished_at`, `YYYY-MM-DD`.
    pub day: String,
    pub winner: Option<String>,
    pub natural: bool,
    pub player_pair: bool,
    pub banker_pair: bool,
    pub voided: bool,
    pub corrections: i64,
    pub cards: i64,
    pub bets: i64,
    pub total_stake: i64,
    pub total_returned: i64,
    pub total_refunded: i64,
    /// The hand in dealing order, in the notation of docs/src/rules/cards-and-shoe.md, space
    /// separated.
    pub dealt: String,
    /// The hand's totals (`None` when it was not completed).
    pub player_total: Option<i64>,
    pub banker_total: Option<i64>,
    pub void_reason: Option<String>,
}

fn ms(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The settlement of `player`'s bet on `kind`, if the round was settled.
fn settlement<'a>(round: &'a FinishedRound, player: &str, kind: BetKind) -> Option<&'a Settlement> {
    round
        .settlements
        .get(player)
        .and_then(|list| list.iter().find(|s| s.kind == kind))
}

/// Every bet of the round, by player then position.
pub fn bet_rows(round: &FinishedRound) -> Vec<BetRow> {
    let mut rows = Vec::new();
    for (player, stakes) in &round.bets {
        for (&kind, &stake) in stakes {
            let settled = settlement(round, player, kind);
            let voided = round.void.is_some();
            rows.push(BetRow {
                player_id: player.clone(),
                position: kind.name().to_owned(),
                stake,
                returned: settled.map_or(0, |s| s.returned),
                refunded: if voided { stake } else { 0 },
                won: settled.is_some_and(|s| s.winnings > 0),
                rounding_remainder: settled.map_or(0, |s| s.rounding.remainder),
                rounding_denominator: settled.map_or(1, |s| s.rounding.denominator),
            });
        }
    }
    rows
}

/// The round's stored columns.
pub fn round_row(round: &FinishedRound) -> RoundRow {
    let bets = bet_rows(round);
    let result = round.result.as_ref();
    RoundRow {
        round_id: round.round_id.to_string(),
        table_id: round.table.clone(),
        shoe_id: ShoeId::new(&round.table, round.shoe).to_string(),
        shoe: i64::from(round.shoe),
        hand: i64::from(round.hand),
        croupier: croupier(round),
        betting_opened_at: ms(round.betting_opened_at),
        betting_closed_at: round.betting_closed_at.map(ms),
        finished_at: ms(round.finished_at),
        day: utc_day(ms(round.finished_at)),
        winner: result.map(|r| winner_name(r.winner()).to_owned()),
        natural: result.is_some_and(CoupResult::is_natural),
        player_pair: result.is_some_and(CoupResult::player_pair),
        banker_pair: result.is_some_and(CoupResult::banker_pair),
        voided: round.void.is_some(),
        corrections: i64::try_from(round.corrections.len()).unwrap_or(i64::MAX),
        cards: i64::try_from(round.cards.len()).unwrap_or(i64::MAX),
        bets: i64::try_from(bets.len()).unwrap_or(i64::MAX),
        total_stake: bets.iter().map(|b| b.stake).sum(),
        total_returned: bets.iter().map(|b| b.returned).sum(),
        total_refunded: bets.iter().map(|b| b.refunded).sum(),
        dealt: round
            .cards
            .iter()
            .map(|c| c.card.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        player_total: result.map(|r| i64::from(r.player_total())),
        banker_total: result.map(|r| i64::from(r.banker_total())),
        void_reason: round.void.as_ref().map(|v| v.reason.clone()),
    }
}

/// `YYYY-MM-DD` (UTC) of a time in milliseconds since the Unix epoch.
pub fn utc_day(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Milliseconds at the start of a UTC day `YYYY-MM-DD`; `None` if it is not one.
pub fn parse_day(text: &str) -> Option<i64> {
    let mut parts = text.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let d: i64 = parts.next()?.parse().ok()?;
    if parts.next().is_some()
        || text.len() != 10
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
    {
        return None;
    }
    let days = days_from_civil(y, m, d);
    (civil_from_days(days) == (y, m, d)).then_some(days * 86_400_000)
}

/// Howard Hinnant's algorithm: days since 1970-01-01 to a proleptic Gregorian date.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A wire timestamp of milliseconds since the epoch.
pub fn timestamp(ms: u64) -> banco_wire::Timestamp {
    banco_wire::Timestamp {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
    }
}

/// Milliseconds since the epoch of a wire timestamp (negative before 1970).
pub fn timestamp_ms(ts: &banco_wire::Timestamp) -> i64 {
    ts.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(ts.nanos) / 1_000_000)
}

fn card_source(source: CardSource) -> pb::CardSource {
    match source {
        CardSource::Scanner => pb::CardSource::Scanner,
        CardSource::Manual => pb::CardSource::Manual,
        // The wire has no value for a shuffler-dealt card (automated tables).
        CardSource::Shuffler => pb::CardSource::Unspecified,
    }
}

/// The chain fields of a stored round, as the table wrote them (hex).
#[derive(Clone, Debug, Default)]
pub struct ChainFields {
    pub chain_seq: u64,
    pub prev_hash: String,
    pub hash: String,
    pub signature: String,
    pub key_id: String,
}

/// Every bet of the round as the wire shows it.
pub fn player_bets(round: &FinishedRound) -> Vec<pb::PlayerBet> {
    let mut out = Vec::new();
    for (player, stakes) in &round.bets {
        for (&kind, &stake) in stakes {
            let settled = settlement(round, player, kind);
            let placements: Vec<pb::BetPlacement> = round
                .placements
                .get(player)
                .into_iter()
                .flatten()
                .filter(|p| p.kind == kind)
                .map(|p| pb::BetPlacement {
                    idempotency_key: p.key.clone(),
                    amount_minor: p.amount,
                    placed_at: Some(timestamp(p.at)),
                })
                .collect();
            let (placed_at, idempotency_key) = match placements.first() {
                Some(first) => (first.placed_at, first.idempotency_key.clone()),
                // Recorded before the table kept each request: the close of betting is
                // the latest the stake can have been placed.
                None => (
                    Some(timestamp(
                        round.betting_closed_at.unwrap_or(round.betting_opened_at),
                    )),
                    stake_key(round, player),
                ),
            };
            out.push(pb::PlayerBet {
                player_id: player.clone(),
                kind: pb::BetKind::from(kind).into(),
                stake_minor: stake,
                settlement: settled.map(|s| pb::Settlement::from(*s)),
                refunded_minor: if round.void.is_some() { stake } else { 0 },
                placed_at,
                idempotency_key,
                placements,
            });
        }
    }
    out
}

/// The key of the player's last stake entry in the round's ledger, for rounds recorded
/// without placements.
fn stake_key(round: &FinishedRound, player: &str) -> String {
    use banco_records::round::{Account, EntryKind};
    round
        .entries
        .iter()
        .rev()
        .find(|e| {
            e.kind == EntryKind::Stake && matches!(&e.from, Account::Player(p) if p == player)
        })
        .map(|e| e.key.clone())
        .unwrap_or_default()
}

/// The whole wire record of a round, derived from the table's record.
pub fn round_record(
    round: &FinishedRound,
    table_record: Vec<u8>,
    chain: &ChainFields,
) -> pb::RoundRecord {
    let confirmed_at = round
        .result
        .is_some()
        .then_some(round.finished_at)
        .filter(|_| round.void.is_none());
    pb::RoundRecord {
        round_id: round.round_id.to_string(),
        table_id: round.table.clone(),
        shoe_id: ShoeId::new(&round.table, round.shoe).to_string(),
        croupier: croupier(round),
        betting_opened_at: Some(timestamp(round.betting_opened_at)),
        betting_closed_at: round.betting_closed_at.map(timestamp),
        confirmed_at: confirmed_at.map(timestamp),
        finished_at: Some(timestamp(round.finished_at)),
        cards: round
            .cards
            .iter()
            .map(|c| pb::DealtCard {
                card: banco_wire::convert::card_to_pb(c.card),
                side: pb::Side::from(c.to).into(),
                source: card_source(c.source).into(),
                dealt_at: Some(timestamp(c.at)),
            })
            .collect(),
        corrections: round
            .corrections
            .iter()
            .map(|c| pb::Correction {
                card: banco_wire::convert::card_to_pb(c.card),
                // The table's correction does not say which hand the card had gone to.
                side: pb::Side::Unspecified.into(),
                reason: c.reason.clone(),
                by: c.by.clone(),
                at: Some(timestamp(c.at)),
            })
            .collect(),
        voided: round.void.is_some(),
        void_reason: round
            .void
            .as_ref()
            .map(|v| v.reason.clone())
            .unwrap_or_default(),
        result: round.result.as_ref().map(pb::HandResult::from),
        // Recorded with the shoe's first round; the archive's ShoeReport has it for every
        // round of the shoe.
        paytable: round
            .shoe_opening
            .as_ref()
            .map(|o| pb::Paytable::from(&o.paytable)),
        bets: player_bets(round),
        shoe_events: shoe_events(round),
        // Kept beside the record: the caller adds them.
        clip: None,
        clip_missing: None,
        clip_signature: Vec::new(),
        prev_hash: hex_to_bytes_lossy(&chain.prev_hash),
        hash: hex_to_bytes_lossy(&chain.hash),
        signature: hex_to_bytes_lossy(&chain.signature),
        key_id: chain.key_id.clone(),
        table_record,
        chain_seq: chain.chain_seq,
    }
}
