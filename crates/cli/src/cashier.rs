//! `banco cashier`: the casino's cashier against `banco wallet`: deposits and withdrawals
//! (each under an idempotency key, printed before it is sent, so a retry with `--key` moves
//! the money once), a player's balance and statement, blocking an account. Euros in and
//! out; times RFC 3339 in UTC. Exit status: 1 refused, 2 bad input, 3 unavailable (see
//! `exit`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use banco_rules::Money;
use banco_wallet::grpc::{GrpcWallet, GrpcWalletOptions};
use banco_wallet::{AccountView, Cashier as _, Receipt, TxId, Wallet as _, WalletError};

use crate::exit::Refused;
use crate::times::TimeArgs;

#[derive(Debug, clap::Args)]
pub(crate) struct CashierArgs {
    /// A `cashier` token (`banco token issue --role cashier`); an `auditor` token may read
    /// statements.
    #[arg(long, value_name = "FILE")]
    token_file: PathBuf,
    /// The wallet: `grpc://HOST:PORT` (this machine only) or `grpcs://HOST:PORT` with
    /// `--ca-cert`.
    #[arg(long, default_value = "grpc://127.0.0.1:7104")]
    server: String,
    /// The CA that signed the wallet's certificate (PEM), for `grpcs://`.
    #[arg(long, value_name = "PEM")]
    ca_cert: Option<PathBuf>,
    /// The longest to wait for the wallet's answer.
    #[arg(long, default_value_t = 5_000, value_name = "MS")]
    timeout_ms: u64,
    #[command(flatten)]
    times: TimeArgs,
    #[command(subcommand)]
    command: CashierCommand,
}

#[derive(Debug, clap::Args)]
struct Account {
    /// The player's account (the subject of the player's token).
    player: String,
    /// The account's currency (ISO 4217).
    #[arg(long, default_value = "EUR")]
    currency: String,
}

#[derive(Debug, clap::Args)]
struct Cash {
    #[command(flatten)]
    account: Account,
    /// In euros (or the currency's major unit): `100`, `100.5`, `100.50`.
    amount: String,
    /// The idempotency key; default a fresh one, printed first. Sending the same command
    /// again with `--key` (after a timeout, say) moves the money once.
    #[arg(long)]
    key: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
enum CashierCommand {
    /// Pay money into the player's account.
    Deposit(Cash),
    /// Pay money out of the player's account.
    Withdraw(Cash),
    /// The player's balance, block and own limit.
    Balance(Account),
    /// The player's movements, newest first.
    Statement {
        #[command(flatten)]
        account: Account,
        /// Movements per page (1 to 1000).
        #[arg(long, default_value_t = 20)]
        page_size: u32,
        /// Where to start: the token a previous page printed.
        #[arg(long, value_name = "TOKEN")]
        page: Option<String>,
    },
    /// Block the account: no more bets (the cashier may still pay out).
    Block(Account),
    /// Lift a block.
    Unblock(Account),
}

pub(crate) fn run(args: &CashierArgs) -> anyhow::Result<ExitCode> {
    let bearer = crate::player::connect::read_token(&args.token_file)?;
    let tls = args
        .ca_cert
        .as_deref()
        .map(|path| {
            banco_auth::ClientTls::from_ca_pem_file(path)
                .with_context(|| format!("--ca-cert {}", path.display()))
        })
        .transpose()?;
    let command = Checked::of(&args.command)?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the async runtime")?;
    runtime.block_on(async {
        let options = GrpcWalletOptions {
            timeout: Duration::from_millis(args.timeout_ms),
        };
        let wallet = GrpcWallet::connect(&args.server, tls.as_ref(), bearer, options)
            .map_err(|e| anyhow::anyhow!("--server: {e}"))?;
        let times = args.times.times();
        match command {
            Checked::Cash {
                deposit,
                player,
                currency,
                amount,
                key,
                fresh,
            } => {
                if fresh {
                    println!("key {key} (to send this again safely: --key {key})");
                }
                let cash = banco_wallet::Cash::new(&key, player, currency, amount);
                let receipt = if deposit {
                    wallet.deposit(&cash).await
                } else {
                    wallet.withdraw(&cash).await
                };
                let receipt = answered(receipt, currency)?;
                print_cash(deposit, player, amount, &receipt);
            }
            Checked::Balance { player, currency } => {
                let view = answered(wallet.account(player, currency).await, currency)?;
                print_account(&view, &times);
            }
            Checked::Block {
                player,
                currency,
                blocked,
            } => {
                let view = answered(
                    wallet.set_blocked(player, currency, blocked).await,
                    currency,
                )?;
                print_account(&view, &times);
            }
            Checked::Statement {
                player,
                currency,
                page_size,
                page,
            } => {
                let statement = answered(
                    wallet.statement(player, currency, page_size, page).await,
                    currency,
                )?;
                if statement.movements.is_empty() {
                    println!("no movements of {player} in {currency}");
                }
                for m in &statement.movements {
                    let at = times.of(&banco_wire::convert::timestamp_of_ms(m.at_ms));
                    let place = if m.table.is_empty() {
                        "cashier".to_owned()
                    } else {
                        format!("{} {} {}", m.table, m.round, m.bet)
                    };
                    println!(
                        "{at}  {:<10} {:>12}  balance {:>12}  {place}  {}",
                        m.kind.as_str(),
                        Money::new(m.delta, &m.currency).signed().to_string(),
                        Money::new(m.balance, &m.currency).to_string(),
                        m.tx
                    );
                }
                if let Some(next) = statement.next_page_token {
                    println!("more: --page {next}");
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// A command whose arguments are all checked, before anything is sent.
enum Checked<'a> {
    Cash {
        deposit: bool,
        player: &'a str,
        currency: &'a str,
        amount: i64,
        key: TxId,
        /// The key was made here, not given.
        fresh: bool,
    },
    Balance {
        player: &'a str,
        currency: &'a str,
    },
    Block {
        player: &'a str,
        currency: &'a str,
        blocked: bool,
    },
    Statement {
        player: &'a str,
        currency: &'a str,
        page_size: u32,
        page: Option<&'a str>,
    },
}

impl<'a> Checked<'a> {
    fn of(command: &'a CashierCommand) -> anyhow::Result<Checked<'a>> {
        Ok(match command {
            CashierCommand::Deposit(cash) => Checked::cash(true, cash)?,
            CashierCommand::Withdraw(cash) => Checked::cash(false, cash)?,
            CashierCommand::Balance(a) => Checked::Balance {
                player: checked(a)?,
                currency: &a.currency,
            },
            CashierCommand::Block(a) | CashierCommand::Unblock(a) => Checked::Block {
                player: checked(a)?,
                currency: &a.currency,
                blocked: matches!(command, CashierCommand::Block(_)),
            },
            CashierCommand::Statement {
                account,
                page_size,
                page,
            } => {
                if !(1..=banco_wallet::store::MAX_PAGE).contains(page_size) {
                    bail!(
                        "--page-size {page_size}: 1 to {}",
                        banco_wallet::store::MAX_PAGE
                    );
                }
                Checked::Statement {
                    player: checked(account)?,
                    currency: &account.currency,
                    page_size: *page_size,
                    page: page.as_deref(),
                }
            }
        })
    }

    fn cash(deposit: bool, cash: &'a Cash) -> anyhow::Result<Checked<'a>> {
        let player = checked(&cash.account)?;
        let amount = banco_rules::parse_stake("amount", &cash.amount)?;
        let (key, fresh) = match &cash.key {
            Some(key) => (TxId::new(key.as_str()).context("--key")?, false),
            None => {
                let id = banco_auth::client::fresh_id().context("no randomness for a key")?;
                let kind = if deposit { "deposit" } else { "withdrawal" };
                (TxId::new(format!("cashier:{kind}:{id}"))?, true)
            }
        };
        Ok(Checked::Cash {
            deposit,
            player,
            currency: &cash.account.currency,
            amount,
            key,
            fresh,
        })
    }
}

/// The player, once the account's currency reads as one.
fn checked(account: &Account) -> anyhow::Result<&str> {
    let currency = &account.currency;
    if !(currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase())) {
        bail!("--currency {currency}: not an ISO 4217 code (three capital letters, e.g. EUR)");
    }
    if account.player.is_empty() {
        bail!("the player is empty");
    }
    Ok(&account.player)
}

/// The wallet's answer, or the error that exits as it should: 1 refused, 2 the request
/// was wrong, 3 no answer (send it again with the same key).
fn answered<T>(result: Result<T, WalletError>, currency: &str) -> anyhow::Result<T> {
    match result {
        Ok(value) => Ok(value),
        Err(WalletError::Invalid(why)) => bail!("the wallet refused the request: {why}"),
        Err(WalletError::Unavailable(why)) => {
            Err(crate::grpc::status_error(&tonic::Status::unavailable(why)))
                .context("no answer from the wallet: nothing is known to have moved; send the same command again (with its --key)")
        }
        Err(refusal) => Err(Refused(format!("REFUSED: {}", in_words(&refusal, currency))).into()),
    }
}

/// A refusal as a person reads it: amounts in the currency, not minor units.
fn in_words(refusal: &WalletError, currency: &str) -> String {
    let money = |minor: i64| Money::new(minor, currency).to_string();
    match refusal {
        WalletError::InsufficientFunds { needed, available } => format!(
            "insufficient funds: {} asked, {} available",
            money(*needed),
            money(*available)
        ),
        WalletError::SelfLimit { limit, asked } => format!(
            "over the player's own limit of {} per bet ({} asked)",
            money(*limit),
            money(*asked)
        ),
        WalletError::Conflict { tx, why } => {
            format!("key {tx} was used before for another request: {why}")
        }
        other => other.to_string(),
    }
}

fn print_cash(deposit: bool, player: &str, amount: i64, receipt: &Receipt) {
    let money = |minor: i64| Money::new(minor, &receipt.currency).to_string();
    let (done, to) = if deposit {
        ("deposited", "to")
    } else {
        ("withdrew", "from")
    };
    let again = if receipt.replayed {
        " (already done under this key: nothing moved now)"
    } else {
        ""
    };
    println!(
        "{done} {} {to} {player}: balance {}{again}",
        money(amount),
        money(receipt.balance)
    );
}

fn print_account(view: &AccountView, times: &crate::times::Times) {
    let money = |minor: i64| Money::new(minor, &view.currency).to_string();
    let blocked = if view.blocked { ", BLOCKED" } else { "" };
    println!(
        "{}: {} ({}){blocked}",
        view.player,
        money(view.balance),
        view.currency
    );
    let limit = &view.self_limit;
    match limit.max_bet {
        Some(max) => println!("own limit: {} per bet", money(max)),
        None => println!("own limit: none"),
    }
    if let Some((next, at)) = limit.pending {
        let when = times.of(&banco_wire::convert::timestamp_of_ms(at));
        match next {
            Some(max) => println!("from {when}: {} per bet", money(max)),
            None => println!("from {when}: none"),
        }
    }
}
