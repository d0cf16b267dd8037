//! Reading the two sides of a reconciliation: the archive's rounds (one Export stream, not a
//! call per round) and the wallet's movements, page after page, from `banco wallet`
//! (Movements) or straight from its database, opened to read only.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use banco_wallet::Store;
use banco_wallet::grpc::{GrpcWallet, GrpcWalletOptions};
use banco_wallet::store::{MAX_PAGE, Movement, MovementFilter};
use banco_wire::convert::timestamp_of_ms;
use banco_wire::pb;
use serde::Deserialize;

use super::matching::{ArchivedBet, ArchivedRound};
use crate::audit::Archive;

/// Which rounds and movements: one table or all, one period or all time (unix ms,
/// `[from, to)`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    pub(crate) table: Option<String>,
    pub(crate) period: Option<(u64, u64)>,
}

/// A line of the archive's JSONL export, as far as money goes (other fields ignored).
#[derive(Deserialize)]
struct ExportedRound {
    round_id: String,
    table_id: String,
    voided: bool,
    bets: Vec<ExportedBet>,
}

#[derive(Deserialize)]
struct ExportedBet {
    player_id: String,
    position: String,
    stake_minor: i64,
    returned_minor: i64,
    refunded_minor: i64,
}

/// Every archived round of `scope` (finished in its period).
pub(crate) async fn archived_rounds(
    client: &mut Archive,
    scope: &Scope,
) -> anyhow::Result<Vec<ArchivedRound>> {
    let filter = pb::RoundFilter {
        table_id: scope.table.clone().unwrap_or_default(),
        from: scope.period.map(|(from, _)| timestamp_of_ms(from)),
        to: scope.period.map(|(_, to)| timestamp_of_ms(to)),
        ..Default::default()
    };
    let mut stream = client
        .export(pb::ExportRequest {
            filter: Some(filter),
            format: pb::ExportFormat::Jsonl.into(),
            settled_only: false,
        })
        .await
        .map_err(crate::croupier::status_error)
        .context("the archive's Export")?
        .into_inner();
    let mut rounds = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = stream
        .message()
        .await
        .map_err(crate::croupier::status_error)
        .context("the archive's Export")?
    {
        pending.extend_from_slice(&chunk.data);
        // Chunks end anywhere; whole lines are read as they complete.
        let complete = pending
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        for line in pending[..complete].split(|&b| b == b'\n') {
            if !line.is_empty() {
                rounds.push(exported(line, rounds.len() + 1)?);
            }
        }
        pending.drain(..complete);
    }
    if !pending.is_empty() {
        rounds.push(exported(&pending, rounds.len() + 1)?);
    }
    Ok(rounds)
}

fn exported(line: &[u8], number: usize) -> anyhow::Result<ArchivedRound> {
    let round: ExportedRound = serde_json::from_slice(line)
        .with_context(|| format!("line {number} of the archive's export"))?;
    Ok(ArchivedRound {
        round_id: round.round_id,
        table_id: round.table_id,
        voided: round.voided,
        bets: round
            .bets
            .into_iter()
            .map(|b| ArchivedBet {
                player: b.player_id,
                position: b.position,
                stake: b.stake_minor,
                returned: b.returned_minor,
                refunded: b.refunded_minor,
            })
            .collect(),
    })
}

/// The newest archived round of `table`, of any day (`None`: the archive has none).
pub(crate) async fn newest_round(
    client: &mut Archive,
    table: &str,
) -> anyhow::Result<Option<String>> {
    let page = client
        .list_rounds(pb::ListRoundsRequest {
            filter: Some(pb::RoundFilter {
                table_id: table.to_owned(),
                ..Default::default()
            }),
            page_size: 1,
            page_token: String::new(),
        })
        .await
        .map_err(crate::croupier::status_error)
        .with_context(|| format!("ListRounds of table {table}"))?
        .into_inner();
    Ok(page.rounds.into_iter().next().map(|r| r.round_id))
}

/// Whether the archive has `round` at all.
pub(crate) async fn is_archived(client: &mut Archive, round: &str) -> anyhow::Result<bool> {
    match client
        .get_round(pb::GetRoundRequest {
            round_id: round.to_owned(),
        })
        .await
    {
        Ok(_) => Ok(true),
        Err(status) if status.code() == tonic::Code::NotFound => Ok(false),
        Err(status) => {
            Err(crate::croupier::status_error(status)).with_context(|| format!("GetRound {round}"))
        }
    }
}

/// Where the wallet's movements are read.
pub(crate) enum WalletSource {
    /// `banco wallet`, with an auditor token.
    Service(Box<GrpcWallet>),
    /// Its database itself, read only.
    Database(Store),
}

impl WalletSource {
    /// `grpc://`/`grpcs://` (trusting `ca`), or `sqlite://PATH`/`postgres://…`.
    pub(crate) async fn open(
        url: &str,
        ca: Option<&Path>,
        token: banco_auth::BearerToken,
    ) -> anyhow::Result<WalletSource> {
        if url.starts_with("grpc://") || url.starts_with("grpcs://") {
            let tls = ca
                .map(|pem| {
                    banco_auth::ClientTls::from_ca_pem_file(pem)
                        .with_context(|| format!("--wallet-ca {}", pem.display()))
                })
                .transpose()?;
            // A page of a thousand movements from a busy wallet may take a while.
            let options = GrpcWalletOptions {
                timeout: Duration::from_secs(60),
            };
            let wallet = GrpcWallet::connect(url, tls.as_ref(), token, options)
                .map_err(|e| anyhow::anyhow!("--wallet: {e}"))?;
            return Ok(WalletSource::Service(Box::new(wallet)));
        }
        anyhow::ensure!(
            ca.is_none(),
            "--wallet-ca is for a wallet reached over the network, not `{url}`"
        );
        if let Some(path) = url.strip_prefix("sqlite://") {
            let path = path.split('?').next().unwrap_or(path);
            anyhow::ensure!(
                Path::new(path).is_file(),
                "--wallet {url}: no wallet database at {path}"
            );
        } else if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
            anyhow::bail!(
                "--wallet {url}: expected grpc://HOST:PORT, grpcs://HOST:PORT, sqlite://PATH \
                 or postgres://…"
            );
        }
        let store = Store::open_read_only(url)
            .await
            .with_context(|| format!("--wallet: could not read the wallet database {url}"))?;
        Ok(WalletSource::Database(store))
    }

    /// Every movement of `scope`, oldest first (the cashier's too when no table is given).
    pub(crate) async fn movements(&self, scope: &Scope) -> anyhow::Result<Vec<Movement>> {
        let mut all = Vec::new();
        match self {
            WalletSource::Database(store) => {
                let mut filter = MovementFilter {
                    from_ms: scope.period.map(|(from, _)| from),
                    to_ms: scope.period.map(|(_, to)| to),
                    table: scope.table.clone(),
                    after: None,
                };
                loop {
                    let page = store
                        .movements(&filter, MAX_PAGE)
                        .await
                        .context("reading the wallet's movements")?;
                    all.extend(page.movements);
                    match page.next {
                        Some(next) => filter.after = Some(next),
                        None => break,
                    }
                }
            }
            WalletSource::Service(wallet) => {
                let mut page_token = String::new();
                loop {
                    let page = wallet
                        .movements(pb::MovementsRequest {
                            from: scope.period.map(|(from, _)| timestamp_of_ms(from)),
                            to: scope.period.map(|(_, to)| timestamp_of_ms(to)),
                            table_id: scope.table.clone().unwrap_or_default(),
                            cashier_only: false,
                            page_size: MAX_PAGE,
                            page_token,
                        })
                        .await
                        .context("the wallet's Movements")?;
                    all.extend(page.movements);
                    match page.next_page_token {
                        Some(next) => page_token = next,
                        None => break,
                    }
                }
            }
        }
        Ok(all)
    }

    pub(crate) async fn close(&self) {
        if let WalletSource::Database(store) = self {
            store.close().await;
        }
    }
}

/// The newest archived round of each table in `tables`.
pub(crate) async fn newest_rounds<'a>(
    client: &mut Archive,
    tables: impl IntoIterator<Item = &'a str>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut newest = BTreeMap::new();
    for table in tables {
        if let Some(round) = newest_round(client, table).await? {
            newest.insert(table.to_owned(), round);
        }
    }
    Ok(newest)
}
