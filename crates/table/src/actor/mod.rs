//! The table actor: one tokio task owns one [`Table`]; everyone else holds a cloneable
//! [`TableHandle`] and sends requests over a bounded queue with a oneshot reply. Handlers
//! never lock game state.
//!
//! For each command the actor:
//! 1. stamps it with its [`Clock`] (callers send `now_ms: 0`);
//! 2. answers a repeated `command_id` with the original reply, changing nothing;
//! 3. asks the rules authority ([`Rules`]) about a `DealCard` (a refusal, or no answer at
//!    all, refuses the card) and about the settlement of a `ConfirmResult` (a different
//!    settlement refuses the confirm with an alert);
//! 4. applies it to the table: a refusal is answered at once and journals nothing;
//! 5. queues the accepted command to the journal (its stored form, a
//!    [`banco_records::journal::Entry`], as JSON) and moves on to the next request while
//!    the fsync runs; a separate release task answers the caller, publishes the events
//!    ([`Published`]) and hands finished rounds to the outbox strictly in journal order,
//!    each only once its record is durable (group commit).
//!
//! If the journal fails (a full disk, say), the command is refused
//! ([`ActorError::JournalFailed`], naming the cause) with every command queued behind it,
//! and nothing of them is published. Before the next request the actor closes the
//! journal, opens it again and rebuilds the table from what is on disk, dropping the
//! in-memory state that had run ahead of it: the table is exactly as it was before the
//! failed command, and takes commands again as soon as the journal can be written.
//!
//! The journal's first record is the configuration ([`JournaledConfig`]): a new journal
//! gets it before any command, and a start whose configuration differs from it is
//! refused, naming the first differing setting.
//!
//! [`spawn`] replays the journal first (every record through [`Table::apply`]; the times
//! are in the commands, so the replay is exact), rebuilding the remembered command ids and
//! the outbox's hash chain, then re-queues rounds the archive has not confirmed.
//!
//! On automated and single-player tables the actor also plays the croupier: it shuffles
//! each shoe it opens from a journaled seed (see `autopilot`), burns, opens betting, deals
//! the due cards once betting has closed and the draw time has come (single player: as
//! soon as the player's `Deal` closes betting), confirms the result (`by: "auto"`), opens
//! a new shoe when one runs out, and opens the next round. Each of these is an ordinary
//! journaled command checked like any other, so a restart continues where the journal
//! stopped, with the same shoe order.
//!
//! Reads that need no command ([`TableHandle::snapshot`], [`TableHandle::join`],
//! [`TableHandle::history`], ...) are answered in turn with the commands, each once every
//! earlier record is durable, so what they show is never ahead of the journal; `join` reads
//! everything a new subscriber needs (table, roads, their money, seat and mute) at one
//! instant, with the seq its events start after.
//!
//! Cost per command is independent of the number of players: the snapshot carries the
//! running bet totals, the command-id memory is a hash map with a bounded queue. Only the
//! settlement check at `ConfirmResult` walks the round's bets, once per round.

mod authority;
mod autopilot;
mod clock;
mod error;
mod failure;
mod journaled_config;
pub(crate) mod outbox;
mod recent;
mod recovery;
mod release;
mod remote;
mod rules;
mod task;
mod waiting;
mod wallet;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

pub use banco_records::journal::JOURNAL_FORMAT;
pub use clock::{Clock, ManualClock};
pub use error::ActorError;
pub use journaled_config::JournaledConfig;
/// [`ActorConfig::checkpoint_every`] by default.
pub const DEFAULT_CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

pub use outbox::{
    ArchiveSink, Chain, Checkpoint, ClipFacts, GENESIS_HASH, MemorySink, RETRY_FIRST, RETRY_MAX,
    SealedRound, SinkError, TableSigner, clip_statement, verify_clip_seal,
};
pub use remote::RemoteRules;
pub use rules::{BoxFuture, CardCheck, LocalRules, RefusalKind, Rules, RulesError};
pub use wallet::WalletOptions;

use banco_rules::Scoreboard;
use banco_rules::shoe::ShoeConfig;
use banco_wallet::{MemoryWallet, Wallet};

use crate::book::Stakes;
use crate::command::Command;
use crate::event::{Event, TableSnapshot};
use crate::history::HistoryEntry;
use crate::journal::{CommitStats, GroupCommitConfig, StatsReader};
use crate::policy::TableConfig;
use crate::round_id::RoundId;
#[cfg(doc)]
use crate::table::Table;

/// How many croupier command ids (with their replies) the actor remembers.
pub const REMEMBERED_COMMANDS: usize = 1024;

/// Everything [`spawn`] needs besides its collaborators.
#[derive(Clone, Debug)]
pub struct ActorConfig {
    /// Must be the same config on every start of the same journal (journaled in its first
    /// record; a start with another one is refused).
    pub table: TableConfig,
    /// The shoe the host opens when an `OpenShoe` names none, if it has a default; journaled
    /// with `table`, and likewise fixed for the journal's life.
    pub default_shoe: Option<ShoeConfig>,
    /// The journal file (created if missing).
    pub journal: PathBuf,
    /// The outbox's "delivered up to round N" file (created when the first round is
    /// delivered).
    pub outbox_watermark: PathBuf,
    /// With a `signer`: the table's newest signed checkpoint of its chain's head (see
    /// [`Checkpoint`]), rewritten after every delivery and every `checkpoint_every`.
    pub checkpoint_file: PathBuf,
    /// How often, while no round is delivered, the table signs its head again, so that an
    /// archive's newest checkpoint is never older than this while the table runs.
    pub checkpoint_every: std::time::Duration,
    pub commit: GroupCommitConfig,
    /// Requests that may wait for the actor; senders wait beyond that.
    pub queue: usize,
    /// Signs every sealed round for the archive; `None`: rounds go unsigned (an archive
    /// that requires signatures refuses them).
    pub signer: Option<Arc<TableSigner>>,
    /// Where the table counts rounds, bets, refusals, journal writes and its outbox.
    pub metrics: crate::metrics::TableMetrics,
    /// The players' wallet: every stake is debited from it and every return credited to it.
    pub wallet: Arc<dyn Wallet>,
    pub wallet_options: WalletOptions,
}

impl ActorConfig {
    /// Default commit settings and queue, files `<dir>/<table_id>.journal` and
    /// `<dir>/<table_id>.outbox`, and a wallet in memory (tests; a host sets its own).
    pub fn in_dir(table: TableConfig, dir: &std::path::Path) -> ActorConfig {
        let id = table.table_id.clone();
        ActorConfig {
            table,
            default_shoe: None,
            journal: dir.join(format!("{id}.journal")),
            outbox_watermark: dir.join(format!("{id}.outbox")),
            checkpoint_file: dir.join(format!("{id}.checkpoint.json")),
            checkpoint_every: DEFAULT_CHECKPOINT_EVERY,
            commit: GroupCommitConfig::default(),
            queue: 1024,
            signer: None,
            metrics: crate::metrics::TableMetrics::default(),
            wallet: Arc::new(MemoryWallet::new()),
            wallet_options: WalletOptions::default(),
        }
    }
}

/// The answer to an accepted command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The journal sequence number of the command's record; for a command that changed
    /// nothing (a retried request, a `Tick` too early), the last record before it.
    pub seq: u64,
    pub events: Vec<Event>,
    /// The table right after the command.
    pub snapshot: TableSnapshot,
    /// `true`: this is the original answer to a repeated command id, or to a retried
    /// request (same idempotency key); nothing was applied again.
    pub replayed: bool,
}

/// The table as of a journal record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The last journal record the state reflects (durable when the snapshot is answered).
    pub seq: u64,
    pub table: TableSnapshot,
}

/// One player's money at the table, read at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlayerPosition {
    /// Available to bet, as the wallet last told this table (`None`: it has not; ask the
    /// wallet).
    pub balance: Option<i64>,
    /// Credits and refunds the table owes the player and the wallet has not yet
    /// acknowledged (a payout while the wallet is down, say).
    pub pending: i64,
    /// The round under way, if the player has stakes in it.
    pub round_id: Option<RoundId>,
    /// The player's stakes in the round under way (empty between rounds).
    pub stakes: Stakes,
}

/// Everything a new subscriber is shown of the table and of themself, read at one
/// instant (one request to the actor), as of journal record `seq`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Joined {
    /// The last journal record the state reflects (durable when this is answered): the
    /// subscriber's events start after it.
    pub seq: u64,
    pub table: TableSnapshot,
    pub scoreboard: Scoreboard,
    pub position: PlayerPosition,
    /// The player's seat (1-based), if seated.
    pub seat: Option<u8>,
    /// Who sits at each seat (index 0 is seat 1); empty on a table without seats.
    pub seats: Vec<Option<String>>,
    /// Until when the player's chat is muted, if it is now.
    pub muted_until: Option<u64>,
}

impl PlayerPosition {
    /// What the player has staked on the round under way.
    pub fn in_play(&self) -> i64 {
        self.stakes.values().sum()
    }
}

/// What every subscriber gets for each journaled command, in journal order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    /// The journal sequence number (strictly increasing; gaps are commands that were
    /// never published, which cannot happen while the actor runs).
    pub seq: u64,
    /// Public and private events alike: the fan-out decides who sees which
    /// ([`Event::private_to`]).
    pub events: Vec<Event>,
    pub snapshot: TableSnapshot,
}

/// The table's books, for tests and operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BooksReport {
    /// What the table took from the players' wallets and gave back, net, summed over
    /// every player (minus the house's result and what is in play).
    pub players: i64,
    /// Each player's net with this table (returns less stakes), to reconcile against the
    /// wallet's movements for the table.
    pub nets: BTreeMap<String, i64>,
    pub house: i64,
    pub in_play: i64,
    /// [`Table::check_books`].
    pub check: Result<(), String>,
}

type Reply<T> = oneshot::Sender<Result<T, ActorError>>;

/// A request to the actor.
#[derive(Debug)]
pub(crate) enum Request {
    Submit {
        command_id: Option<String>,
        command: Command,
        seed: Option<u64>,
        reply: Reply<Applied>,
    },
    Snapshot {
        reply: Reply<Snapshot>,
    },
    Balance {
        player: String,
        reply: Reply<Option<i64>>,
    },
    Player {
        player: String,
        reply: Reply<PlayerPosition>,
    },
    Scoreboard {
        reply: Reply<Scoreboard>,
    },
    Books {
        reply: Reply<BooksReport>,
    },
    Join {
        player: String,
        reply: Reply<Joined>,
    },
    History {
        player: String,
        before: Option<RoundId>,
        limit: usize,
        reply: Reply<Vec<HistoryEntry>>,
    },
}

/// A cloneable handle to one table's actor.
#[derive(Clone, Debug)]
pub struct TableHandle {
    table_id: Arc<str>,
    /// The wallet the table spends through, for the reads a host answers without the actor
    /// (a player's balance, their self-limit).
    wallet: Arc<dyn Wallet>,
    requests: mpsc::Sender<Request>,
    published: broadcast::Sender<Arc<Published>>,
    stats: StatsReader,
}

impl TableHandle {
    /// Applies `command` (its `now_ms` is overwritten by the actor's clock). With a
    /// `command_id`, a repeat of the same command returns the original answer
    /// (`replayed: true`) without applying it again.
    pub async fn submit(
        &self,
        command_id: Option<String>,
        command: Command,
    ) -> Result<Applied, ActorError> {
        self.ask(|reply| Request::Submit {
            command_id,
            command,
            seed: None,
            reply,
        })
        .await
    }

    /// [`TableHandle::submit`] with the shuffle seed of an `OpenShoe` on an automated or
    /// single-player table chosen by the caller instead of drawn from the OS (tests and
    /// audits replaying a known shoe). The seed is journaled either way; it is ignored for
    /// any other command and on live tables.
    pub async fn submit_seeded(
        &self,
        command_id: Option<String>,
        command: Command,
        seed: u64,
    ) -> Result<Applied, ActorError> {
        self.ask(|reply| Request::Submit {
            command_id,
            command,
            seed: Some(seed),
            reply,
        })
        .await
    }

    /// Every journaled command's events, in journal order, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Published>> {
        self.published.subscribe()
    }

    /// The table as of the last journal record, answered once that record is durable,
    /// with its seq: a state read that needs no command.
    pub async fn snapshot(&self) -> Result<Snapshot, ActorError> {
        self.ask(|reply| Request::Snapshot { reply }).await
    }

    /// The player's available balance as the wallet last told this table.
    pub async fn balance(&self, player: &str) -> Result<Option<i64>, ActorError> {
        let player = player.to_owned();
        self.ask(|reply| Request::Balance { player, reply }).await
    }

    /// The player's balance and exact stakes in the round under way, read together.
    pub async fn player(&self, player: &str) -> Result<PlayerPosition, ActorError> {
        let player = player.to_owned();
        self.ask(|reply| Request::Player { player, reply }).await
    }

    /// The results and roads of the shoe in play (of the last shoe until a new one opens).
    pub async fn scoreboard(&self) -> Result<Scoreboard, ActorError> {
        self.ask(|reply| Request::Scoreboard { reply }).await
    }

    pub async fn books(&self) -> Result<BooksReport, ActorError> {
        self.ask(|reply| Request::Books { reply }).await
    }

    /// A new subscriber's view: the table, its roads, the player's money, seat and mute,
    /// all as of one journal record (answered once it is durable, like
    /// [`TableHandle::snapshot`]).
    pub async fn join(&self, player: &str) -> Result<Joined, ActorError> {
        let player = player.to_owned();
        self.ask(|reply| Request::Join { player, reply }).await
    }

    /// The player's rounds with a stake, newest first, strictly older than `before` when
    /// given, at most `limit` ([`Table::history`]).
    pub async fn history(
        &self,
        player: &str,
        before: Option<RoundId>,
        limit: usize,
    ) -> Result<Vec<HistoryEntry>, ActorError> {
        let player = player.to_owned();
        self.ask(|reply| Request::History {
            player,
            before,
            limit,
            reply,
        })
        .await
    }

    pub fn table_id(&self) -> &str {
        &self.table_id
    }

    /// The players' wallet the table spends through.
    pub fn wallet(&self) -> &Arc<dyn Wallet> {
        &self.wallet
    }

    /// The journal's group-commit counters (fsyncs = `commits`).
    pub fn commit_stats(&self) -> CommitStats {
        self.stats.read()
    }

    /// The journal's longest commit ([`CommitStats::longest`]) counts from now on.
    pub fn restart_longest_commit(&self) {
        self.stats.restart_longest();
    }

    async fn ask<T>(&self, request: impl FnOnce(Reply<T>) -> Request) -> Result<T, ActorError> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(request(reply))
            .await
            .map_err(|_| ActorError::Stopped)?;
        answer.await.map_err(|_| ActorError::Stopped)?
    }
}

/// What [`read_published`] read again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Republished {
    /// The table as the record before the first one read left it.
    pub before: TableSnapshot,
    /// Its shoe's results and roads then.
    pub scoreboard: Scoreboard,
    /// Each record's events and the table after it, in journal order, as they were
    /// published.
    pub records: Vec<Published>,
}

/// The events of journal records `after + 1 ..= through` exactly as the actor published
/// them, replayed from `config`'s journal file, which is only read (the table's actor may
/// be writing it): for a publisher that lost them before they left the process (a crash,
/// a long outage of where they go). Blocking: it replays the journal from its start.
pub fn read_published(
    config: &ActorConfig,
    after: u64,
    through: u64,
) -> Result<Republished, ActorError> {
    let kept = recovery::read_published(config, after, through)?;
    let (before, scoreboard) = kept.before.ok_or_else(|| {
        ActorError::Startup(format!(
            "journal {}: no table to read records after {after} from",
            config.journal.display()
        ))
    })?;
    Ok(Republished {
        before,
        scoreboard,
        records: kept.records,
    })
}

/// The running actor: its tasks, and a way to stop them. Dropping it leaves the actor
/// running until every [`TableHandle`] is gone.
#[derive(Debug)]
pub struct ActorTask {
    actor: JoinHandle<()>,
    release: JoinHandle<()>,
    outbox: JoinHandle<()>,
    wallet: JoinHandle<()>,
    stop: Option<oneshot::Sender<()>>,
}

impl ActorTask {
    /// Stops taking requests, answers and publishes everything already journaled, shuts
    /// the journal down cleanly, and stops the outbox (rounds not yet delivered are sent
    /// again on the next start).
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Err(e) = (&mut self.actor).await {
            tracing::error!(error = %e, "table actor task failed");
        }
        if let Err(e) = (&mut self.release).await {
            tracing::error!(error = %e, "table release task failed");
        }
        self.outbox.abort();
        let _ = (&mut self.outbox).await;
        // Whatever it had in hand is owed in the journal, and sent again at the next start.
        self.wallet.abort();
        let _ = (&mut self.wallet).await;
    }

    /// Whether the actor task has ended.
    pub fn is_finished(&self) -> bool {
        self.actor.is_finished()
    }
}

/// Opens (or creates) the journal, replays it, and starts the actor, its release task and
/// its outbox. See the module documentation.
pub async fn spawn(
    config: ActorConfig,
    rules: Arc<dyn Rules>,
    sink: Arc<dyn ArchiveSink>,
    clock: Clock,
) -> Result<(TableHandle, ActorTask), ActorError> {
    task::spawn(config, rules, sink, clock).await
}
