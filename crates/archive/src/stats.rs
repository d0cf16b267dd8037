//! Stats over a table, shoe, croupier or UTC day: counts, shares, naturals, pairs, the
//! longest Banker and Player runs, the house result, and the observed return to player
//! of every position beside its theoretical value.
//!
//! Read from the aggregates every append keeps in the same transaction
//! (`store::aggregate`): a few rows per scope, whatever the number of rounds in it.

use std::sync::OnceLock;

use banco_rules::{BetKind, Composition, Paytable, Rtp};
use banco_wire::pb;
use sqlx::Row as _;

use crate::error::ArchiveError;
use crate::record::parse_day;
use crate::store::aggregate::{SCOPE_CROUPIER, SCOPE_DAY, SCOPE_SHOE, SCOPE_TABLE};
use crate::store::{RoundFilterSql, Store, on_pool};

/// Decks assumed for the theoretical RTP: the table's record does not carry its shoe's
/// config, and 8 decks is the table default.
pub const THEORETICAL_DECKS: u8 = 8;

/// The exact RTP of a full shoe of [`THEORETICAL_DECKS`] under the standard paytable,
/// computed once.
fn theoretical() -> Option<&'static Rtp> {
    static RTP: OnceLock<Option<Rtp>> = OnceLock::new();
    RTP.get_or_init(|| {
        let shoe = Composition::full(THEORETICAL_DECKS).ok()?;
        let p = banco_rules::probabilities(&shoe).ok()?;
        Some(banco_rules::rtp(&p, &Paytable::standard()))
    })
    .as_ref()
}

/// The filter of a scope.
fn scope_filter(scope: pb::StatsScope, key: &str) -> Result<RoundFilterSql, ArchiveError> {
    if key.is_empty() {
        return Err(ArchiveError::bad_request(
            "key",
            "empty: name the table, shoe, croupier or day",
        ));
    }
    let mut f = RoundFilterSql::default();
    match scope {
        pb::StatsScope::Table => f.table(key),
        pb::StatsScope::Shoe => f.shoe(key),
        pb::StatsScope::Croupier => f.croupier(key),
        pb::StatsScope::Day => {
            if parse_day(key).is_none() {
                return Err(ArchiveError::bad_request(
                    "key",
                    format!("`{key}` is not a UTC date YYYY-MM-DD"),
                ));
            }
            f.day(key);
        }
        pb::StatsScope::Unspecified => {
            return Err(ArchiveError::bad_request(
                "scope",
                "unspecified: table, shoe, croupier or day",
            ));
        }
    }
    Ok(f)
}

/// Longest runs of Banker and Player wins in `winners` (per table, in play order); ties
/// neither break nor extend a run.
pub fn longest_streaks(winners: &[(String, String)]) -> (u32, u32) {
    let (mut banker, mut player) = (0u32, 0u32);
    let mut run: Option<(&str, &str, u32)> = None;
    for (table, winner) in winners {
        if winner == "tie" {
            continue;
        }
        let length = match run {
            Some((t, w, n)) if t == table && w == winner => n + 1,
            _ => 1,
        };
        run = Some((table, winner, length));
        match winner.as_str() {
            "banker" => banker = banker.max(length),
            "player" => player = player.max(length),
            _ => {}
        }
    }
    (banker, player)
}

/// position, bets, wins, staked, returned.
type PositionRow = (String, i64, i64, i64, i64);

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub async fn stats(
    store: &Store,
    request: &pb::StatsRequest,
) -> Result<pb::StatsResponse, ArchiveError> {
    let scope = pb::StatsScope::try_from(request.scope).map_err(|_| {
        ArchiveError::bad_request("scope", format!("{} is not a known scope", request.scope))
    })?;
    // Checks the key as the filter of the scope would.
    scope_filter(scope, &request.key)?;
    let scope_name = match scope {
        pb::StatsScope::Table => SCOPE_TABLE,
        pb::StatsScope::Shoe => SCOPE_SHOE,
        pb::StatsScope::Croupier => SCOPE_CROUPIER,
        pb::StatsScope::Day | pb::StatsScope::Unspecified => SCOPE_DAY,
    };
    let mut response = pb::StatsResponse {
        scope: request.scope,
        key: request.key.clone(),
        ..Default::default()
    };
    // The aggregates the appends keep (see `store::aggregate`): one row per table of the
    // scope, one per position.
    let totals_sql = "SELECT
            CAST(COALESCE(SUM(rounds), 0) AS BIGINT) AS rounds,
            CAST(COALESCE(SUM(voided), 0) AS BIGINT) AS voided,
            CAST(COALESCE(SUM(corrections), 0) AS BIGINT) AS corrections,
            CAST(COALESCE(SUM(banker), 0) AS BIGINT) AS banker,
            CAST(COALESCE(SUM(player), 0) AS BIGINT) AS player,
            CAST(COALESCE(SUM(tie), 0) AS BIGINT) AS tie,
            CAST(COALESCE(SUM(naturals), 0) AS BIGINT) AS naturals,
            CAST(COALESCE(SUM(player_pairs), 0) AS BIGINT) AS player_pairs,
            CAST(COALESCE(SUM(banker_pairs), 0) AS BIGINT) AS banker_pairs,
            CAST(COALESCE(SUM(house), 0) AS BIGINT) AS house,
            CAST(COALESCE(MAX(longest_banker), 0) AS BIGINT) AS longest_banker,
            CAST(COALESCE(MAX(longest_player), 0) AS BIGINT) AS longest_player
         FROM stats_totals WHERE scope = $1 AND scope_key = $2";
    let positions_sql = "SELECT position, bets, wins, staked, returned
         FROM stats_positions WHERE scope = $1 AND scope_key = $2 AND bets > 0
         ORDER BY position";
    let (positions, banker, player): (Vec<PositionRow>, i64, i64) = on_pool!(store, |pool| {
        let t = sqlx::query(totals_sql)
            .bind(scope_name)
            .bind(&request.key)
            .fetch_one(pool)
            .await?;
        response.rounds = count(t.try_get("rounds")?);
        response.voided = count(t.try_get("voided")?);
        response.corrections = count(t.try_get("corrections")?);
        response.banker_wins = count(t.try_get("banker")?);
        response.player_wins = count(t.try_get("player")?);
        response.ties = count(t.try_get("tie")?);
        response.naturals = count(t.try_get("naturals")?);
        response.player_pairs = count(t.try_get("player_pairs")?);
        response.banker_pairs = count(t.try_get("banker_pairs")?);
        response.house_gross_win_minor = t.try_get("house")?;
        let positions = sqlx::query_as(positions_sql)
            .bind(scope_name)
            .bind(&request.key)
            .fetch_all(pool)
            .await?;
        (
            positions,
            t.try_get("longest_banker")?,
            t.try_get("longest_player")?,
        )
    });
    let theory = theoretical();
    for (position, bets, wins, staked, returned) in positions {
        let kind = BetKind::parse(&position)
            .map_err(|e| ArchiveError::Corrupt(format!("stored bet position: {e}")))?;
        response.positions.push(pb::PositionStats {
            kind: pb::BetKind::from(kind).into(),
            bets: count(bets),
            wins: count(wins),
            staked_minor: staked,
            returned_minor: returned,
            observed_rtp: if staked > 0 {
                returned as f64 / staked as f64
            } else {
                0.0
            },
            theoretical_rtp: theory.map_or(0.0, |rtp| *rtp.get(kind)),
        });
    }
    response.longest_banker_streak = u32::try_from(banker).unwrap_or(u32::MAX);
    response.longest_player_streak = u32::try_from(player).unwrap_or(u32::MAX);
    Ok(response)
}
