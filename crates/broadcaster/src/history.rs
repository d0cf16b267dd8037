//! MyBets paging over one or several tables: each table keeps its player's recent rounds;
//! a page is the newest of them all, and its token says where each table's list stopped.

use std::collections::BTreeMap;

use banco_table::{HistoryEntry, RoundId};
use banco_wire::{ConversionError, pb};

/// Where each table's list stands: `Some(round)`: continue with rounds older than it;
/// `None`: nothing more there. A table not named starts from its newest round.
pub(crate) type Cursors = BTreeMap<String, Option<RoundId>>;

/// Longest page token accepted.
const MAX_TOKEN: usize = 4096;

/// Reads a page token (`T01:T01-S0001-H0003,T02:-`); empty: the first page.
pub(crate) fn parse_token(token: &str) -> Result<Cursors, ConversionError> {
    let mut cursors = Cursors::new();
    if token.is_empty() {
        return Ok(cursors);
    }
    let invalid = |why: &str| {
        ConversionError::invalid(
            "page_token",
            token.chars().take(80).collect::<String>(),
            why,
        )
    };
    if token.len() > MAX_TOKEN {
        return Err(invalid(
            "too long: pass the token of the previous response as it is",
        ));
    }
    for part in token.split(',') {
        let Some((table, at)) = part.split_once(':') else {
            return Err(invalid("not a token of a previous MyBets response"));
        };
        if table.is_empty() || !table.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(invalid("not a token of a previous MyBets response"));
        }
        let cursor = match at {
            "-" => None,
            round => Some(
                banco_table::convert::round_id("page_token", round)
                    .map_err(|_| invalid("not a token of a previous MyBets response"))?,
            ),
        };
        cursors.insert(table.to_owned(), cursor);
    }
    Ok(cursors)
}

fn write_token(cursors: &Cursors) -> String {
    cursors
        .iter()
        .map(|(table, at)| match at {
            Some(round) => format!("{table}:{round}"),
            None => format!("{table}:-"),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// One page of the caller's bets.
#[derive(Debug)]
pub(crate) struct Page {
    /// Newest first, with the table of each.
    pub(crate) entries: Vec<(String, HistoryEntry)>,
    /// Empty on the last page.
    pub(crate) next_token: String,
}

/// The newest `size` entries of `lists` (each table's entries after its cursor, newest
/// first, up to `size + 1` of them), and the token of the page after.
pub(crate) fn merge(
    lists: Vec<(String, Vec<HistoryEntry>)>,
    cursors: &Cursors,
    size: usize,
) -> Page {
    let mut fetched: BTreeMap<String, usize> = BTreeMap::new();
    let mut all: Vec<(String, HistoryEntry)> = Vec::new();
    for (table, entries) in lists {
        fetched.insert(table.clone(), entries.len());
        all.extend(entries.into_iter().map(|e| (table.clone(), e)));
    }
    all.sort_by(|(ta, a), (tb, b)| {
        b.placed_at
            .cmp(&a.placed_at)
            .then_with(|| tb.cmp(ta))
            .then_with(|| b.round_id.cmp(&a.round_id))
    });
    all.truncate(size);
    let mut next = cursors.clone();
    let mut more = false;
    for (table, count) in fetched {
        let taken: Vec<&HistoryEntry> = all
            .iter()
            .filter(|(t, _)| *t == table)
            .map(|(_, e)| e)
            .collect();
        if count > taken.len() {
            more = true;
            if let Some(last) = taken.last() {
                next.insert(table, Some(last.round_id.clone()));
            }
        } else {
            next.insert(table, None);
        }
    }
    Page {
        entries: all,
        next_token: if more {
            write_token(&next)
        } else {
            String::new()
        },
    }
}

/// One entry of MyBetsResponse.
pub(crate) fn entry_to_pb(table: &str, entry: &HistoryEntry) -> pb::MyBetEntry {
    pb::MyBetEntry {
        round_id: entry.round_id.to_string(),
        table_id: table.to_owned(),
        placed_at: Some(banco_wire::convert::timestamp_of_ms(entry.placed_at)),
        bets: entry
            .bets
            .iter()
            .map(|(&kind, &stake)| pb::Bet {
                kind: pb::BetKind::from(kind).into(),
                stake_minor: stake,
            })
            .collect(),
        settlements: entry
            .settlements
            .iter()
            .copied()
            .map(pb::Settlement::from)
            .collect(),
        result: entry.result.as_ref().map(pb::HandResult::from),
        voided: entry.voided,
        net_minor: entry.net,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use banco_table::book::Stakes;

    fn entry(round: &str, placed_at: u64) -> HistoryEntry {
        HistoryEntry {
            round_id: RoundId::from(round),
            placed_at,
            bets: Stakes::new(),
            settlements: Vec::new(),
            result: None,
            voided: false,
            net: 0,
        }
    }

    fn rounds(page: &Page) -> Vec<String> {
        page.entries
            .iter()
            .map(|(_, e)| e.round_id.to_string())
            .collect()
    }

    #[test]
    fn tokens_round_trip_and_garbage_is_named() {
        let mut cursors = Cursors::new();
        cursors.insert("T01".into(), Some(RoundId::from("T01-S0001-H0003")));
        cursors.insert("T02".into(), None);
        let token = write_token(&cursors);
        assert_eq!(token, "T01:T01-S0001-H0003,T02:-");
        assert_eq!(parse_token(&token).unwrap(), cursors);
        assert!(parse_token("").unwrap().is_empty());
        for bad in ["nonsense", "T01", ":x", "T-1:-", "T01:"] {
            let err = parse_token(bad).unwrap_err().to_string();
            assert!(err.contains("page_token"), "{bad}: {err}");
        }
    }

    #[test]
    fn pages_walk_two_tables_newest_first_to_the_end() {
        let t1: Vec<_> = (1..=5)
            .rev()
            .map(|h| entry(&format!("T01-S0001-H000{h}"), h * 10))
            .collect();
        let t2: Vec<_> = (1..=3)
            .rev()
            .map(|h| entry(&format!("T02-S0001-H000{h}"), h * 10 + 5))
            .collect();
        // First page of 3: the three newest of both.
        let page = merge(
            vec![
                ("T01".into(), t1[..4].to_vec()),
                ("T02".into(), t2[..3].to_vec()),
            ],
            &Cursors::new(),
            3,
        );
        assert_eq!(
            rounds(&page),
            ["T01-S0001-H0005", "T01-S0001-H0004", "T02-S0001-H0003"]
        );
        let cursors = parse_token(&page.next_token).unwrap();
        assert_eq!(cursors["T01"], Some(RoundId::from("T01-S0001-H0004")));
        assert_eq!(cursors["T02"], Some(RoundId::from("T02-S0001-H0003")));
        // The next page continues each table after its cursor.
        let page = merge(
            vec![
                ("T01".into(), t1[2..].to_vec()),
                ("T02".into(), t2[1..].to_vec()),
            ],
            &cursors,
            3,
        );
        assert_eq!(
            rounds(&page),
            ["T01-S0001-H0003", "T02-S0001-H0002", "T01-S0001-H0002"]
        );
        let cursors = parse_token(&page.next_token).unwrap();
        let page = merge(
            vec![
                ("T01".into(), t1[4..].to_vec()),
                ("T02".into(), t2[2..].to_vec()),
            ],
            &cursors,
            3,
        );
        assert_eq!(rounds(&page), ["T02-S0001-H0001", "T01-S0001-H0001"]);
        assert_eq!(page.next_token, "");
    }
}
