//! Table events as one readable line each (`watch`), or as one JSON object each
//! (`watch --json`), and the small pieces other commands print (results, ratios, bets).

use banco_wire::pb;
use banco_wire::pb::table_event::Event;

use banco_rules::Score;

use super::amount::{money, signed_money};
use super::bets::kind_name;
use crate::croupier::render_refusal;
use crate::times::Times;

/// `12:03:04  T01-S0002-H014  <what happened>`: the server's time of the event (UTC, the
/// table's clock, the same for every viewer; local with `--local-time`), then the round
/// (or the table between rounds).
pub(crate) fn event_line(event: &pb::TableEvent, times: &Times) -> String {
    let time = event
        .server_time
        .as_ref()
        .map_or_else(|| "--:--:--".to_owned(), |t| times.time_of_day(t));
    let place = if event.round_id.is_empty() {
        &event.table_id
    } else {
        &event.round_id
    };
    format!("{time}  {place}  {}", describe(event, times))
}

/// What the event says, without time and place.
pub(crate) fn describe(event: &pb::TableEvent, times: &Times) -> String {
    let Some(inner) = &event.event else {
        return format!(
            "(an event of a kind this client does not know, seq {})",
            event.seq
        );
    };
    match inner {
        Event::Snapshot(s) => snapshot(s),
        Event::BettingOpened(o) if o.duration_ms == 0 => {
            "betting open until the croupier closes it".to_owned()
        }
        Event::BettingOpened(o) => format!("betting open, closes in {}", seconds(o.duration_ms)),
        Event::LastBets(l) => format!("last bets! closes in {}", seconds(l.remaining_ms)),
        Event::BettingClosed(c) => {
            let mut line = "betting closed".to_owned();
            if !c.bet_totals.is_empty() {
                line.push_str(&format!("; stakes {}", totals(&c.bet_totals)));
            }
            line
        }
        Event::BetTotals(t) => format!("stakes {}", totals(&t.bet_totals)),
        Event::CardDealt(c) => {
            let (card, side) = c
                .card
                .as_ref()
                .map_or(("??", "?"), |d| (d.card.as_str(), side_name(d.side)));
            format!(
                "card {card} to {side} (Player {}, Banker {}){}",
                c.player_total,
                c.banker_total,
                next(c.due)
            )
        }
        Event::CardUndone(u) => format!(
            "card {} taken back from {} ({}): Player {}, Banker {}{}",
            u.card,
            side_name(u.side),
            u.reason,
            u.player_total,
            u.banker_total,
            next(u.due)
        ),
        Event::RoundResult(r) => match &r.result {
            Some(result) => format!("result {}", hand_result(result)),
            None => "result (missing)".to_owned(),
        },
        Event::RoadsUpdated(r) => {
            let mut line = format!("roads: {}", results_string(&r.last_results));
            if let Some(stats) = r.roads.as_ref().and_then(|r| r.stats.as_ref()) {
                line.push_str(&format!(
                    " (Banker {}, Player {}, Tie {}, hands {})",
                    stats.banker, stats.player, stats.tie, stats.hands
                ));
            }
            line
        }
        Event::RoundVoided(v) => {
            let mut line = format!("round voided: {}", v.reason);
            if v.refunded_minor > 0 {
                line.push_str(&format!(
                    "; your stakes returned: {}",
                    money(v.refunded_minor)
                ));
            }
            line
        }
        Event::ShoeEvent(s) => shoe_event(s),
        Event::ChatMessage(c) => {
            let who = if c.from_croupier {
                format!("{} (croupier)", c.sender)
            } else {
                c.sender.clone()
            };
            format!("chat <{who}> {}", c.text)
        }
        Event::SeatChanged(c) if c.player.is_empty() => format!("seat {} is free", c.seat),
        Event::SeatChanged(c) => format!("{} sits in seat {}", c.player, c.seat),
        Event::HandPassed(h) => format!("{} (seat {}) passes this hand", h.player, h.seat),
        Event::Muted(m) => match &m.until {
            Some(until) => format!(
                "you are muted in chat until {}{}",
                times.of(until),
                if m.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", m.reason)
                }
            ),
            None => "you may chat again".to_owned(),
        },
        Event::BetAccepted(a) => {
            let bets: Vec<String> = a.bets.iter().map(accepted_bet).collect();
            format!("bet accepted: {}", bets.join(", "))
        }
        Event::BetRefused(r) => {
            let bet = r.bet.as_ref().map_or_else(
                || "a bet".to_owned(),
                |b| format!("{} {}", kind_name(b.kind), money(b.stake_minor)),
            );
            let why = r
                .refusal
                .as_ref()
                .map_or_else(|| "no reason given".to_owned(), render_refusal);
            format!("bet refused: {bet}: {why}")
        }
        Event::Settled(s) => settled(s),
        Event::BalanceChanged(b) => {
            let available = b.balance.as_ref().map_or(0, |b| b.available_minor);
            format!(
                "balance {} ({}, {})",
                money(available),
                signed_money(b.delta_minor),
                b.reason
            )
        }
        Event::ResumeGap(g) => format!(
            "resume gap: the events after seq {} are no longer kept (oldest kept {}); a fresh snapshot follows",
            g.requested_seq, g.oldest_kept_seq
        ),
        Event::CutOff(c) => format!(
            "cut off by the server ({}); resuming from seq {}",
            c.reason, c.resume_from_seq
        ),
    }
}

fn snapshot(s: &pb::Snapshot) -> String {
    let mut parts = vec![format!("snapshot: {}", phase_name(s.phase))];
    if s.phase() == pb::TablePhase::BettingOpen && s.countdown_ms > 0 {
        parts[0].push_str(&format!(", closes in {}", seconds(s.countdown_ms)));
    }
    parts.push(format!(
        "shoe {}, {} cards left",
        shoe_state_name(s.shoe_state),
        s.cards_left
    ));
    if !s.cards.is_empty() {
        parts.push(format!("cards {}{}", dealt_cards(&s.cards), next(s.due)));
    }
    if let Some(result) = &s.result {
        parts.push(format!("result {}", hand_result(result)));
    }
    if !s.last_results.is_empty() {
        parts.push(format!("last results {}", results_string(&s.last_results)));
    }
    if !s.own_bets.is_empty() {
        let bets: Vec<String> = s
            .own_bets
            .iter()
            .map(|b| format!("{} {}", kind_name(b.kind), money(b.stake_minor)))
            .collect();
        parts.push(format!("your bets {}", bets.join(", ")));
    }
    if let Some(balance) = &s.balance {
        parts.push(format!("balance {}", balance_text(balance)));
    }
    parts.join("; ")
}

fn shoe_event(s: &pb::ShoeEvent) -> String {
    match s.kind() {
        pb::ShoeEventKind::NewShoe => {
            let decks = s
                .config
                .as_ref()
                .map_or_else(String::new, |c| format!(" ({} decks)", c.decks));
            let mut line = format!("new shoe {}{decks}", s.shoe_id);
            if !s.commitment.is_empty() {
                line.push_str(&format!("; shuffle committed to {}", s.commitment));
            }
            line
        }
        pb::ShoeEventKind::Burn => format!(
            "burn: {} exposed, {} burned face down, {} cards left",
            s.exposed_card, s.burned_face_down, s.cards_left
        ),
        pb::ShoeEventKind::CutCard => {
            "the cut card is out: one more hand after this one".to_owned()
        }
        pb::ShoeEventKind::LastHand => "last hand of the shoe".to_owned(),
        pb::ShoeEventKind::ShoeEnd => {
            let mut line = format!("shoe {} ended", s.shoe_id);
            if !s.reason.is_empty() {
                line.push_str(&format!(": {}", s.reason));
            }
            if !s.shuffle_key.is_empty() {
                line.push_str(&format!(
                    "; shuffle key {} (`banco audit fairness {}` checks it)",
                    s.shuffle_key, s.shoe_id
                ));
            }
            line
        }
        pb::ShoeEventKind::Unspecified => format!("shoe {}: an unknown shoe event", s.shoe_id),
    }
}

fn accepted_bet(b: &pb::AcceptedBet) -> String {
    let mut text = format!("{} {}", kind_name(b.kind), money(b.accepted_minor));
    if b.accepted_minor != b.requested_minor {
        text.push_str(&format!(
            " (asked {}, raised to the minimum)",
            money(b.requested_minor)
        ));
    }
    if b.position_total_minor != b.accepted_minor {
        text.push_str(&format!(", {} in all on it", money(b.position_total_minor)));
    }
    text
}

/// `you won 19.00 on banker, lost 5.00 on tie (staked 30.00, returned 44.00, net +14.00)`.
fn settled(s: &pb::Settled) -> String {
    let parts: Vec<String> = s
        .settlements
        .iter()
        .map(|x| {
            let kind = kind_name(x.kind);
            match x.outcome() {
                pb::BetOutcome::Win => format!("won {} on {kind}", money(x.winnings_minor)),
                pb::BetOutcome::Lose => format!("lost {} on {kind}", money(x.stake_minor)),
                pb::BetOutcome::Push => {
                    format!("push on {kind} ({} back)", money(x.returned_minor))
                }
                pb::BetOutcome::Unspecified => format!("{kind}: no outcome"),
            }
        })
        .collect();
    let net = s.total_returned_minor.saturating_sub(s.total_stake_minor);
    format!(
        "you {} (staked {}, returned {}, net {})",
        if parts.is_empty() {
            "had no bet".to_owned()
        } else {
            parts.join(", ")
        },
        money(s.total_stake_minor),
        money(s.total_returned_minor),
        signed_money(net)
    )
}

/// `Banker wins, Player 5 – Banker 8 (natural)`, `Tie, Player 6 – Banker 6`: the winner
/// named, then the score Player first as on every screen, with pairs when there are.
pub fn hand_result(r: &pb::HandResult) -> String {
    let score = Score {
        player: u8::try_from(r.player_total).unwrap_or(u8::MAX),
        banker: u8::try_from(r.banker_total).unwrap_or(u8::MAX),
    };
    let mut text = match r.winner() {
        pb::Winner::Banker => format!("Banker wins, {score}"),
        pb::Winner::Player => format!("Player wins, {score}"),
        pb::Winner::Tie => format!("Tie, {score}"),
        pb::Winner::Unspecified => format!("no winner recorded, {score}"),
    };
    let mut notes = Vec::new();
    if r.natural {
        notes.push("natural");
    }
    if r.player_pair {
        notes.push("player pair");
    }
    if r.banker_pair {
        notes.push("banker pair");
    }
    if r.player_perfect_pair || r.banker_perfect_pair {
        notes.push("perfect pair");
    }
    if !notes.is_empty() {
        text.push_str(&format!(" ({})", notes.join(", ")));
    }
    text
}

/// `B P B T B`, oldest first.
pub(crate) fn results_string(results: &[i32]) -> String {
    if results.is_empty() {
        return "none yet".to_owned();
    }
    results
        .iter()
        .map(|&w| match pb::Winner::try_from(w) {
            Ok(pb::Winner::Banker) => "B",
            Ok(pb::Winner::Player) => "P",
            Ok(pb::Winner::Tie) => "T",
            _ => "?",
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `banker 125.00 (3 bettors), player 50.00 (1 bettor)`.
fn totals(totals: &[pb::PositionTotal]) -> String {
    if totals.is_empty() {
        return "none".to_owned();
    }
    totals
        .iter()
        .map(|t| {
            format!(
                "{} {} ({} bettor{})",
                kind_name(t.kind),
                money(t.total_minor),
                t.bettors,
                if t.bettors == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `120.00`, `120.00 (25.00 in play)` or `120.00 (19.00 owed by the table)`.
pub(crate) fn balance_text(b: &pb::Balance) -> String {
    let mut text = money(b.available_minor);
    if !b.currency.is_empty() {
        text.push_str(&format!(" {}", b.currency));
    }
    if b.in_play_minor != 0 {
        text.push_str(&format!(" ({} in play)", money(b.in_play_minor)));
    }
    // Winnings the wallet has not yet acknowledged are the player's, on their way.
    if b.pending_minor != 0 {
        text.push_str(&format!(" ({} owed by the table)", money(b.pending_minor)));
    }
    text
}

/// A payout ratio as people read it: `1:1`, `0.95:1`, `8:1`, or `1/3:1` when it has no
/// short decimal form.
pub(crate) fn ratio(r: Option<&pb::Ratio>) -> String {
    let Some(r) = r else {
        return "-".to_owned();
    };
    let (n, d) = (u64::from(r.numerator), u64::from(r.denominator));
    if d == 0 {
        return format!("{n}/0 (invalid)");
    }
    if n % d == 0 {
        return format!("{}:1", n / d);
    }
    if (n * 10_000) % d == 0 {
        let scaled = n * 10_000 / d;
        let text = format!("{}.{:04}", scaled / 10_000, scaled % 10_000);
        return format!("{}:1", text.trim_end_matches('0'));
    }
    format!("{n}/{d}:1")
}

/// `5 s`, `0.5 s`.
fn seconds(ms: u32) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", f64::from(ms) / 1000.0)
    }
}

fn side_name(raw: i32) -> &'static str {
    match pb::Side::try_from(raw) {
        Ok(pb::Side::Player) => "Player",
        Ok(pb::Side::Banker) => "Banker",
        _ => "?",
    }
}

/// `P:QC B:8D P:4C B:TH`: cards in dealing order with the hand each went to.
pub(crate) fn dealt_cards(cards: &[pb::DealtCard]) -> String {
    cards
        .iter()
        .map(|c| format!("{}:{}", side_letter(c.side), c.card))
        .collect::<Vec<_>>()
        .join(" ")
}

fn side_letter(raw: i32) -> &'static str {
    match pb::Side::try_from(raw) {
        Ok(pb::Side::Player) => "P",
        Ok(pb::Side::Banker) => "B",
        _ => "?",
    }
}

/// `; next: Banker`, or nothing once no card is due any more (a settled or voided round
/// says no `due`, and there is nothing true to say about the next card).
fn next(raw: i32) -> &'static str {
    match pb::Due::try_from(raw) {
        Ok(pb::Due::PlayerCard) => "; next: Player",
        Ok(pb::Due::BankerCard) => "; next: Banker",
        Ok(pb::Due::Complete) => "; next: nothing, the hand is complete",
        _ => "",
    }
}

pub(crate) fn phase_name(raw: i32) -> &'static str {
    match pb::TablePhase::try_from(raw) {
        Ok(pb::TablePhase::Idle) => "idle",
        Ok(pb::TablePhase::BettingOpen) => "betting open",
        Ok(pb::TablePhase::BettingClosed) => "betting closed",
        Ok(pb::TablePhase::Dealing) => "dealing",
        Ok(pb::TablePhase::Result) => "result",
        Ok(pb::TablePhase::Settled) => "settled",
        Ok(pb::TablePhase::Voided) => "voided",
        _ => "unknown phase",
    }
}

pub(crate) fn shoe_state_name(raw: i32) -> &'static str {
    match pb::ShoeState::try_from(raw) {
        Ok(pb::ShoeState::NoShoe) => "none",
        Ok(pb::ShoeState::AwaitingBurn) => "awaiting the burn",
        Ok(pb::ShoeState::InPlay) => "in play",
        Ok(pb::ShoeState::CutCardOut) => "cut card out",
        Ok(pb::ShoeState::LastHand) => "on its last hand",
        Ok(pb::ShoeState::Ended) => "ended",
        _ => "unknown",
    }
}

/// The JSON form of an event for `watch --json`: stable keys for scripts, the readable
/// line in `text`, and the few numbers scripts want without parsing it.
pub(crate) fn event_json(event: &pb::TableEvent, times: &Times) -> serde_json::Value {
    use serde_json::json;
    let kind = match &event.event {
        None => "unknown",
        Some(e) => event_kind(e),
    };
    let mut value = json!({
        "seq": event.seq,
        "server_time_ms": event.server_time.as_ref().map(|t| {
            t.seconds.saturating_mul(1000).saturating_add(i64::from(t.nanos / 1_000_000))
        }),
        "table": event.table_id,
        "round": event.round_id,
        "event": kind,
        "text": describe(event, times),
    });
    let detail = match &event.event {
        Some(Event::Snapshot(s)) => json!({
            "phase": phase_name(s.phase),
            "countdown_ms": s.countdown_ms,
            "balance_minor": s.balance.as_ref().map(|b| b.available_minor),
        }),
        Some(Event::CardDealt(c)) => json!({
            "card": c.card.as_ref().map(|d| d.card.clone()),
            "side": c.card.as_ref().map(|d| side_name(d.side)),
            "player_total": c.player_total,
            "banker_total": c.banker_total,
        }),
        Some(Event::RoundResult(r)) => json!({
            "winner": r.result.as_ref().map(|r| r.winner().as_str_name()),
            "player_total": r.result.as_ref().map(|r| r.player_total),
            "banker_total": r.result.as_ref().map(|r| r.banker_total),
        }),
        Some(Event::Settled(s)) => json!({
            "total_stake_minor": s.total_stake_minor,
            "total_returned_minor": s.total_returned_minor,
        }),
        Some(Event::BalanceChanged(b)) => json!({
            "available_minor": b.balance.as_ref().map(|b| b.available_minor),
            "pending_minor": b.balance.as_ref().map(|b| b.pending_minor),
            "delta_minor": b.delta_minor,
            "reason": b.reason,
        }),
        Some(Event::ChatMessage(c)) => json!({"sender": c.sender, "text": c.text}),
        Some(Event::CutOff(c)) => json!({"resume_from_seq": c.resume_from_seq}),
        Some(Event::ResumeGap(g)) => json!({
            "requested_seq": g.requested_seq,
            "oldest_kept_seq": g.oldest_kept_seq,
        }),
        _ => serde_json::Value::Null,
    };
    if let (Some(object), false) = (value.as_object_mut(), detail.is_null()) {
        object.insert("detail".to_owned(), detail);
    }
    value
}

/// The snake_case name of an event's kind, as in the proto's oneof.
pub(crate) const fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::Snapshot(_) => "snapshot",
        Event::BettingOpened(_) => "betting_opened",
        Event::LastBets(_) => "last_bets",
        Event::BettingClosed(_) => "betting_closed",
        Event::BetTotals(_) => "bet_totals",
        Event::CardDealt(_) => "card_dealt",
        Event::CardUndone(_) => "card_undone",
        Event::RoundResult(_) => "round_result",
        Event::RoadsUpdated(_) => "roads_updated",
        Event::RoundVoided(_) => "round_voided",
        Event::ShoeEvent(_) => "shoe_event",
        Event::ChatMessage(_) => "chat_message",
        Event::SeatChanged(_) => "seat_changed",
        Event::HandPassed(_) => "hand_passed",
        Event::Muted(_) => "muted",
        Event::BetAccepted(_) => "bet_accepted",
        Event::BetRefused(_) => "bet_refused",
        Event::Settled(_) => "settled",
        Event::BalanceChanged(_) => "balance_changed",
        Event::ResumeGap(_) => "resume_gap",
        Event::CutOff(_) => "cut_off",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(event: Event) -> pb::TableEvent {
        pb::TableEvent {
            seq: 42,
            server_time: Some(banco_wire::Timestamp {
                seconds: 1_760_000_000 - 1_760_000_000 % 86_400 + 12 * 3600 + 3 * 60 + 4,
                nanos: 0,
            }),
            table_id: "T01".to_owned(),
            round_id: "T01-S0002-H014".to_owned(),
            event: Some(event),
        }
    }

    fn line(event: Event) -> String {
        event_line(&at(event), &Times::utc())
    }

    fn describe(event: &pb::TableEvent) -> String {
        super::describe(event, &Times::utc())
    }

    fn total(kind: pb::BetKind, minor: i64, bettors: u32) -> pb::PositionTotal {
        pb::PositionTotal {
            kind: kind.into(),
            total_minor: minor,
            bettors,
        }
    }

    fn card(card: &str, side: pb::Side) -> pb::DealtCard {
        pb::DealtCard {
            card: card.to_owned(),
            side: side.into(),
            ..pb::DealtCard::default()
        }
    }

    fn result() -> pb::HandResult {
        pb::HandResult {
            player_total: 5,
            banker_total: 8,
            winner: pb::Winner::Banker.into(),
            natural: true,
            ..pb::HandResult::default()
        }
    }

    #[test]
    fn every_event_kind_has_a_line() {
        let cases: Vec<(Event, &str)> = vec![
            (
                Event::BettingOpened(pb::BettingOpened {
                    closes_at: None,
                    duration_ms: 20_000,
                }),
                "12:03:04  T01-S0002-H014  betting open, closes in 20 s",
            ),
            (
                Event::BettingOpened(pb::BettingOpened::default()),
                "12:03:04  T01-S0002-H014  betting open until the croupier closes it",
            ),
            (
                Event::LastBets(pb::LastBets {
                    closes_at: None,
                    remaining_ms: 4_500,
                }),
                "12:03:04  T01-S0002-H014  last bets! closes in 4.5 s",
            ),
            (
                Event::BettingClosed(pb::BettingClosed {
                    bet_totals: vec![
                        total(pb::BetKind::Banker, 12_500, 3),
                        total(pb::BetKind::Player, 5_000, 1),
                    ],
                }),
                "12:03:04  T01-S0002-H014  betting closed; stakes banker 125.00 (3 bettors), player 50.00 (1 bettor)",
            ),
            (
                Event::BetTotals(pb::BetTotals {
                    bet_totals: vec![total(pb::BetKind::Tie, 500, 2)],
                }),
                "12:03:04  T01-S0002-H014  stakes tie 5.00 (2 bettors)",
            ),
            (
                Event::CardDealt(pb::CardDealt {
                    card: Some(card("7H", pb::Side::Player)),
                    due: pb::Due::BankerCard.into(),
                    player_total: 7,
                    banker_total: 0,
                    cards_left: 400,
                }),
                "12:03:04  T01-S0002-H014  card 7H to Player (Player 7, Banker 0); next: Banker",
            ),
            (
                Event::CardUndone(pb::CardUndone {
                    card: "7H".to_owned(),
                    side: pb::Side::Player.into(),
                    reason: "misscan".to_owned(),
                    due: pb::Due::PlayerCard.into(),
                    player_total: 0,
                    banker_total: 0,
                }),
                "12:03:04  T01-S0002-H014  card 7H taken back from Player (misscan): Player 0, Banker 0; next: Player",
            ),
            (
                Event::RoundResult(pb::RoundResult {
                    result: Some(result()),
                }),
                "12:03:04  T01-S0002-H014  result Banker wins, Player 5 – Banker 8 (natural)",
            ),
            (
                Event::RoadsUpdated(pb::RoadsUpdated {
                    roads: Some(pb::Roads {
                        stats: Some(pb::RoadStats {
                            banker: 2,
                            player: 1,
                            tie: 1,
                            hands: 4,
                            ..pb::RoadStats::default()
                        }),
                        ..pb::Roads::default()
                    }),
                    last_results: vec![
                        pb::Winner::Banker.into(),
                        pb::Winner::Player.into(),
                        pb::Winner::Tie.into(),
                        pb::Winner::Banker.into(),
                    ],
                }),
                "12:03:04  T01-S0002-H014  roads: B P T B (Banker 2, Player 1, Tie 1, hands 4)",
            ),
            (
                Event::RoundVoided(pb::RoundVoided {
                    reason: "scanner fault".to_owned(),
                    refunds: vec![],
                    refunded_minor: 2_500,
                }),
                "12:03:04  T01-S0002-H014  round voided: scanner fault; your stakes returned: 25.00",
            ),
            (
                Event::ShoeEvent(pb::ShoeEvent {
                    kind: pb::ShoeEventKind::Burn.into(),
                    shoe_id: "T01-S0002".to_owned(),
                    exposed_card: "7H".to_owned(),
                    burned_face_down: 7,
                    cards_left: 408,
                    ..pb::ShoeEvent::default()
                }),
                "12:03:04  T01-S0002-H014  burn: 7H exposed, 7 burned face down, 408 cards left",
            ),
            (
                Event::ShoeEvent(pb::ShoeEvent {
                    kind: pb::ShoeEventKind::NewShoe.into(),
                    shoe_id: "T01-S0002".to_owned(),
                    config: Some(pb::ShoeConfig {
                        decks: 8,
                        ..pb::ShoeConfig::default()
                    }),
                    ..pb::ShoeEvent::default()
                }),
                "12:03:04  T01-S0002-H014  new shoe T01-S0002 (8 decks)",
            ),
            (
                Event::ShoeEvent(pb::ShoeEvent {
                    kind: pb::ShoeEventKind::ShoeEnd.into(),
                    shoe_id: "T01-S0002".to_owned(),
                    reason: "damaged card".to_owned(),
                    ..pb::ShoeEvent::default()
                }),
                "12:03:04  T01-S0002-H014  shoe T01-S0002 ended: damaged card",
            ),
            (
                Event::ShoeEvent(pb::ShoeEvent {
                    kind: pb::ShoeEventKind::NewShoe.into(),
                    shoe_id: "T01-S0003".to_owned(),
                    commitment: "ab".repeat(32),
                    ..pb::ShoeEvent::default()
                }),
                "12:03:04  T01-S0002-H014  new shoe T01-S0003; shuffle committed to abababababababababababababababababababababababababababababababab",
            ),
            (
                Event::ShoeEvent(pb::ShoeEvent {
                    kind: pb::ShoeEventKind::ShoeEnd.into(),
                    shoe_id: "T01-S0003".to_owned(),
                    shuffle_key: "cd".repeat(32),
                    ..pb::ShoeEvent::default()
                }),
                "12:03:04  T01-S0002-H014  shoe T01-S0003 ended; shuffle key cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd (`banco audit fairness T01-S0003` checks it)",
            ),
            (
                Event::ChatMessage(pb::ChatMessage {
                    sender: "alice".to_owned(),
                    from_croupier: false,
                    text: "hello".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  chat <alice> hello",
            ),
            (
                Event::ChatMessage(pb::ChatMessage {
                    sender: "ada".to_owned(),
                    from_croupier: true,
                    text: "good luck".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  chat <ada (croupier)> good luck",
            ),
            (
                Event::SeatChanged(pb::SeatChanged {
                    seat: 3,
                    player: "alice".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  alice sits in seat 3",
            ),
            (
                Event::SeatChanged(pb::SeatChanged {
                    seat: 3,
                    player: String::new(),
                }),
                "12:03:04  T01-S0002-H014  seat 3 is free",
            ),
            (
                Event::HandPassed(pb::HandPassed {
                    seat: 2,
                    player: "bob".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  bob (seat 2) passes this hand",
            ),
            (
                Event::Muted(pb::Muted {
                    until: Some(banco_wire::Timestamp {
                        seconds: 1_796_153_250,
                        nanos: 323_000_000,
                    }),
                    reason: "spam".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  you are muted in chat until 2026-12-01T19:27:30.323Z: spam",
            ),
            (
                Event::Muted(pb::Muted {
                    until: None,
                    reason: String::new(),
                }),
                "12:03:04  T01-S0002-H014  you may chat again",
            ),
            (
                Event::BetAccepted(pb::BetAccepted {
                    idempotency_key: "k".to_owned(),
                    bets: vec![
                        pb::AcceptedBet {
                            kind: pb::BetKind::Banker.into(),
                            requested_minor: 2_500,
                            accepted_minor: 2_500,
                            position_total_minor: 2_500,
                        },
                        pb::AcceptedBet {
                            kind: pb::BetKind::Tie.into(),
                            requested_minor: 200,
                            accepted_minor: 500,
                            position_total_minor: 500,
                        },
                    ],
                }),
                "12:03:04  T01-S0002-H014  bet accepted: banker 25.00, tie 5.00 (asked 2.00, raised to the minimum)",
            ),
            (
                Event::BetRefused(pb::BetRefused {
                    idempotency_key: "k".to_owned(),
                    bet: Some(pb::Bet {
                        kind: pb::BetKind::Player.into(),
                        stake_minor: 500_000,
                    }),
                    refusal: Some(pb::Refusal {
                        code: pb::RefusalCode::AboveMaximum.into(),
                        message: "over 102.00".to_owned(),
                        field: "bets[0].stake_minor".to_owned(),
                    }),
                }),
                "12:03:04  T01-S0002-H014  bet refused: player 5000.00: REFUSED: AboveMaximum: over 102.00 (field bets[0].stake_minor)",
            ),
            (
                Event::Settled(pb::Settled {
                    settlements: [
                        super::super::banker_won_tie_lost(),
                        vec![pb::Settlement {
                            kind: pb::BetKind::Player.into(),
                            stake_minor: 500,
                            outcome: pb::BetOutcome::Push.into(),
                            returned_minor: 500,
                            ..pb::Settlement::default()
                        }],
                    ]
                    .concat(),
                    total_stake_minor: 3_000,
                    total_returned_minor: 4_400,
                }),
                "12:03:04  T01-S0002-H014  you won 19.00 on banker, lost 5.00 on tie, push on player (5.00 back) (staked 30.00, returned 44.00, net +14.00)",
            ),
            (
                Event::BalanceChanged(pb::BalanceChanged {
                    balance: Some(pb::Balance {
                        available_minor: 12_000,
                        in_play_minor: 0,
                        currency: "EUR".to_owned(),
                        pending_minor: 0,
                    }),
                    delta_minor: 1_900,
                    reason: "settlement".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  balance 120.00 (+19.00, settlement)",
            ),
            (
                Event::ResumeGap(pb::ResumeGap {
                    requested_seq: 6,
                    oldest_kept_seq: 500,
                }),
                "12:03:04  T01-S0002-H014  resume gap: the events after seq 6 are no longer kept (oldest kept 500); a fresh snapshot follows",
            ),
            (
                Event::CutOff(pb::CutOff {
                    resume_from_seq: 41,
                    reason: "too far behind".to_owned(),
                }),
                "12:03:04  T01-S0002-H014  cut off by the server (too far behind); resuming from seq 41",
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(line(event), expected);
        }
    }

    #[test]
    fn snapshots_sum_up_the_table() {
        let snapshot = pb::Snapshot {
            phase: pb::TablePhase::Dealing.into(),
            shoe_state: pb::ShoeState::InPlay.into(),
            cards: vec![card("7H", pb::Side::Player), card("2C", pb::Side::Banker)],
            due: pb::Due::PlayerCard.into(),
            last_results: vec![pb::Winner::Banker.into(), pb::Winner::Player.into()],
            own_bets: vec![pb::Bet {
                kind: pb::BetKind::Banker.into(),
                stake_minor: 2_500,
            }],
            balance: Some(pb::Balance {
                available_minor: 9_500,
                in_play_minor: 2_500,
                currency: "EUR".to_owned(),
                pending_minor: 0,
            }),
            cards_left: 312,
            ..pb::Snapshot::default()
        };
        assert_eq!(
            describe(&at(Event::Snapshot(snapshot))),
            "snapshot: dealing; shoe in play, 312 cards left; cards P:7H B:2C; next: Player; \
             last results B P; your bets banker 25.00; balance 95.00 EUR (25.00 in play)"
        );
        let open = pb::Snapshot {
            phase: pb::TablePhase::BettingOpen.into(),
            countdown_ms: 12_000,
            shoe_state: pb::ShoeState::InPlay.into(),
            ..pb::Snapshot::default()
        };
        assert_eq!(
            describe(&at(Event::Snapshot(open))),
            "snapshot: betting open, closes in 12 s; shoe in play, 0 cards left"
        );
        // Once the round is settled no card is due, and no `next: ?` says otherwise.
        let settled = pb::Snapshot {
            phase: pb::TablePhase::Settled.into(),
            shoe_state: pb::ShoeState::InPlay.into(),
            cards: vec![card("7H", pb::Side::Player), card("2C", pb::Side::Banker)],
            ..pb::Snapshot::default()
        };
        assert_eq!(
            describe(&at(Event::Snapshot(settled))),
            "snapshot: settled; shoe in play, 0 cards left; cards P:7H B:2C"
        );
        let dealt = at(Event::CardDealt(pb::CardDealt {
            card: Some(card("2C", pb::Side::Banker)),
            player_total: 7,
            banker_total: 2,
            ..pb::CardDealt::default()
        }));
        assert!(!describe(&dealt).contains('?'), "{}", describe(&dealt));
    }

    #[test]
    fn events_between_rounds_and_without_time() {
        let mut event = at(Event::ChatMessage(pb::ChatMessage {
            sender: "bob".to_owned(),
            from_croupier: false,
            text: "hi".to_owned(),
        }));
        event.round_id.clear();
        event.server_time = None;
        assert_eq!(
            event_line(&event, &Times::utc()),
            "--:--:--  T01  chat <bob> hi"
        );
        event.event = None;
        assert!(describe(&event).contains("does not know"));
    }

    #[test]
    fn results_and_ratios() {
        let tie = pb::HandResult {
            player_total: 6,
            banker_total: 6,
            winner: pb::Winner::Tie.into(),
            player_pair: true,
            ..pb::HandResult::default()
        };
        assert_eq!(hand_result(&tie), "Tie, Player 6 – Banker 6 (player pair)");
        let player = pb::HandResult {
            player_total: 9,
            banker_total: 3,
            winner: pb::Winner::Player.into(),
            ..pb::HandResult::default()
        };
        assert_eq!(hand_result(&player), "Player wins, Player 9 – Banker 3");
        let r = |n, d| pb::Ratio {
            numerator: n,
            denominator: d,
        };
        assert_eq!(ratio(Some(&r(1, 1))), "1:1");
        assert_eq!(ratio(Some(&r(19, 20))), "0.95:1");
        assert_eq!(ratio(Some(&r(1, 2))), "0.5:1");
        assert_eq!(ratio(Some(&r(1, 3))), "1/3:1");
        assert_eq!(ratio(Some(&r(1, 0))), "1/0 (invalid)");
        assert_eq!(ratio(None), "-");
        assert_eq!(results_string(&[]), "none yet");
        assert_eq!(results_string(&[9]), "?");
    }

    #[test]
    fn json_lines_carry_seq_kind_and_text() {
        let event = at(Event::CardDealt(pb::CardDealt {
            card: Some(card("7H", pb::Side::Player)),
            due: pb::Due::BankerCard.into(),
            player_total: 7,
            banker_total: 0,
            cards_left: 400,
        }));
        let json = event_json(&event, &Times::utc());
        assert_eq!(json["seq"], 42);
        assert_eq!(json["event"], "card_dealt");
        assert_eq!(json["round"], "T01-S0002-H014");
        assert_eq!(json["detail"]["card"], "7H");
        assert_eq!(json["detail"]["side"], "Player");
        assert_eq!(json["text"], describe(&event));
        let text = json.to_string();
        assert!(!text.contains('\n'));
        let chat = event_json(&at(Event::LastBets(pb::LastBets::default())), &Times::utc());
        assert!(chat.get("detail").is_none());
    }
}
