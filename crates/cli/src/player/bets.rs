//! Bet arguments as typed (`player=25 tie=5 player-pair=2.50`): each a position name that
//! `BetKind` accepts and a stake in major units. Everything is checked before any request
//! is sent, so a typo never places half a bet.

use banco_rules::BetKind;
use banco_wire::pb;

/// `kind=amount` arguments → (position, stake in minor units), in the order given.
pub(crate) fn parse_bets(args: &[String]) -> anyhow::Result<Vec<(BetKind, i64)>> {
    Ok(banco_rules::parse_bet_args(args)?)
}

pub fn bets_to_pb(bets: &[(BetKind, i64)]) -> Vec<pb::Bet> {
    bets.iter()
        .map(|&(kind, stake)| pb::Bet {
            kind: pb::BetKind::from(kind).into(),
            stake_minor: stake,
        })
        .collect()
}

/// The position's name as the command line takes it (`player_pair`), or the raw number of
/// an enum value this client does not know.
pub(crate) fn kind_name(raw: i32) -> String {
    match pb::BetKind::try_from(raw)
        .ok()
        .and_then(|k| BetKind::try_from(k).ok())
    {
        Some(kind) => kind.to_string(),
        None => format!("position#{raw}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn positions_and_amounts() {
        let bets = parse_bets(&args(&[
            "player=25",
            "tie=5",
            "player-pair=2.50",
            "BANKER_PAIR=1",
            "b=0.05",
        ]));
        assert_eq!(
            bets.ok(),
            Some(vec![
                (BetKind::Player, 2_500),
                (BetKind::Tie, 500),
                (BetKind::PlayerPair, 250),
                (BetKind::BankerPair, 100),
                (BetKind::Banker, 5),
            ])
        );
    }

    #[test]
    fn bad_arguments_are_named() {
        for (list, needle) in [
            (&["player=2.555"][..], "`player=2.555`"),
            (&["player"][..], "`player`"),
            (&["dragon=5"][..], "`dragon`"),
            (&["player=0"][..], "`player=0`"),
            (&["player=-5"][..], "`player=-5`"),
            (&["player=abc"][..], "`player=abc`"),
            (&["player=5", "p=5"][..], "`p=5`"),
            (&[][..], "no bet given"),
        ] {
            let err = format!("{:#}", parse_bets(&args(list)).expect_err(needle));
            assert!(err.contains(needle), "{list:?}: {err}");
        }
    }

    #[test]
    fn wire_bets_and_names() {
        let pb = bets_to_pb(&[(BetKind::PlayerPair, 250)]);
        assert_eq!(pb[0].kind, pb::BetKind::PlayerPair as i32);
        assert_eq!(pb[0].stake_minor, 250);
        assert_eq!(kind_name(pb::BetKind::Banker as i32), "banker");
        assert_eq!(kind_name(0), "position#0");
        assert_eq!(kind_name(99), "position#99");
    }
}
