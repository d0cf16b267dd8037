//! What the demo tells at the end, from the archive (as an auditor sees it) and from the
//! table's ledger (each bot's balance, as the player sees it): rounds, bets, the house
//! result, whether the archive's chain verifies, and how many rounds have their clip.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use banco_auth::BearerToken;
use banco_rules::Money;
use banco_wire::pb;
use banco_wire::pb::archive_service_client::ArchiveServiceClient;
use banco_wire::pb::player_service_client::PlayerServiceClient;

use super::data::DemoData;
use banco::clients::audit::Archive;

/// How long the outbox gets to deliver the last rounds to the archive.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(60);

/// The archive's view of the table, and the ledger's of the bots.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) rounds: Vec<pb::RoundSummary>,
    /// Round ids played that the archive does not have.
    pub(crate) missing: Vec<String>,
    pub(crate) verify: pb::VerifyResponse,
    /// Players who bet, and their balances now (the table's ledger).
    pub(crate) balances: Vec<(String, i64)>,
    pub(crate) welcome_credit: i64,
    pub(crate) clips: Clips,
}

/// What the archive's records say of the rounds' clips.
#[derive(Debug, Default)]
pub(crate) struct Clips {
    /// Rounds stored with their clip.
    pub(crate) stored: usize,
    /// Rounds without one because there was no video to record.
    pub(crate) no_video: usize,
    /// Rounds whose clip was lost (or that say nothing of it): the round, and why.
    pub(crate) lost: Vec<(String, String)>,
}

impl Clips {
    fn count(&mut self, record: &pb::RoundRecord) {
        match (&record.clip, &record.clip_missing) {
            (Some(_), _) => self.stored += 1,
            (None, Some(m)) if m.reason() == pb::ClipMissingReason::NoVideo => self.no_video += 1,
            (None, Some(m)) => self.lost.push((
                record.round_id.clone(),
                format!(
                    "{}: {}",
                    banco::clients::audit::clip_missing_reason(m.reason()),
                    m.detail
                ),
            )),
            (None, None) => self.lost.push((
                record.round_id.clone(),
                "no clip, and no word of why".to_owned(),
            )),
        }
    }
}

impl Summary {
    fn settled(&self) -> impl Iterator<Item = &pb::RoundSummary> {
        self.rounds.iter().filter(|r| !r.voided)
    }

    fn bets(&self) -> u64 {
        self.rounds.iter().map(|r| u64::from(r.bets)).sum()
    }

    fn staked(&self) -> i64 {
        self.settled().map(|r| r.total_stake_minor).sum()
    }

    /// Staked minus returned: what the house won (negative: what it lost).
    fn house(&self) -> i64 {
        self.settled()
            .map(|r| r.total_stake_minor - r.total_returned_minor)
            .sum()
    }

    /// What the players' balances moved by, from the ledger: now, less the welcome credit
    /// each of them got.
    fn ledger_change(&self) -> i64 {
        let credited = i64::try_from(self.balances.len()).unwrap_or(i64::MAX);
        self.balances.iter().map(|(_, b)| b).sum::<i64>() - credited * self.welcome_credit
    }

    /// Whether the archive has every round, its chain verifies, the ledger agrees, and
    /// no round lost its clip.
    pub(crate) fn ok(&self) -> bool {
        self.missing.is_empty()
            && self.verify.ok
            && self.ledger_change() == -self.house()
            && self.clips.lost.is_empty()
    }

    pub(crate) fn render(&self, currency: &str) -> String {
        let amount = |minor: i64| Money::new(minor, currency).to_string();
        let change_of = |minor: i64| Money::new(minor, currency).signed().to_string();
        let mut out = String::new();
        let settled = self.settled().count();
        let _ = writeln!(
            out,
            "rounds played: {} ({settled} settled, {} voided)",
            self.rounds.len() + self.missing.len(),
            self.rounds.len() - settled
        );
        let _ = writeln!(
            out,
            "bets placed: {} ({} staked), by {} players",
            self.bets(),
            amount(self.staked()),
            self.balances.len()
        );
        let _ = writeln!(out, "house result: {}", change_of(self.house()));
        let change = self.ledger_change();
        let _ = writeln!(
            out,
            "players' total balance change: {} (ledger{})",
            change_of(change),
            if change == -self.house() {
                " and archive agree".to_owned()
            } else {
                format!(
                    " says {}, the archive's settlements {}: they DISAGREE",
                    change_of(change),
                    change_of(-self.house())
                )
            }
        );
        let stored = self.rounds.len();
        let _ = write!(
            out,
            "archive: {stored} of {} rounds stored",
            stored + self.missing.len()
        );
        if let Some(first) = self.missing.first() {
            let _ = write!(out, " (missing, first: {first})");
        }
        if self.verify.ok {
            let _ = writeln!(
                out,
                "; chain verified OK ({} records checked, head {})",
                self.verify.records_checked, self.verify.head_round_id
            );
        } else {
            let bad = self.verify.first_bad.clone().unwrap_or_default();
            let _ = writeln!(out, "; chain BROKEN at {}: {}", bad.round_id, bad.problem);
        }
        let clips = &self.clips;
        let _ = write!(
            out,
            "clips: {} of {stored} rounds in the archive",
            clips.stored
        );
        if clips.no_video > 0 {
            let _ = write!(
                out,
                "; {} without video (no camera publishing)",
                clips.no_video
            );
        }
        if let Some((round, why)) = clips.lost.first() {
            let _ = write!(out, "; {} LOST (first: {round}, {why})", clips.lost.len());
        }
        let _ = writeln!(out);
        out
    }
}

/// Waits until the archive holds `expected` rounds of `table` (the outbox delivers them
/// behind the table), verifies the chain, and reads every bot's balance.
pub(crate) async fn summarize(
    data: &DemoData,
    archive_url: &str,
    broadcaster_url: &str,
    table: &str,
    expected: &[String],
    bots: usize,
    welcome_credit: i64,
) -> anyhow::Result<Summary> {
    let token = banco_auth::client::read_token_file(&data.token("auditor.token"))?.bearer;
    let channel = banco::clients::croupier::endpoint(archive_url, None)?.connect_lazy();
    let mut archive = ArchiveServiceClient::with_interceptor(channel, token);
    let started = Instant::now();
    let (rounds, missing) = loop {
        let rounds = list_rounds(&mut archive, table).await?;
        let missing: Vec<String> = expected
            .iter()
            .filter(|id| !rounds.iter().any(|r| &r.round_id == *id))
            .cloned()
            .collect();
        if missing.is_empty() || started.elapsed() > DELIVERY_TIMEOUT {
            break (rounds, missing);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let verify = archive
        .verify(pb::VerifyRequest {
            table_id: table.to_owned(),
            accept_unsigned: false,
            heads: Vec::new(),
        })
        .await
        .map_err(banco::clients::croupier::status_error)
        .context("Verify")?
        .into_inner();
    let balances = balances(data, broadcaster_url, &mut archive, bots).await?;
    let mut clips = Clips::default();
    for round in &rounds {
        let record = archive
            .get_round(pb::GetRoundRequest {
                round_id: round.round_id.clone(),
            })
            .await
            .map_err(banco::clients::croupier::status_error)
            .with_context(|| format!("GetRound {}", round.round_id))?
            .into_inner();
        clips.count(&record);
    }
    Ok(Summary {
        rounds,
        missing,
        verify,
        balances,
        welcome_credit,
        clips,
    })
}

/// Every round of `table` the archive holds, oldest first.
async fn list_rounds(archive: &mut Archive, table: &str) -> anyhow::Result<Vec<pb::RoundSummary>> {
    let filter = pb::RoundFilter {
        table_id: table.to_owned(),
        ..Default::default()
    };
    let mut rounds = banco::clients::audit::all_rounds(archive, filter).await?;
    rounds.sort_by(|a, b| a.round_id.cmp(&b.round_id));
    Ok(rounds)
}

/// The balance of each bot that bet (`bot-001` …, the names `banco-sim bots` gives them),
/// asked as that player.
async fn balances(
    data: &DemoData,
    broadcaster_url: &str,
    archive: &mut Archive,
    bots: usize,
) -> anyhow::Result<Vec<(String, i64)>> {
    let channel = banco::clients::croupier::endpoint(broadcaster_url, None)?.connect_lazy();
    let mut out = Vec::new();
    for i in 1..=bots {
        let name = format!("bot-{i:03}");
        let token = BearerToken::new(&data.player_token(&name)?)
            .with_context(|| format!("token for {name}"))?;
        let mut player = PlayerServiceClient::with_interceptor(channel.clone(), token);
        let balance = player
            .get_balance(pb::GetBalanceRequest {})
            .await
            .map_err(banco::clients::croupier::status_error)
            .with_context(|| format!("GetBalance as {name}"))?
            .into_inner();
        let total = balance.available_minor + balance.in_play_minor;
        // Asking credits a bot's welcome credit if it had none yet; one without a bet in
        // the archive keeps it whole and moved nothing, so only bettors count.
        if has_bets(archive, &name).await? {
            out.push((name, total));
        }
    }
    Ok(out)
}

async fn has_bets(archive: &mut Archive, player: &str) -> anyhow::Result<bool> {
    let page = archive
        .player_bets(pb::PlayerBetsRequest {
            player_id: player.to_owned(),
            page_size: 1,
            ..Default::default()
        })
        .await
        .map_err(banco::clients::croupier::status_error)
        .with_context(|| format!("PlayerBets {player}"))?
        .into_inner();
    Ok(!page.entries.is_empty())
}
