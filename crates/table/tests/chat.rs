//! Chat and mutes: what a line may hold, masking, the rate limit and when it lifts, mutes
//! and their end, and the config checks.
#![allow(clippy::unwrap_used)]

mod support;

use banco_table::policy::ConfigError;
use banco_table::{ChatTextProblem, Command, Event, Pacing, Refusal, Table, TableConfig};
use support::*;

fn chat_table(blocked: &[&str]) -> Table {
    let mut cfg = config(Pacing::Live);
    cfg.policy.chat.max_chars = 10;
    cfg.policy.chat.burst = 3;
    cfg.policy.chat.window_ms = 10_000;
    cfg.policy.chat.blocked_words = blocked.iter().map(|w| (*w).to_owned()).collect();
    Table::new(cfg).unwrap()
}

fn say(player: &str, text: &str, now_ms: u64) -> Command {
    Command::Chat {
        player: player.into(),
        text: text.into(),
        now_ms,
    }
}

fn mute(player: &str, minutes: u32, reason: &str, now_ms: u64) -> Command {
    Command::MutePlayer {
        player: player.into(),
        minutes,
        reason: reason.into(),
        by: "pitboss".into(),
        now_ms,
    }
}

fn line(player: &str, text: &str, at: u64) -> Vec<Event> {
    vec![Event::Chat {
        player: player.into(),
        text: text.into(),
        at,
    }]
}

#[test]
fn what_a_line_may_hold() {
    let mut t = chat_table(&[]);
    let bad = |problem| Refusal::ChatText {
        player: "alice".into(),
        problem,
    };
    /// The text sent, and the line shown or the refusal with its message.
    type Case<'a> = (&'a str, Result<&'a str, (Refusal, &'a str)>);
    let cases: &[Case] = &[
        ("  hi all  ", Ok("hi all")),
        // Ten characters of two bytes each: the limit counts characters.
        ("éééééééééé", Ok("éééééééééé")),
        (
            "hello world",
            Err((
                bad(ChatTextProblem::TooLong { chars: 11, max: 10 }),
                "chat line of alice refused: the line has 11 characters, at most 10 are allowed",
            )),
        ),
        (
            "   ",
            Err((
                bad(ChatTextProblem::Empty),
                "chat line of alice refused: the line is empty",
            )),
        ),
        (
            " a\u{7}b",
            Err((
                bad(ChatTextProblem::ControlCharacter {
                    position: 3,
                    code: 7,
                }),
                "chat line of alice refused: character 3 is a control character (U+0007)",
            )),
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let now = 100_000 * (i as u64 + 1);
        match want {
            Ok(shown) => assert_eq!(
                ok(&mut t, say("alice", text, now)),
                line("alice", shown, now),
                "{text:?}"
            ),
            Err((refusal, message)) => {
                let r = refused(&mut t, say("alice", text, now));
                assert_eq!(r, *refusal, "{text:?}");
                assert_eq!(r.to_string(), *message);
            }
        }
    }
    // Chat lines are public.
    assert_eq!(line("alice", "x", 1)[0].private_to(), None);
}

#[test]
fn blocked_words_are_masked_in_the_event_only() {
    let mut t = chat_table(&["Darn"]);
    let cmd = say("alice", "darn IT", 1_000);
    assert_eq!(ok(&mut t, cmd.clone()), line("alice", "**** IT", 1_000));
    // The command (what the journal keeps) is as typed.
    assert_eq!(
        cmd,
        Command::Chat {
            player: "alice".into(),
            text: "darn IT".into(),
            now_ms: 1_000
        }
    );
    assert_eq!(
        ok(&mut t, say("alice", "DARN-darns", 2_000)),
        line("alice", "****-darns", 2_000)
    );
}

#[test]
fn the_rate_limit_and_when_it_lifts() {
    let mut t = chat_table(&[]);
    for now in [1_000, 2_000, 3_000] {
        ok(&mut t, say("alice", "hi", now));
    }
    let r = refused(&mut t, say("alice", "hi", 10_999));
    assert_eq!(
        r,
        Refusal::ChatRateLimited {
            player: "alice".into(),
            burst: 3,
            window_ms: 10_000,
            retry_at: 11_000,
            now_ms: 10_999,
        }
    );
    assert_eq!(
        r.to_string(),
        "chat line of alice refused: at most 3 lines within 10 s; write again from \
         1970-01-01T00:00:11.000Z (server clock 1970-01-01T00:00:10.999Z)"
    );
    // Others are not held back by alice.
    ok(&mut t, say("bob", "hi", 10_999));
    // A refused line does not count: at 11 000 the first line has left the window.
    ok(&mut t, say("alice", "again", 11_000));
    let r = refused(&mut t, say("alice", "hi", 11_500));
    assert!(
        matches!(
            r,
            Refusal::ChatRateLimited {
                retry_at: 12_000,
                ..
            }
        ),
        "{r}"
    );
    // A line refused for its text does not use up the burst either.
    let r = refused(&mut t, say("alice", "  ", 12_000));
    assert!(matches!(r, Refusal::ChatText { .. }), "{r}");
    ok(&mut t, say("alice", "hi", 12_000));
    let r = refused(&mut t, say("alice", "hi", 12_500));
    assert!(
        matches!(
            r,
            Refusal::ChatRateLimited {
                retry_at: 13_000,
                ..
            }
        ),
        "{r}"
    );
}

#[test]
fn mute_and_unmute() {
    let mut t = chat_table(&[]);
    ok(&mut t, say("alice", "hi all", 500));
    let r = refused(&mut t, mute("alice", 10, "  ", 1_000));
    assert_eq!(r, Refusal::Missing { field: "reason" });
    let no_by = Command::MutePlayer {
        player: "alice".into(),
        minutes: 10,
        reason: "spam".into(),
        by: String::new(),
        now_ms: 1_000,
    };
    assert_eq!(refused(&mut t, no_by), Refusal::Missing { field: "by" });
    let r = refused(&mut t, mute("alice", 0, "", 1_000));
    assert_eq!(
        r,
        Refusal::NotMuted {
            player: "alice".into()
        }
    );
    assert_eq!(
        r.to_string(),
        "cannot lift the mute of alice: they are not muted"
    );

    let events = ok(&mut t, mute("alice", 10, "spam", 1_000));
    let muted = Event::PlayerMuted {
        player: "alice".into(),
        until: Some(601_000),
        reason: "spam".into(),
        by: "pitboss".into(),
    };
    assert_eq!(events, vec![muted.clone()]);
    // Told to the muted player only (the console sees everything anyway).
    assert_eq!(muted.private_to(), Some("alice"));
    assert_eq!(t.muted_until("alice", 1_000), Some(601_000));
    let r = refused(&mut t, say("alice", "hello", 600_999));
    assert_eq!(
        r,
        Refusal::Muted {
            player: "alice".into(),
            until: 601_000,
            reason: "spam".into()
        }
    );
    assert_eq!(
        r.to_string(),
        "chat line of alice refused: muted until 1970-01-01T00:10:01.000Z (spam)"
    );
    // A mute ends by itself.
    assert_eq!(t.muted_until("alice", 601_000), None);
    ok(&mut t, say("alice", "back", 601_000));

    // And is lifted early with 0 minutes.
    ok(&mut t, mute("alice", 5, "flood", 700_000));
    let events = ok(&mut t, mute("alice", 0, "", 700_100));
    assert_eq!(
        events,
        vec![Event::PlayerMuted {
            player: "alice".into(),
            until: None,
            reason: String::new(),
            by: "pitboss".into(),
        }]
    );
    ok(&mut t, say("alice", "thanks", 700_200));
}

#[test]
fn chat_config_is_checked() {
    let with = |f: &dyn Fn(&mut TableConfig)| {
        let mut cfg = config(Pacing::Live);
        f(&mut cfg);
        Table::new(cfg).map(|_| ())
    };
    assert_eq!(
        with(&|c| c.policy.chat.burst = 0),
        Err(ConfigError::ChatLimit { field: "burst" })
    );
    assert_eq!(
        with(&|c| c.policy.chat.max_chars = 0),
        Err(ConfigError::ChatLimit { field: "max_chars" })
    );
    let e = with(&|c| c.policy.chat.blocked_words = vec!["two words".into()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "chat.blocked_words: `two words` must be one word of letters and digits"
    );
    assert_eq!(
        with(&|c| c.policy.chat.blocked_words = vec!["ok1".into()]),
        Ok(())
    );
}

#[test]
fn only_a_player_the_table_has_seen_can_be_muted() {
    let mut t = chat_table(&[]);
    // A typo of a player's id, or someone never here: refused, naming the id.
    ok(&mut t, say("bob77", "hello", 100));
    let before = t.clone();
    for minutes in [30, 0] {
        let r = refused(&mut t, mute("bob777", minutes, "insults", 1_000));
        assert_eq!(
            r,
            Refusal::UnknownPlayer {
                player: "bob777".into()
            }
        );
        assert_eq!(
            r.to_string(),
            "cannot mute bob777: no player bob777 has chatted, bet, sat or held money at this table"
        );
    }
    assert_eq!(t, before, "a refusal changes nothing");
    // Whoever chatted, holds money or sits here can be.
    ok(&mut t, mute("bob77", 30, "insults", 1_000));
    fund(&mut t, "carol", 1_000);
    ok(&mut t, mute("carol", 5, "pre-emptive", 1_000));
}
