//! `banco player tables`: the lobby, one block per table.

use banco_wire::pb;

use super::amount::money;
use super::bets::kind_name;
use super::render::{phase_name, ratio, results_string};

pub(crate) fn render_tables(tables: &[pb::TableInfo]) -> String {
    if tables.is_empty() {
        return "no tables\n".to_owned();
    }
    tables
        .iter()
        .map(render_table)
        .collect::<Vec<_>>()
        .join("\n")
}

fn render_table(t: &pb::TableInfo) -> String {
    let mut out = String::new();
    let name = if t.name.is_empty() || t.name == t.table_id {
        String::new()
    } else {
        format!("  {}", t.name)
    };
    out.push_str(&format!("table {}{name}\n", t.table_id));
    out.push_str(&format!(
        "  {}, {}, {} decks, seats {}, {} player{}",
        pacing_name(t.pacing),
        phase_name(t.phase),
        t.decks,
        if t.seats == 0 {
            "unlimited".to_owned()
        } else {
            format!("{}/{}", t.seats_taken, t.seats)
        },
        t.players,
        if t.players == 1 { "" } else { "s" }
    ));
    if !t.croupier.is_empty() {
        out.push_str(&format!(", croupier {}", t.croupier));
    }
    out.push('\n');
    if !t.limits.is_empty() {
        let currency = if t.currency.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.currency)
        };
        let limits: Vec<String> = t
            .limits
            .iter()
            .map(|l| {
                format!(
                    "{} {}-{}",
                    kind_name(l.kind),
                    money(l.min_minor),
                    money(l.max_minor)
                )
            })
            .collect();
        out.push_str(&format!("  limits{currency}: {}\n", limits.join(", ")));
    }
    if let Some(p) = &t.paytable {
        let mut pays = vec![
            format!("player {}", ratio(p.player.as_ref())),
            format!("banker {}", ratio(p.banker.as_ref())),
        ];
        if let Some(six) = &p.banker_win_on_six {
            pays.push(format!("banker on 6 {}", ratio(Some(six))));
        }
        for (name, r) in [
            ("tie", &p.tie),
            ("player_pair", &p.player_pair),
            ("banker_pair", &p.banker_pair),
            ("either_pair", &p.either_pair),
            ("perfect_pair", &p.perfect_pair),
            ("big", &p.big),
            ("small", &p.small),
        ] {
            pays.push(format!("{name} {}", ratio(r.as_ref())));
        }
        out.push_str(&format!("  paytable {}: {}\n", p.name, pays.join(", ")));
    }
    out.push_str(&format!(
        "  last results: {}\n",
        results_string(&t.last_results)
    ));
    out
}

fn pacing_name(raw: i32) -> &'static str {
    match pb::Pacing::try_from(raw) {
        Ok(pb::Pacing::Live) => "live",
        Ok(pb::Pacing::AutomatedMultiplayer) => "automated multiplayer",
        Ok(pb::Pacing::SinglePlayer) => "single player",
        _ => "unknown pacing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_block() {
        let r = |n, d| {
            Some(pb::Ratio {
                numerator: n,
                denominator: d,
            })
        };
        let table = pb::TableInfo {
            table_id: "T01".to_owned(),
            name: "Salon Privé 1".to_owned(),
            currency: "EUR".to_owned(),
            limits: vec![pb::PositionLimit {
                kind: pb::BetKind::Player.into(),
                min_minor: 500,
                max_minor: 10_200,
            }],
            paytable: Some(pb::Paytable {
                name: "standard".to_owned(),
                player: r(1, 1),
                banker: r(19, 20),
                banker_win_on_six: None,
                tie: r(8, 1),
                player_pair: r(11, 1),
                banker_pair: r(11, 1),
                either_pair: r(5, 1),
                perfect_pair: r(25, 1),
                big: r(27, 50),
                small: r(3, 2),
            }),
            decks: 8,
            seats: 5,
            seats_taken: 2,
            pacing: pb::Pacing::Live.into(),
            phase: pb::TablePhase::BettingOpen.into(),
            players: 3,
            last_results: vec![
                pb::Winner::Banker.into(),
                pb::Winner::Player.into(),
                pb::Winner::Tie.into(),
            ],
            croupier: "ada".to_owned(),
        };
        let text = render_tables(&[table]);
        assert_eq!(
            text,
            "table T01  Salon Privé 1\n\
             \x20 live, betting open, 8 decks, seats 2/5, 3 players, croupier ada\n\
             \x20 limits (EUR): player 5.00-102.00\n\
             \x20 paytable standard: player 1:1, banker 0.95:1, tie 8:1, player_pair 11:1, \
             banker_pair 11:1, either_pair 5:1, perfect_pair 25:1, big 0.54:1, small 1.5:1\n\
             \x20 last results: B P T\n"
        );
        let unseated = pb::TableInfo {
            table_id: "T02".to_owned(),
            ..pb::TableInfo::default()
        };
        let text = render_tables(&[unseated]);
        assert!(text.contains("seats unlimited, 0 players"), "{text}");
        assert!(text.contains("last results: none yet"), "{text}");
        assert_eq!(render_tables(&[]), "no tables\n");
    }
}
