//! Every key and every scanner input, through `update`: what is queued and sent, what is
//! refused (with its reason and a bell, nothing sent), and how pending commands survive a
//! lost link without being lost or sent twice.
#![allow(clippy::unwrap_used)]

mod common;

use banco_rules::Card;
use banco_wire::pb;
use common::*;
use croupier_console::action::{Action, Effect};
use croupier_console::command::{Command, Source};
use croupier_console::model::{Connection, Mode, Model, Purpose};
use croupier_console::update::update;
use ratatui::crossterm::event::KeyCode;

use pb::ShoeState as S;
use pb::TablePhase as T;

fn card(text: &str) -> Card {
    Card::parse(text).unwrap()
}

fn deal(text: &str, source: Source) -> Command {
    Command::Deal {
        card: card(text),
        source,
    }
}

fn dealing() -> pb::TableState {
    let mut s = state(10, T::Dealing, S::InPlay);
    s.cards = dealt(&[("7H", pb::Side::Player)]);
    s.due = pb::Due::BankerCard.into();
    s
}

fn refusal_text(model: &Model) -> String {
    let notice = model.notice.clone().unwrap();
    assert!(notice.refusal, "{notice:?}");
    notice.text
}

#[test]
fn a_typed_card_goes_with_its_suit() {
    let mut model = online(dealing());
    assert!(keys(&mut model, "k").is_empty());
    assert_eq!(model.entry.text(), "K");
    let effects = keys(&mut model, "h");
    assert_eq!(sent(&effects), vec![deal("KH", Source::Keyboard)]);
    assert!(model.entry.is_empty());
}

#[test]
fn ten_typed_as_one_zero_or_t() {
    let mut model = online(dealing());
    assert_eq!(
        sent(&keys(&mut model, "10d")),
        vec![deal("TD", Source::Keyboard)]
    );
    ok(&mut model, dealing());
    assert_eq!(
        sent(&keys(&mut model, "Tc")),
        vec![deal("TC", Source::Keyboard)]
    );
}

#[test]
fn kh_then_enter_sends_once() {
    let mut model = online(dealing());
    let mut effects = keys(&mut model, "KH");
    effects.extend(key(&mut model, KeyCode::Enter));
    assert_eq!(sent(&effects), vec![deal("KH", Source::Keyboard)]);
    assert_eq!(model.pending.len(), 1);
}

#[test]
fn a_typo_is_corrected_before_it_is_sent() {
    let mut model = online(dealing());
    keys(&mut model, "K");
    key(&mut model, KeyCode::Backspace);
    assert!(model.entry.is_empty());
    keys(&mut model, "KQ");
    assert_eq!(model.entry.text(), "Q");
    assert_eq!(
        sent(&keys(&mut model, "s")),
        vec![deal("QS", Source::Keyboard)]
    );
    keys(&mut model, "9");
    assert!(key(&mut model, KeyCode::Esc).is_empty());
    assert!(model.entry.is_empty());
}

#[test]
fn enter_without_a_suit_is_refused() {
    let mut model = online(dealing());
    keys(&mut model, "9");
    let effects = key(&mut model, KeyCode::Enter);
    assert_eq!(effects, vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("needs its suit"));
    assert!(model.pending.is_empty());
}

#[test]
fn bad_keys_are_refused_with_a_bell_and_send_nothing() {
    for (typed, reason) in [
        ("h", "rank first"),
        ("0", "not a rank"),
        ("1s", "1 is not a rank"),
        ("z", "not a key of the console"),
        ("!", "not a key of the console"),
    ] {
        let mut model = online(dealing());
        let effects = keys(&mut model, typed);
        assert_eq!(effects, vec![Effect::Bell], "{typed}");
        assert!(
            refusal_text(&model).contains(reason),
            "{typed}: {:?}",
            model.notice
        );
        assert!(model.pending.is_empty(), "{typed}");
    }
    let mut model = online(dealing());
    assert_eq!(key(&mut model, KeyCode::F(5)), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("? lists them"));
}

#[test]
fn pacing_keys() {
    let cases: [(&str, pb::TableState, Command); 3] = [
        ("n", state(1, T::Idle, S::NoShoe), Command::OpenShoe),
        (
            "o",
            state(1, T::Idle, S::InPlay),
            Command::OpenBetting { duration_ms: 0 },
        ),
        (
            "x",
            state(1, T::BettingOpen, S::InPlay),
            Command::CloseBetting,
        ),
    ];
    for (typed, table, command) in cases {
        let mut model = online(table);
        assert_eq!(
            sent(&keys(&mut model, typed)),
            vec![command.clone()],
            "{typed}"
        );
        let mut model = online(model.table.clone().unwrap());
        assert_eq!(
            sent(&keys(&mut model, &typed.to_uppercase())),
            vec![command],
            "{typed} in capitals"
        );
    }
}

#[test]
fn open_betting_asks_for_the_configured_duration() {
    let mut model = Model::new("T01", "maria", 20_000, "c");
    update(
        &mut model,
        Action::Connected(Box::new(state(1, T::Idle, S::InPlay))),
    );
    assert_eq!(
        sent(&keys(&mut model, "o")),
        vec![Command::OpenBetting {
            duration_ms: 20_000
        }]
    );
}

#[test]
fn confirm_sends_the_round_shown() {
    let mut model = online(state(9, T::Result, S::InPlay));
    assert_eq!(
        sent(&keys(&mut model, "r")),
        vec![Command::Confirm {
            round_id: "T01-S0003-H017".into()
        }]
    );
    let mut model = online(state(9, T::Idle, S::InPlay));
    assert_eq!(keys(&mut model, "r"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("no result to confirm"));
}

#[test]
fn the_card_after_a_new_shoe_is_its_burn() {
    let mut model = online(state(1, T::Idle, S::NoShoe));
    assert_eq!(sent(&keys(&mut model, "n")), vec![Command::OpenShoe]);
    // Scanned while the new shoe is on its way: burn or deal is settled when each goes.
    assert!(scan(&mut model, "7H").is_empty());
    assert!(scan(&mut model, "2C").is_empty());
    let burn = ok(&mut model, state(2, T::Idle, S::AwaitingBurn));
    assert_eq!(
        sent(&burn),
        vec![Command::Burn {
            card: card("7H"),
            source: Source::Scanner
        }]
    );
    let mut betting_closed = state(3, T::BettingClosed, S::InPlay);
    betting_closed.due = pb::Due::PlayerCard.into();
    assert_eq!(
        sent(&ok(&mut model, betting_closed)),
        vec![deal("2C", Source::Scanner)]
    );

    // A burn the table refuses leaves the next card a burn too.
    let mut model = online(state(2, T::Idle, S::AwaitingBurn));
    assert_eq!(
        sent(&keys(&mut model, "as")),
        vec![Command::Burn {
            card: card("AS"),
            source: Source::Keyboard
        }]
    );
    scan(&mut model, "KD");
    let next = refused(&mut model, "AS cannot be burned: misread?");
    assert_eq!(
        sent(&next),
        vec![Command::Burn {
            card: card("KD"),
            source: Source::Scanner
        }]
    );
}

#[test]
fn undo_asks_why_and_names_the_card() {
    let mut model = online(dealing());
    assert!(keys(&mut model, "u").is_empty());
    assert!(matches!(model.mode, Mode::Reason { .. }));
    // Cards are not taken while a question is open: the letters are the reason.
    keys(&mut model, "misread");
    let effects = key(&mut model, KeyCode::Enter);
    assert_eq!(
        sent(&effects),
        vec![Command::Undo {
            reason: "misread".into(),
            card: card("7H")
        }]
    );
    assert_eq!(model.mode, Mode::Normal);
}

#[test]
fn undo_needs_a_reason_and_a_card() {
    let mut model = online(dealing());
    keys(&mut model, "u");
    assert_eq!(key(&mut model, KeyCode::Enter), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("reason is required"));
    assert!(matches!(model.mode, Mode::Reason { .. }));
    key(&mut model, KeyCode::Esc);
    assert_eq!(model.mode, Mode::Normal);
    assert!(model.pending.is_empty());

    let mut model = online(state(3, T::BettingClosed, S::InPlay));
    assert_eq!(keys(&mut model, "u"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("nothing to undo"));
}

#[test]
fn undo_takes_back_a_card_not_yet_sent() {
    let mut model = online(dealing());
    update(&mut model, Action::Disconnected("gone".into()));
    scan(&mut model, "KD");
    keys(&mut model, "u");
    assert!(model.pending.is_empty());
    assert_eq!(model.mode, Mode::Normal);
    assert!(model.notice.clone().unwrap().text.contains("K♦ taken back"));
}

#[test]
fn void_asks_why_then_asks_again() {
    let mut model = online(dealing());
    keys(&mut model, "v");
    keys(&mut model, "shoe jammed");
    assert!(key(&mut model, KeyCode::Enter).is_empty());
    assert!(matches!(model.mode, Mode::ConfirmVoid { .. }));
    // Anything but Y or N keeps the question.
    assert_eq!(keys(&mut model, "k"), vec![Effect::Bell]);
    assert!(matches!(model.mode, Mode::ConfirmVoid { .. }));
    assert_eq!(
        sent(&keys(&mut model, "y")),
        vec![Command::Void {
            round_id: "T01-S0003-H017".into(),
            reason: "shoe jammed".into()
        }]
    );

    let mut model = online(dealing());
    keys(&mut model, "v");
    keys(&mut model, "oops");
    key(&mut model, KeyCode::Enter);
    assert!(keys(&mut model, "n").is_empty());
    assert!(model.pending.is_empty());

    let mut model = online(state(3, T::Idle, S::InPlay));
    assert_eq!(keys(&mut model, "v"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("no round to void"));
}

#[test]
fn end_shoe_asks_why() {
    let mut model = online(state(3, T::Idle, S::InPlay));
    keys(&mut model, "e");
    keys(&mut model, "shift change");
    // Asked again, as a void is: Y ends it, N keeps it.
    assert!(key(&mut model, KeyCode::Enter).is_empty());
    assert!(matches!(model.mode, Mode::ConfirmEndShoe { .. }));
    assert_eq!(keys(&mut model, "k"), vec![Effect::Bell]);
    assert!(matches!(model.mode, Mode::ConfirmEndShoe { .. }));
    assert_eq!(
        sent(&keys(&mut model, "y")),
        vec![Command::EndShoe {
            reason: "shift change".into()
        }]
    );
    let mut model = online(state(3, T::Idle, S::InPlay));
    keys(&mut model, "eshift change");
    key(&mut model, KeyCode::Enter);
    assert!(keys(&mut model, "n").is_empty());
    assert!(model.pending.is_empty());
    assert!(model.notice.clone().unwrap().text.contains("kept"));
    let mut model = online(state(3, T::Idle, S::NoShoe));
    assert_eq!(keys(&mut model, "e"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("no shoe to end"));
}

#[test]
fn mute_asks_who_and_why() {
    let mut model = online(dealing());
    keys(&mut model, "m");
    keys(&mut model, "bob77 30");
    key(&mut model, KeyCode::Enter);
    keys(&mut model, "insults");
    assert_eq!(
        sent(&key(&mut model, KeyCode::Enter)),
        vec![Command::Mute {
            player: "bob77".into(),
            minutes: 30,
            reason: "insults".into()
        }]
    );
    // Default 15 minutes; 0 lifts without a reason.
    let mut model = online(dealing());
    keys(&mut model, "mbob77");
    key(&mut model, KeyCode::Enter);
    assert_eq!(
        model.mode,
        Mode::Reason {
            purpose: Purpose::Mute {
                player: "bob77".into(),
                minutes: 15
            },
            text: String::new()
        }
    );
    let mut model = online(dealing());
    keys(&mut model, "mbob77 0");
    assert_eq!(
        sent(&key(&mut model, KeyCode::Enter)),
        vec![Command::Mute {
            player: "bob77".into(),
            minutes: 0,
            reason: String::new()
        }]
    );
    for bad in ["", "bob77 ten", "bob77 99999", "a b c"] {
        let mut model = online(dealing());
        keys(&mut model, "m");
        keys(&mut model, bad);
        assert_eq!(
            key(&mut model, KeyCode::Enter),
            vec![Effect::Bell],
            "{bad:?}"
        );
        assert!(matches!(model.mode, Mode::MuteWho { .. }), "{bad:?}");
        assert!(model.pending.is_empty());
    }
}

#[test]
fn help_lists_the_keys_and_any_key_closes_it() {
    let mut model = online(dealing());
    keys(&mut model, "?");
    assert_eq!(model.mode, Mode::Help);
    // The key that closes the list does nothing else.
    assert!(keys(&mut model, "n").is_empty());
    assert_eq!(model.mode, Mode::Normal);
    assert!(model.pending.is_empty());
}

#[test]
fn quit_is_asked_while_a_round_is_open() {
    let mut model = online(state(3, T::Idle, S::InPlay));
    assert_eq!(ctrl(&mut model, 'q'), vec![Effect::Quit]);

    let mut model = online(dealing());
    assert!(ctrl(&mut model, 'q').is_empty());
    assert!(matches!(&model.mode, Mode::ConfirmQuit { why } if why.contains("DEALING")));
    assert!(keys(&mut model, "n").is_empty());
    assert_eq!(model.mode, Mode::Normal);
    ctrl(&mut model, 'c');
    assert_eq!(keys(&mut model, "y"), vec![Effect::Quit]);

    // Commands not answered yet also ask.
    let mut model = online(state(3, T::Idle, S::InPlay));
    update(&mut model, Action::Disconnected("gone".into()));
    keys(&mut model, "o");
    assert!(ctrl(&mut model, 'q').is_empty());
    assert!(matches!(&model.mode, Mode::ConfirmQuit { why } if why.contains("not answered")));
}

#[test]
fn every_scanner_notation_is_taken() {
    for (line, expect) in [
        ("KH", "KH"),
        ("kh", "KH"),
        ("10H", "TH"),
        ("TH\r\n", "TH"),
        ("  9s  \n", "9S"),
        ("K♦", "KD"),
        ("A♠", "AS"),
        ("0000", "AS"),
        ("0012", "KS"),
        ("0013", "AH"),
        ("0051", "KC"),
    ] {
        let mut model = online(dealing());
        let effects = scan(&mut model, line);
        assert_eq!(
            sent(&effects),
            vec![deal(expect, Source::Scanner)],
            "{line:?}"
        );
        assert!(model.notice.is_none(), "{line:?}");
    }
}

#[test]
fn garbage_lines_are_refused_with_the_reason_and_nothing_is_sent() {
    for (line, reason) in [
        ("ZZ", "`Z` is not a rank"),
        ("KX", "`X` is not a suit"),
        ("K", "needs a suit"),
        ("0052", "0000 to 0051"),
        ("11H", "`1` is not a rank"),
        ("KHH", "not a suit"),
        ("\u{1b}[2J", "not a rank"),
        ("\u{fffd}\u{fffd}", "not a rank"),
        ("AS 9H", "not a suit"),
    ] {
        let mut model = online(dealing());
        let effects = scan(&mut model, line);
        assert_eq!(effects, vec![Effect::Bell], "{line:?}");
        let text = refusal_text(&model);
        assert!(text.starts_with("SCANNER: "), "{text}");
        assert!(text.contains(reason), "{line:?}: {text}");
        assert!(text.contains("nothing sent"), "{text}");
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(model.pending.is_empty(), "{line:?}");
    }
    // A blank line between cards is no card and no error.
    let mut model = online(dealing());
    assert!(scan(&mut model, "\r\n").is_empty());
    assert!(model.notice.is_none());
}

#[test]
fn scanned_cards_are_taken_while_a_question_is_open() {
    let mut model = online(dealing());
    keys(&mut model, "?");
    assert_eq!(
        sent(&scan(&mut model, "QC")),
        vec![deal("QC", Source::Scanner)]
    );
    assert_eq!(model.mode, Mode::Help);
}

#[test]
fn commands_go_one_at_a_time_in_order() {
    let mut model = online(dealing());
    assert_eq!(
        sent(&scan(&mut model, "2C")),
        vec![deal("2C", Source::Scanner)]
    );
    // The next waits for the first one's answer.
    assert!(scan(&mut model, "3C").is_empty());
    assert_eq!(model.pending.len(), 2);
    let mut after = dealing();
    after.seq = 11;
    assert_eq!(
        sent(&ok(&mut model, after)),
        vec![deal("3C", Source::Scanner)]
    );
    assert_eq!(model.pending.len(), 1);
}

#[test]
fn a_refusal_is_shown_in_red_with_a_bell() {
    let mut model = online(dealing());
    scan(&mut model, "AS");
    let effects = refused(&mut model, "a ninth A♠ in an 8-deck shoe: misread?");
    assert_eq!(effects, vec![Effect::Bell]);
    assert_eq!(
        refusal_text(&model),
        "REFUSED AS: a ninth A♠ in an 8-deck shoe: misread?"
    );
    assert!(model.pending.is_empty());
}

#[test]
fn cards_held_while_the_link_is_down_are_sent_in_order_once_it_is_back() {
    let mut model = online(dealing());
    update(
        &mut model,
        Action::Disconnected("Unavailable: refused".into()),
    );
    assert!(scan(&mut model, "2C").is_empty());
    assert!(keys(&mut model, "3d").is_empty());
    let ids: Vec<String> = model.pending.iter().map(|p| p.id.clone()).collect();
    // Back: the screen is rebuilt from the snapshot, then the first card goes.
    let mut snapshot = dealing();
    snapshot.seq = 20;
    snapshot.croupier = "pit-boss".into();
    let effects = update(&mut model, Action::Connected(Box::new(snapshot)));
    assert_eq!(model.connection, Connection::Online);
    assert_eq!(model.table.as_ref().unwrap().croupier, "pit-boss");
    let first = match effects.as_slice() {
        [Effect::Send(p)] => p.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(first.id, ids[0]);
    assert_eq!(first.command, deal("2C", Source::Scanner));
    let mut after = dealing();
    after.seq = 21;
    let second = ok(&mut model, after);
    assert!(matches!(second.as_slice(), [Effect::Send(p)] if p.id == ids[1]));
}

#[test]
fn a_command_lost_with_the_link_is_resent_with_the_same_id() {
    let mut model = online(dealing());
    let Some(Effect::Send(first)) = scan(&mut model, "2C").into_iter().next() else {
        panic!("not sent");
    };
    update(&mut model, Action::Disconnected("reset".into()));
    // Its answer was lost with the link.
    let effects = update(&mut model, Action::Connected(Box::new(dealing())));
    assert_eq!(effects, vec![Effect::Send(first.clone())]);
    // The table answers both sends (the second as a replay); only one is counted.
    let mut after = dealing();
    after.seq = 11;
    ok(&mut model, after.clone());
    assert!(model.pending.is_empty());
    let late = update(
        &mut model,
        Action::Reply {
            id: first.id,
            reply: Box::new(pb::CommandReply {
                state: Some(after),
                replayed: true,
                ..Default::default()
            }),
        },
    );
    assert!(late.is_empty());
    assert!(model.notice.is_none());
}

#[test]
fn a_failed_send_is_retried_later_with_the_same_id() {
    let mut model = online(dealing());
    let Some(Effect::Send(first)) = scan(&mut model, "2C").into_iter().next() else {
        panic!("not sent");
    };
    update(&mut model, Action::Tick { now_ms: 100 });
    let effects = update(
        &mut model,
        Action::SendFailed {
            id: first.id.clone(),
            code: tonic::Code::Unavailable,
            message: "broken pipe".into(),
        },
    );
    assert!(effects.is_empty());
    assert!(update(&mut model, Action::Tick { now_ms: 600 }).is_empty());
    assert_eq!(
        update(&mut model, Action::Tick { now_ms: 1_100 }),
        vec![Effect::Send(first)]
    );
}

#[test]
fn a_command_the_server_cannot_take_is_dropped_with_the_reason() {
    let mut model = online(dealing());
    let Some(Effect::Send(first)) = scan(&mut model, "2C").into_iter().next() else {
        panic!("not sent");
    };
    let effects = update(
        &mut model,
        Action::SendFailed {
            id: first.id,
            code: tonic::Code::PermissionDenied,
            message: "role player may not call TableService".into(),
        },
    );
    assert_eq!(effects, vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("PermissionDenied"));
    assert!(model.pending.is_empty());
}

#[test]
fn an_older_state_never_replaces_a_newer_one() {
    let mut model = online(dealing());
    let mut old = dealing();
    old.seq = 5;
    old.phase = T::Idle.into();
    update(&mut model, Action::State(Box::new(old)));
    assert_eq!(model.phase(), T::Dealing);
}

#[test]
fn roads_follow_the_tables_results() {
    let mut s = state(3, T::Idle, S::InPlay);
    s.last_results = winners("BBPT");
    let model = online(s);
    let stats = model.roads.stats();
    assert_eq!((stats.banker, stats.player, stats.tie), (2, 1, 1));
}

#[test]
fn with_a_rank_typed_only_a_suit_or_a_correction_is_taken() {
    // K then X: X is the close key, but with K waiting for its suit it is no suit, and
    // nothing else happens (betting stays open).
    let mut model = online(state(4, T::BettingOpen, S::InPlay));
    keys(&mut model, "K");
    let effects = keys(&mut model, "X");
    assert_eq!(effects, vec![Effect::Bell]);
    let text = refusal_text(&model);
    assert!(text.contains("X is not a suit"), "{text}");
    assert!(text.contains("K needs its suit"), "{text}");
    assert!(model.pending.is_empty());
    assert_eq!(
        model.entry.text(),
        "K",
        "the rank stays, waiting for its suit"
    );
    // Every single-key command, in every case, is refused the same way while a rank waits.
    for c in "nNoOxXrRuUvVeEmM?zZ!".chars() {
        let mut model = online(dealing());
        keys(&mut model, "9");
        let effects = keys(&mut model, &c.to_string());
        assert_eq!(effects, vec![Effect::Bell], "{c}");
        assert!(refusal_text(&model).contains("is not a suit"), "{c}");
        assert!(model.pending.is_empty(), "{c}");
        assert_eq!(model.mode, Mode::Normal, "{c}: no question opened");
        assert_eq!(model.entry.text(), "9", "{c}");
    }
    // A suit still completes the card; another rank still corrects it.
    let mut model = online(dealing());
    keys(&mut model, "9q");
    assert_eq!(model.entry.text(), "Q");
    assert_eq!(
        sent(&keys(&mut model, "d")),
        vec![deal("QD", Source::Keyboard)]
    );
    // Ten typed as 1 then 0 waits for its suit the same way.
    let mut model = online(dealing());
    keys(&mut model, "10");
    assert_eq!(keys(&mut model, "x"), vec![Effect::Bell]);
    assert!(model.pending.is_empty());
    assert_eq!(model.entry.text(), "10");
}

#[test]
fn a_pacing_key_acts_only_on_the_table_it_applies_to() {
    for (typed, table, reason) in [
        ("x", dealing(), "betting is not open: the table is DEALING"),
        ("o", dealing(), "round T01-S0003-H017 is under way"),
        (
            "o",
            state(2, T::Idle, S::AwaitingBurn),
            "the burn card is due first",
        ),
        ("o", state(2, T::Idle, S::NoShoe), "no shoe is open"),
        ("n", state(2, T::Idle, S::InPlay), "T01-S0003 is in play"),
        ("r", dealing(), "no result to confirm: the table is DEALING"),
        ("e", dealing(), "cannot end the shoe while a round is open"),
    ] {
        let mut model = online(table);
        assert_eq!(keys(&mut model, typed), vec![Effect::Bell], "{typed}");
        let text = refusal_text(&model);
        assert!(text.contains(reason), "{typed}: {text}");
        assert!(model.pending.is_empty(), "{typed}");
        assert_eq!(model.mode, Mode::Normal, "{typed}");
    }
    // Before the table's first state there is nothing to act on.
    let mut model = Model::new("T01", "maria", 0, "c");
    assert_eq!(keys(&mut model, "x"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("not connected to the table yet"));
    // R confirms only what is shown: not while a command that changes it is on its way.
    let mut model = online(state(9, T::Result, S::InPlay));
    update(&mut model, Action::Disconnected("gone".into()));
    scan(&mut model, "7S");
    assert_eq!(keys(&mut model, "r"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("wait: 7S is not answered yet"));
    assert_eq!(model.pending.len(), 1);
}

/// The hand of `dealing()` with one more card: the reader went on dealing.
fn dealt_on(seq: u64, cards: &[(&str, pb::Side)]) -> pb::TableState {
    let mut s = dealing();
    s.seq = seq;
    s.cards = dealt(cards);
    s
}

#[test]
fn an_undo_question_is_withdrawn_when_the_reader_deals_on() {
    // Asked for Q♥; the reader deals 7♠ before the reason is in: withdrawn, with a
    // message naming both, and Enter then sends nothing.
    let mut model = online(dealt_on(10, &[("QH", pb::Side::Player)]));
    keys(&mut model, "u");
    assert!(matches!(
        &model.mode,
        Mode::Reason { purpose: Purpose::Undo { card: c, .. }, .. } if *c == card("QH")
    ));
    keys(&mut model, "misre");
    let next = dealt_on(11, &[("QH", pb::Side::Player), ("7S", pb::Side::Banker)]);
    let effects = update(&mut model, Action::State(Box::new(next)));
    assert_eq!(effects, vec![Effect::Bell]);
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(
        refusal_text(&model),
        "undo of Q♥ withdrawn: the last card is now 7♠ (U takes it back)"
    );
    assert!(keys(&mut model, "ad").iter().all(|e| !matches!(
        e,
        Effect::Send(p) if matches!(p.command, Command::Undo { .. })
    )));
    assert!(
        model
            .pending
            .iter()
            .all(|p| !matches!(p.command, Command::Undo { .. }))
    );

    // A card scanned while the question is open goes to the table first: withdrawn too.
    let mut model = online(dealt_on(10, &[("QH", pb::Side::Player)]));
    keys(&mut model, "u");
    assert_eq!(
        sent(&scan(&mut model, "7S")),
        vec![deal("7S", Source::Scanner)]
    );
    assert_eq!(model.mode, Mode::Normal);
    assert!(refusal_text(&model).contains("7♠ is on its way to the table after it"));

    // U while a card is on its way is refused: the last card is about to change.
    let mut model = online(dealt_on(10, &[("QH", pb::Side::Player)]));
    scan(&mut model, "7S");
    assert_eq!(keys(&mut model, "u"), vec![Effect::Bell]);
    assert!(refusal_text(&model).contains("wait: 7♠ is on its way"));
    assert_eq!(model.mode, Mode::Normal);

    // A state that does not change the hand (a bet, a chat line) keeps the question.
    let mut model = online(dealt_on(10, &[("QH", pb::Side::Player)]));
    keys(&mut model, "u");
    let mut chatty = dealt_on(12, &[("QH", pb::Side::Player)]);
    chatty.chat = chat();
    assert!(update(&mut model, Action::State(Box::new(chatty))).is_empty());
    keys(&mut model, "misread");
    assert_eq!(
        sent(&key(&mut model, KeyCode::Enter)),
        vec![Command::Undo {
            reason: "misread".into(),
            card: card("QH")
        }]
    );
}

#[test]
fn a_void_question_follows_the_round_and_is_withdrawn_once_it_is_over() {
    let mut model = online(dealing());
    keys(&mut model, "v");
    keys(&mut model, "shoe jammed");
    key(&mut model, KeyCode::Enter);
    assert!(matches!(model.mode, Mode::ConfirmVoid { .. }));
    // More cards: the same round, still open; the question stays (it shows the hand).
    let more = dealt_on(11, &[("7H", pb::Side::Player), ("2C", pb::Side::Banker)]);
    assert!(update(&mut model, Action::State(Box::new(more))).is_empty());
    assert!(matches!(model.mode, Mode::ConfirmVoid { .. }));
    // Confirmed at another console: there is no round to void any more.
    let mut settled = dealing();
    settled.seq = 12;
    settled.phase = T::Settled.into();
    assert_eq!(
        update(&mut model, Action::State(Box::new(settled))),
        vec![Effect::Bell]
    );
    assert_eq!(model.mode, Mode::Normal);
    assert_eq!(
        refusal_text(&model),
        "void of T01-S0003-H017 withdrawn: the round is SETTLED"
    );
    // The Y that would have answered it is no key of the console now.
    assert!(sent(&keys(&mut model, "y")).is_empty());
    assert!(model.pending.is_empty());
}

#[test]
fn ending_the_shoe_is_withdrawn_when_a_round_opens_meanwhile() {
    let mut model = online(state(3, T::Idle, S::InPlay));
    keys(&mut model, "eshift change");
    key(&mut model, KeyCode::Enter);
    assert!(matches!(model.mode, Mode::ConfirmEndShoe { .. }));
    let opened = state(4, T::BettingOpen, S::InPlay);
    assert_eq!(
        update(&mut model, Action::State(Box::new(opened))),
        vec![Effect::Bell]
    );
    assert_eq!(model.mode, Mode::Normal);
    assert!(
        refusal_text(&model).contains("ending T01-S0003 withdrawn: round T01-S0003-H017 opened")
    );
    // The Y that would have answered it is no key of the console now.
    assert!(sent(&keys(&mut model, "y")).is_empty());
    assert!(model.pending.is_empty());
}

#[test]
fn a_success_says_so() {
    let mut model = online(dealt_on(
        10,
        &[("7H", pb::Side::Player), ("7S", pb::Side::Banker)],
    ));
    keys(&mut model, "umisread");
    key(&mut model, KeyCode::Enter);
    ok(&mut model, dealt_on(11, &[("7H", pb::Side::Player)]));
    let note = model.notice.clone().unwrap();
    assert!(!note.refusal);
    assert_eq!(note.text, "undone 7♠");

    let mut model = online(dealing());
    keys(&mut model, "mbob77 30");
    key(&mut model, KeyCode::Enter);
    keys(&mut model, "insults");
    key(&mut model, KeyCode::Enter);
    ok(&mut model, dealing());
    assert_eq!(model.notice.clone().unwrap().text, "muted bob77 for 30 min");

    let mut model = online(dealing());
    keys(&mut model, "vjam");
    key(&mut model, KeyCode::Enter);
    keys(&mut model, "y");
    let mut voided = dealing();
    voided.seq = 11;
    voided.phase = T::Voided.into();
    voided.currency = "EUR".into();
    voided.round_totals = Some(pb::RoundTotals {
        staked_minor: 155_500,
        returned_minor: 155_500,
        house_result_minor: 0,
    });
    ok(&mut model, voided);
    assert_eq!(
        model.notice.clone().unwrap().text,
        "round voided (T01-S0003-H017): €1,555.00 returned"
    );
}

#[test]
fn a_mute_the_table_refuses_shows_its_reason() {
    let mut model = online(dealing());
    keys(&mut model, "mbob777 30");
    key(&mut model, KeyCode::Enter);
    keys(&mut model, "insults");
    key(&mut model, KeyCode::Enter);
    refused(
        &mut model,
        "cannot mute bob777: no player bob777 has chatted, bet, sat or held money at this table",
    );
    assert!(refusal_text(&model).starts_with("REFUSED mute bob777: cannot mute bob777"));
}

#[test]
fn an_old_refusal_is_cleared_when_the_round_moves_on() {
    let mut model = online(dealing());
    scan(&mut model, "ZZ");
    assert!(refusal_text(&model).starts_with("SCANNER:"));
    // Bets and chat lines are not the round moving on.
    let mut chatty = dealing();
    chatty.seq = 11;
    chatty.chat = chat();
    update(&mut model, Action::State(Box::new(chatty)));
    assert!(model.notice.is_some());
    // A card dealt is.
    let next = dealt_on(12, &[("7H", pb::Side::Player), ("2C", pb::Side::Banker)]);
    update(&mut model, Action::State(Box::new(next)));
    assert_eq!(model.notice, None);
}

#[test]
fn roads_cover_the_whole_shoe_not_only_the_last_59() {
    let all: String = "BPPBTBBPBP".repeat(7);
    let mut s = state(3, T::Idle, S::InPlay);
    s.last_results = winners(&all[all.len() - 59..]);
    s.roads = Some(pb::Roads {
        bead_plate: all.clone(),
        ..Default::default()
    });
    let model = online(s);
    let stats = model.roads.stats();
    assert_eq!(stats.hands, 70);
    assert_eq!(
        (stats.banker, stats.player, stats.tie),
        (
            u32::try_from(all.matches('B').count()).unwrap(),
            u32::try_from(all.matches('P').count()).unwrap(),
            7
        )
    );
}
