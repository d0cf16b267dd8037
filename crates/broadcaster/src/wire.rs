//! Conversions between the wire ([`pb`]) and the table's types that `banco-wire` does not
//! hold (they would make it depend on `banco-table`): phases, dealt cards, snapshots,
//! refusals, and the croupier's requests read into table [`Command`]s.
//!
//! Inward conversions name the field at fault in a [`ConversionError`], which is
//! INVALID_ARGUMENT on the wire. `now_ms` of every command built here is 0: the actor
//! stamps it from its clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_rules::shoe::{ShoeConfig, ShoeError};
use banco_rules::{BetKind, Coup, DealError, Money};
use banco_table::actor::RefusalKind;
use banco_table::book::{PositionRefusal, PositionTotal};
use banco_table::ledger::LedgerError;
use banco_table::phase::DealtCard;
use banco_table::{BetRefusal, CardSource, Command, Phase, Refusal, RoundId, TableSnapshot};
use banco_wallet::WalletError;
use banco_wire::convert::{card, card_to_pb, shoe_state_to_pb};
use banco_wire::{ConversionError, Timestamp, pb};

use crate::video::clip_store::{ClipMissing, MissingReason};

/// A timestamp of unix milliseconds.
pub(crate) fn timestamp(ms: u64) -> Timestamp {
    Timestamp::from(UNIX_EPOCH + Duration::from_millis(ms))
}

/// The server's clock now, in unix milliseconds.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Why a round has no clip, as the archive keeps it (the detail cut to what it takes).
pub(crate) fn clip_missing_to_pb(missing: &ClipMissing) -> pb::ClipMissing {
    let mut end = missing
        .detail
        .len()
        .min(banco_wire::MAX_CLIP_MISSING_DETAIL_BYTES);
    while !missing.detail.is_char_boundary(end) {
        end -= 1;
    }
    let reason = match missing.reason {
        MissingReason::NoVideo => pb::ClipMissingReason::NoVideo,
        MissingReason::RecorderFailed => pb::ClipMissingReason::RecorderFailed,
        MissingReason::Missed => pb::ClipMissingReason::Missed,
        MissingReason::NotFinished => pb::ClipMissingReason::NotFinished,
        MissingReason::FileGone => pb::ClipMissingReason::FileGone,
        MissingReason::Refused => pb::ClipMissingReason::Refused,
    };
    pb::ClipMissing {
        reason: reason.into(),
        detail: missing.detail[..end].to_owned(),
    }
}

/// The server's clock now.
pub(crate) fn now() -> Timestamp {
    Timestamp::from(SystemTime::now())
}

pub(crate) fn phase_to_pb(phase: Phase) -> pb::TablePhase {
    match phase {
        // Without a shoe the round is idle too; `shoe_state` says NO_SHOE.
        Phase::NoShoe | Phase::Idle => pb::TablePhase::Idle,
        Phase::BettingOpen { .. } => pb::TablePhase::BettingOpen,
        Phase::BettingClosed { .. } => pb::TablePhase::BettingClosed,
        Phase::Dealing => pb::TablePhase::Dealing,
        Phase::Result => pb::TablePhase::Result,
        Phase::Settled => pb::TablePhase::Settled,
        Phase::Voided => pb::TablePhase::Voided,
    }
}

/// The wire has no value for the automated tables' shuffler: its cards go out unspecified.
pub(crate) fn card_source_to_pb(source: CardSource) -> pb::CardSource {
    match source {
        CardSource::Scanner => pb::CardSource::Scanner,
        CardSource::Manual => pb::CardSource::Manual,
        CardSource::Shuffler => pb::CardSource::Unspecified,
    }
}

/// Reads a `CardSource` field: SCANNER or MANUAL.
pub(crate) fn card_source(field: &str, raw: i32) -> Result<CardSource, ConversionError> {
    match pb::CardSource::try_from(raw) {
        Ok(pb::CardSource::Scanner) => Ok(CardSource::Scanner),
        Ok(pb::CardSource::Manual) => Ok(CardSource::Manual),
        Ok(pb::CardSource::Unspecified) => Err(ConversionError::missing(field)),
        Err(_) => Err(ConversionError::invalid(
            field,
            raw.to_string(),
            "not a known value of this enum",
        )),
    }
}

pub(crate) fn dealt_card_to_pb(dealt: &DealtCard) -> pb::DealtCard {
    pb::DealtCard {
        card: card_to_pb(dealt.card),
        side: pb::Side::from(dealt.to).into(),
        source: card_source_to_pb(dealt.source).into(),
        dealt_at: Some(timestamp(dealt.at)),
    }
}

pub(crate) fn position_totals_to_pb<'a>(
    totals: impl IntoIterator<Item = (&'a BetKind, &'a PositionTotal)>,
) -> Vec<pb::PositionTotal> {
    totals
        .into_iter()
        .map(|(&kind, total)| pb::PositionTotal {
            kind: pb::BetKind::from(kind).into(),
            total_minor: total.amount,
            bettors: total.bettors,
        })
        .collect()
}

/// The table at event `seq` without its roads (a console's state adds those it keeps,
/// [`crate::hosted::HostedTable::table_state`]; a subscriber's snapshot has the hub's).
pub(crate) fn round_state(snapshot: &TableSnapshot, seq: u64) -> pb::TableState {
    let betting_closes_at = match snapshot.phase {
        Phase::BettingOpen {
            closes_at: Some(at),
            ..
        } => Some(timestamp(at)),
        _ => None,
    };
    // The judged result, for RESULT and SETTLED: the rules judge the cards shown.
    let result = matches!(snapshot.phase, Phase::Result | Phase::Settled)
        .then(|| {
            let cards: Vec<_> = snapshot.cards.iter().map(|d| d.card).collect();
            Coup::replay(&cards).ok().and_then(|coup| coup.result())
        })
        .flatten()
        .map(pb::HandResult::from);
    let due = snapshot.due.map_or(pb::Due::Unspecified, pb::Due::from);
    pb::TableState {
        table_id: snapshot.table.clone(),
        croupier: String::new(),
        phase: phase_to_pb(snapshot.phase).into(),
        shoe_state: shoe_state_to_pb(snapshot.shoe_state).into(),
        shoe_id: snapshot
            .shoe
            .map(|n| format!("{}-S{n:04}", snapshot.table))
            .unwrap_or_default(),
        betting_closes_at,
        server_time: Some(now()),
        round_id: snapshot
            .round_id
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_default(),
        cards: snapshot.cards.iter().map(dealt_card_to_pb).collect(),
        due: due.into(),
        player_total: u32::from(snapshot.player_total),
        banker_total: u32::from(snapshot.banker_total),
        result,
        bet_totals: position_totals_to_pb(&snapshot.bet_totals),
        bettors: snapshot.bettors,
        last_refusal: None,
        alerts: Vec::new(),
        cards_left: snapshot.cards_left.map_or(0, u32::from),
        seq,
        chat: Vec::new(),
        players: 0,
        seats: Vec::new(),
        last_results: crate::player_service::winners_to_pb(snapshot.last_results()),
        roads: None,
        burn: snapshot.burn.map(|burn| pb::ShoeBurn {
            exposed_card: card_to_pb(burn.exposed),
            burned_face_down: u32::from(burn.face_down),
        }),
        round_totals: snapshot.totals.map(|totals| pb::RoundTotals {
            staked_minor: totals.staked,
            returned_minor: totals.returned,
            house_result_minor: totals.house_result(),
        }),
        currency: String::new(),
    }
}

/// A table refusal on the wire: the best-fitting code, the table's sentence, and the
/// request field at fault when one is known.
pub(crate) fn refusal_to_pb(refusal: &Refusal) -> pb::Refusal {
    use pb::RefusalCode as C;
    let (code, field) = match refusal {
        Refusal::NotNow { .. }
        | Refusal::ShoeInPlay { .. }
        | Refusal::BettingStillOpen { .. }
        | Refusal::BeforeDraw { .. } => (C::WrongPhase, ""),
        Refusal::NoShoe { .. } | Refusal::ShoeEnded { .. } => (C::NoShoe, ""),
        Refusal::BurnPending { .. } => (C::BurnPending, ""),
        Refusal::WrongPacing { .. } => (C::NotAllowed, ""),
        Refusal::Deal(DealError::HandComplete { .. }) => (C::HandComplete, "card"),
        Refusal::Shoe(err) => shoe_code(err),
        Refusal::ShoeConfig(_) => (C::NotAllowed, "config"),
        Refusal::NothingToUndo => (C::NothingToUndo, ""),
        Refusal::Missing { field } => (C::NotAllowed, *field),
        Refusal::BettingNotOpen { .. } | Refusal::BettingClosedAt { .. } => (C::BettingClosed, ""),
        Refusal::WrongRound { .. } => (C::WrongRound, "round_id"),
        Refusal::NoBetsGiven => (C::NotAllowed, "bets"),
        Refusal::Bets { reasons, .. } => (
            reasons.0.first().map_or(C::NotAllowed, position_code),
            "bets",
        ),
        Refusal::NoBets { .. } | Refusal::NoPreviousBets { .. } => (C::NotAllowed, ""),
        Refusal::KeyReused { .. } => (C::IdempotencyConflict, "idempotency_key"),
        Refusal::NotPending { .. } => (C::NotAllowed, "idempotency_key"),
        Refusal::Ledger(LedgerError::Insufficient { .. }) => (C::InsufficientFunds, ""),
        Refusal::Ledger(LedgerError::KeyReused { .. }) => (C::IdempotencyConflict, ""),
        Refusal::Ledger(_) | Refusal::Settle(_) => (C::NotAllowed, ""),
        Refusal::CardRefused { code, .. } => (authority_code(*code), "card"),
        Refusal::CommandIdReused { .. } => (C::IdempotencyConflict, "command_id"),
        Refusal::NoSeats { .. }
        | Refusal::NoSuchSeat { .. }
        | Refusal::SeatTaken { .. }
        | Refusal::TableFull { .. }
        | Refusal::AlreadySeated { .. }
        | Refusal::NotSeated { .. }
        | Refusal::LeavingWithStakes { .. }
        | Refusal::SeatNeeded { .. } => (C::Seat, ""),
        Refusal::PassNotNow { .. } => (C::WrongPhase, ""),
        Refusal::PassTooLate { .. } => (C::BettingClosed, ""),
        Refusal::PassAfterBet { .. }
        | Refusal::AlreadyPassed { .. }
        | Refusal::BetAfterPass { .. } => (C::NotAllowed, ""),
        Refusal::ChatText { .. } => (C::NotAllowed, "text"),
        Refusal::ChatRateLimited { .. } => (C::RateLimited, ""),
        Refusal::Muted { .. } => (C::Muted, ""),
        Refusal::NotMuted { .. } | Refusal::UnknownPlayer { .. } => (C::NotAllowed, "player_id"),
    };
    pb::Refusal {
        code: code.into(),
        message: refusal.to_string(),
        field: field.to_owned(),
    }
}

/// Why the wallet did not take a bet request, for the player: the code, and a sentence in
/// money as people read it.
pub(crate) fn wallet_refusal_to_pb(error: &WalletError, currency: &str) -> pb::Refusal {
    use pb::RefusalCode as C;
    let money = |minor: i64| Money::new(minor, currency).to_string();
    let (code, message) = match error {
        WalletError::InsufficientFunds { needed, available } => (
            C::InsufficientFunds,
            format!(
                "insufficient funds: the bets need {}, the balance is {}",
                money(*needed),
                money(*available)
            ),
        ),
        WalletError::SelfLimit { limit, asked } => (
            C::SelfLimit,
            format!(
                "{} is over your own limit of {} per bet",
                money(*asked),
                money(*limit)
            ),
        ),
        WalletError::AccountBlocked => (
            C::AccountBlocked,
            "your account is blocked: the casino's cashier can tell you why".to_owned(),
        ),
        WalletError::Unavailable(why) => (
            C::Unavailable,
            format!("the wallet did not answer ({why}); nothing was taken: bet again"),
        ),
        other => (
            C::NotAllowed,
            format!("the wallet refused the bets: {other}"),
        ),
    };
    pb::Refusal {
        code: code.into(),
        message,
        field: "bets".to_owned(),
    }
}

/// A bet request the table took to the wallet and then refused.
pub(crate) fn bet_refusal_to_pb(why: &BetRefusal, currency: &str) -> pb::Refusal {
    match why {
        BetRefusal::Wallet { error } => wallet_refusal_to_pb(error, currency),
        BetRefusal::BettingClosed { .. } => pb::Refusal {
            code: pb::RefusalCode::BettingClosed.into(),
            message: why.to_string(),
            field: String::new(),
        },
    }
}

fn authority_code(kind: RefusalKind) -> pb::RefusalCode {
    match kind {
        RefusalKind::Misread => pb::RefusalCode::Misread,
        RefusalKind::HandComplete => pb::RefusalCode::HandComplete,
        RefusalKind::BurnPending => pb::RefusalCode::BurnPending,
        RefusalKind::NoShoe => pb::RefusalCode::NoShoe,
        RefusalKind::WrongPhase => pb::RefusalCode::WrongPhase,
        RefusalKind::Other => pb::RefusalCode::NotAllowed,
    }
}

fn shoe_code(err: &ShoeError) -> (pb::RefusalCode, &'static str) {
    use pb::RefusalCode as C;
    match err {
        ShoeError::Misread(_) | ShoeError::Empty { .. } => (C::Misread, "card"),
        ShoeError::Ended { .. } => (C::NoShoe, ""),
        ShoeError::BurnPending { .. } => (C::BurnPending, "card"),
        ShoeError::BurnNotInUse { .. } => (C::NotAllowed, "exposed_card"),
        ShoeError::AlreadyBurned { .. } | ShoeError::NoHandInProgress { .. } => (C::WrongPhase, ""),
        ShoeError::NothingToUndo { .. } | ShoeError::NotLastCard { .. } => {
            (C::NothingToUndo, "card")
        }
    }
}

/// The code of one refused position of a bet request.
pub(crate) fn position_code(refusal: &PositionRefusal) -> pb::RefusalCode {
    use pb::RefusalCode as C;
    match refusal {
        PositionRefusal::UnderMinimum { .. } => C::BelowMinimum,
        PositionRefusal::OverMaximum { .. } | PositionRefusal::ProgressionCap { .. } => {
            C::AboveMaximum
        }
        PositionRefusal::OverSelfLimit { .. } => C::SelfLimit,
        PositionRefusal::NonPositive { .. } | PositionRefusal::TieWithoutMainBet => C::NotAllowed,
    }
}

/// The position a refused position names (a Tie without a main bet names Tie).
pub(crate) fn position_kind(refusal: &PositionRefusal) -> BetKind {
    match refusal {
        PositionRefusal::NonPositive { kind, .. }
        | PositionRefusal::UnderMinimum { kind, .. }
        | PositionRefusal::OverMaximum { kind, .. }
        | PositionRefusal::OverSelfLimit { kind, .. }
        | PositionRefusal::ProgressionCap { kind, .. } => *kind,
        PositionRefusal::TieWithoutMainBet => BetKind::Tie,
    }
}

// ----- croupier requests → commands ---------------------------------------------------

/// A required free-text field (a reason): not empty, not only spaces.
pub(crate) fn reason(field: &str, text: &str) -> Result<String, ConversionError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ConversionError::missing(field));
    }
    if trimmed.chars().count() > MAX_REASON_CHARS {
        return Err(ConversionError::invalid(
            field,
            format!("{} characters", trimmed.chars().count()),
            format!("at most {MAX_REASON_CHARS} characters"),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(ConversionError::invalid(
            field,
            format!("{trimmed:?}"),
            "control characters are not allowed",
        ));
    }
    Ok(trimmed.to_owned())
}

/// Longest reason kept (it goes into the journal and the archive).
pub(crate) const MAX_REASON_CHARS: usize = 500;

/// Longest `command_id` or idempotency key, in bytes.
pub(crate) const MAX_KEY_LEN: usize = 128;

/// A client-chosen id (`command_id`, `idempotency_key`): 1 to 128 visible ASCII characters.
pub(crate) fn key(field: &str, text: &str) -> Result<String, ConversionError> {
    if text.is_empty() {
        return Err(ConversionError::missing(field));
    }
    if text.len() > MAX_KEY_LEN || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConversionError::invalid(
            field,
            format!("{:?}", text.chars().take(40).collect::<String>()),
            format!("1 to {MAX_KEY_LEN} visible ASCII characters without spaces"),
        ));
    }
    Ok(text.to_owned())
}

/// The table's configured shoe unless the request names one.
pub(crate) fn open_shoe(
    request: &pb::OpenShoeRequest,
    default: ShoeConfig,
    by: &str,
) -> Result<Command, ConversionError> {
    let config = match request.config {
        Some(config) => ShoeConfig::try_from(config).map_err(|e| e.within("config"))?,
        None => default,
    };
    Ok(Command::OpenShoe {
        config,
        by: by.to_owned(),
        now_ms: 0,
        commitment: None,
    })
}

pub(crate) fn burn(request: &pb::BurnRequest, by: &str) -> Result<Command, ConversionError> {
    // The source is checked even though the burn does not keep it: a client sending an
    // unspecified one has a bug worth seeing.
    card_source("source", request.source)?;
    Ok(Command::Burn {
        exposed: card("exposed_card", &request.exposed_card)?,
        by: by.to_owned(),
        now_ms: 0,
    })
}

pub(crate) fn deal_card(request: &pb::DealCardRequest) -> Result<Command, ConversionError> {
    Ok(Command::DealCard {
        card: card("card", &request.card)?,
        source: card_source("source", request.source)?,
        now_ms: 0,
    })
}

pub(crate) fn undo(
    request: &pb::UndoLastCardRequest,
    by: &str,
) -> Result<Command, ConversionError> {
    if !request.card.is_empty() {
        card("card", &request.card)?;
    }
    Ok(Command::UndoLastCard {
        reason: reason("reason", &request.reason)?,
        by: by.to_owned(),
        now_ms: 0,
    })
}

/// A round id a request names: required; whether it is the round in play is the table's
/// call.
pub(crate) fn round_id(field: &str, text: &str) -> Result<RoundId, ConversionError> {
    if text.is_empty() {
        return Err(ConversionError::missing(field));
    }
    Ok(RoundId::from(text))
}

pub(crate) fn confirm(
    request: &pb::ConfirmResultRequest,
    by: &str,
) -> Result<Command, ConversionError> {
    Ok(Command::ConfirmResult {
        round_id: round_id("round_id", &request.round_id)?,
        by: by.to_owned(),
        now_ms: 0,
    })
}

pub(crate) fn void(request: &pb::VoidRoundRequest, by: &str) -> Result<Command, ConversionError> {
    Ok(Command::VoidRound {
        round_id: round_id("round_id", &request.round_id)?,
        reason: reason("reason", &request.reason)?,
        by: by.to_owned(),
        now_ms: 0,
    })
}
