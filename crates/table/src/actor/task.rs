//! The actor task itself: start-up (replay), and the loop that owns the table.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use banco_records::journal::{self, JOURNAL_FORMAT};
use banco_rules::shoe::{Shoe, ShoeState};
use banco_rules::{Bet, Card};
use banco_wallet::WalletError;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::autopilot::{AUTO, Seed, ShuffledOrder, reveal};

use super::failure::Failure;
use super::journaled_config::{JournaledConfig, check_same};
use super::outbox::{self, Chain, SealedRound, Watermark};
use super::recent::RecentCommands;
use super::release::{self, Answer, Record, Release, Waiter};
use super::rules::{CardCheck, Rules, RulesError};
use super::wallet;
use super::{
    ActorConfig, ActorError, ActorTask, Applied, ArchiveSink, BooksReport, Clock, Joined,
    PlayerPosition, REMEMBERED_COMMANDS, Reply, Request, Snapshot, TableHandle,
};
use crate::command::{CardSource, Command, DebitOutcome};
use crate::event::{Event, RevealedShuffle};
use crate::fairness::ShuffleKey;
use crate::journal::{GroupCommitter, Journal, StatsReader};
use crate::phase::Phase;
use crate::policy::Pacing;
use crate::refusal::Refusal;
use crate::table::Table;

/// What the journal keeps of a shoe's shuffle: the chosen seed, or the drawn key in hex.
type Journaled = (Option<u64>, Option<String>);

/// The longest the actor sleeps without re-reading its clock while a deadline is pending
/// (so that a clock that jumps, or a manual test clock, is noticed).
const MAX_TICK_SLEEP: Duration = Duration::from_secs(1);

/// What replaying the journal rebuilt.
struct Replayed {
    table: Table,
    last_seq: u64,
    chain: Chain,
    recent: RecentCommands,
    undelivered: VecDeque<SealedRound>,
    order: Option<ShuffledOrder>,
    owed_reveal: Option<RevealedShuffle>,
}

/// The command of a journal record written when each table kept its players' balances
/// itself, if it is one: such a journal holds money no wallet knows of.
fn before_the_wallet(payload: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let command = value.get("command")?.get("command")?.as_str()?;
    ["deposit", "withdraw", "set_self_limit"]
        .contains(&command)
        .then(|| command.to_owned())
}

/// The records a reader asked [`replay`] for, and the table as the record before them left
/// it.
pub(super) struct Kept {
    pub(super) after: u64,
    pub(super) through: u64,
    pub(super) before: Option<(crate::event::TableSnapshot, banco_rules::Scoreboard)>,
    pub(super) records: Vec<super::Published>,
}

fn replay(
    config: &ActorConfig,
    records: Vec<crate::journal::Record>,
    watermark: &Watermark,
    mut kept: Option<&mut Kept>,
) -> Result<Replayed, ActorError> {
    let startup = ActorError::Startup;
    let mut table =
        Table::new(config.table.clone()).map_err(|e| startup(format!("table config: {e}")))?;
    let mut chain = Chain::new(config.signer.clone());
    let mut recent = RecentCommands::new(REMEMBERED_COMMANDS);
    let mut undelivered = VecDeque::new();
    let mut order = None;
    let mut owed_reveal = None;
    let journal = config.journal.display();
    let mut records = records.into_iter();
    let Some(first) = records.next() else {
        return Err(startup(format!(
            "journal {journal}: no configuration record"
        )));
    };
    let journaled: JournaledConfig = serde_json::from_slice(&first.payload).map_err(|e| {
        startup(format!(
            "journal {journal}: record {} is not the table's configuration: {e}",
            first.seq
        ))
    })?;
    check_same(&journaled, &journaled_config(config)).map_err(|difference| {
        startup(format!(
            "journal {journal} was written under another configuration: {difference}; start \
             the table with the journal's configuration (limits, paytable and timings cannot \
             change under a live journal)"
        ))
    })?;
    let mut last_seq = first.seq;
    for record in records {
        if let Some(kept) = kept.as_deref_mut() {
            if record.seq > kept.through {
                break;
            }
            if record.seq > kept.after && kept.before.is_none() {
                kept.before = Some((table.snapshot(), table.scoreboard().clone()));
            }
        }
        let entry: journal::Entry = serde_json::from_slice(&record.payload).map_err(|e| {
            match before_the_wallet(&record.payload) {
                Some(command) => startup(format!(
                    "journal {journal}: record {} is a `{command}` of the table's own ledger,                      from before the tables spent through a wallet; pay out the balances it holds                      with the version that wrote it, then start this table on a new journal",
                    record.seq
                )),
                None => startup(format!("journal {journal}: record {}: {e}", record.seq)),
            }
        })?;
        let command = Command::from(entry.command);
        let events = table.apply(&command).map_err(|refusal| {
            startup(format!(
                "journal {journal}: record {} ({command:?}) is refused on replay: {refusal} \
                 (a bug, or a journal replayed with another table config)",
                record.seq
            ))
        })?;
        if let Command::OpenShoe { config: shoe, .. } = &command {
            let seed = match (entry.shuffle_seed, &entry.shuffle_key) {
                (_, Some(key)) => {
                    Some(Seed::Committed(ShuffleKey::from_hex(key).map_err(|e| {
                        startup(format!("journal {journal}: record {}: {e}", record.seq))
                    })?))
                }
                (Some(seed), None) => Some(Seed::Chosen(seed)),
                (None, None) => None,
            };
            order = match seed {
                Some(seed) => Some(ShuffledOrder::new(*shoe, seed).map_err(|e| {
                    startup(format!("journal {journal}: record {}: {e}", record.seq))
                })?),
                None => None,
            };
        }
        let mut events = events;
        reveal(&mut events, order.as_ref(), &mut owed_reveal);
        if let Some(kept) = kept.as_deref_mut()
            && record.seq > kept.after
        {
            kept.records.push(super::Published {
                seq: record.seq,
                events: events.clone(),
                snapshot: table.snapshot(),
            });
        }
        for event in &events {
            if let Event::RoundFinished(round) = event {
                let sealed = chain.seal(round.as_ref().clone()).map_err(|e| {
                    startup(format!("journal {journal}: record {}: {e}", record.seq))
                })?;
                if sealed.seq == watermark.delivered_seq
                    && let Some(hash) = &watermark.hash
                    && *hash != sealed.hash
                {
                    return Err(startup(format!(
                        "outbox watermark {}: round {} was delivered with hash {hash}, the journal \
                         gives {}; the journal is not the one whose rounds were archived",
                        config.outbox_watermark.display(),
                        sealed.seq,
                        sealed.hash
                    )));
                }
                if sealed.seq > watermark.delivered_seq {
                    undelivered.push_back(sealed);
                }
            }
        }
        if let Some(id) = entry.command_id {
            let applied = Applied {
                seq: record.seq,
                events,
                snapshot: table.snapshot(),
                replayed: false,
            };
            recent.insert(id, command, applied);
        }
        last_seq = record.seq;
    }
    if let Some(kept) = kept
        && kept.before.is_none()
    {
        kept.before = Some((table.snapshot(), table.scoreboard().clone()));
    }
    if watermark.delivered_seq > chain.last_seq() {
        return Err(startup(format!(
            "outbox watermark {}: round {} delivered, but the journal holds {} rounds",
            config.outbox_watermark.display(),
            watermark.delivered_seq,
            chain.last_seq()
        )));
    }
    table
        .check_books()
        .map_err(|e| startup(format!("journal {journal}: books after replay: {e}")))?;
    Ok(Replayed {
        table,
        last_seq,
        chain,
        recent,
        undelivered,
        order,
        owed_reveal,
    })
}

fn journaled_config(config: &ActorConfig) -> JournaledConfig {
    JournaledConfig {
        table: config.table.clone(),
        default_shoe: config.default_shoe,
        format: JOURNAL_FORMAT,
    }
}

/// Closes a failed journal's committer, opens the file again and replays it (blocking).
fn reopen(
    old: Option<GroupCommitter>,
    config: &ActorConfig,
    stats: &StatsReader,
) -> Result<(GroupCommitter, Replayed), String> {
    if let Some(old) = old
        && let Err(e) = old.shutdown()
    {
        tracing::warn!(error = %e, "closing the failed journal");
    }
    let watermark = Watermark::read(&config.outbox_watermark)?;
    let (journal, records) =
        Journal::open(&config.journal).map_err(|e| format!("cannot be reopened: {e}"))?;
    let replayed = replay(config, records, &watermark, None).map_err(|e| e.to_string())?;
    let committer = GroupCommitter::spawn_counting(
        journal,
        config.commit,
        stats,
        Some(config.metrics.journal()),
    )
    .map_err(|e| format!("cannot be restarted: {e}"))?;
    Ok((committer, replayed))
}

/// The events of journal records `after + 1 ..= through` as the actor published them,
/// replayed from the journal file (only read), with the table as record `after` left it.
pub(super) fn read_published(
    config: &ActorConfig,
    after: u64,
    through: u64,
) -> Result<Kept, ActorError> {
    let records = Journal::read(&config.journal).map_err(|e| {
        ActorError::Startup(format!(
            "journal {}: cannot be read: {e}",
            config.journal.display()
        ))
    })?;
    let mut kept = Kept {
        after,
        through,
        before: None,
        records: Vec::new(),
    };
    replay(config, records, &Watermark::default(), Some(&mut kept))?;
    Ok(kept)
}

pub(super) async fn spawn(
    config: ActorConfig,
    rules: Arc<dyn Rules>,
    sink: Arc<dyn ArchiveSink>,
    clock: Clock,
) -> Result<(TableHandle, ActorTask), ActorError> {
    config
        .table
        .validate()
        .map_err(|e| ActorError::Startup(format!("table config: {e}")))?;
    let watermark = Watermark::read(&config.outbox_watermark).map_err(ActorError::Startup)?;
    let (mut journal, mut records) = Journal::open(&config.journal)
        .map_err(|e| ActorError::Startup(format!("cannot open the journal: {e}")))?;
    if records.is_empty() {
        // A new journal: the configuration goes first, durable before any command.
        let payload = serde_json::to_vec(&journaled_config(&config))
            .map_err(|e| ActorError::Startup(format!("cannot encode the table config: {e}")))?;
        let offset = journal.size_bytes();
        let seq = journal
            .append(&payload)
            .map_err(|e| ActorError::Startup(format!("cannot journal the table config: {e}")))?;
        records.push(crate::journal::Record {
            seq,
            offset,
            payload,
        });
    }
    let replayed = replay(&config, records, &watermark, None)?;
    tracing::info!(
        table = %config.table.table_id,
        records = replayed.last_seq,
        rounds = replayed.chain.last_seq(),
        undelivered = replayed.undelivered.len(),
        "table replayed from its journal"
    );
    let committer = GroupCommitter::spawn_counting(
        journal,
        config.commit,
        &StatsReader::default(),
        Some(config.metrics.journal()),
    )
    .map_err(|e| ActorError::Startup(format!("cannot start the journal: {e}")))?;

    let queue = config.queue.max(1);
    let (requests, inbox) = mpsc::channel(queue);
    let (published, _) = broadcast::channel(queue.max(1024));
    let (to_release, release_queue) = mpsc::channel(queue.max(1024));
    let (to_outbox, outbox_queue) = mpsc::unbounded_channel();
    let (to_wallet, wallet_queue) = mpsc::unbounded_channel();
    let (stop, stopped) = oneshot::channel();
    let failed = Arc::new(Failure::default());

    let checkpoints = config.signer.as_ref().map(|signer| outbox::Checkpoints {
        table: config.table.table_id.clone(),
        signer: Arc::clone(signer),
        file: config.checkpoint_file.clone(),
        every: config.checkpoint_every,
    });
    let head = (
        replayed.chain.last_seq(),
        replayed.chain.last_hash().to_owned(),
    );
    let outbox = tokio::spawn(outbox::deliver(
        sink,
        config.outbox_watermark.clone(),
        replayed.undelivered,
        outbox_queue,
        config.metrics.clone(),
        (checkpoints, head),
    ));
    let release = tokio::spawn(release::run(
        release_queue,
        published.clone(),
        to_outbox,
        to_wallet,
        Arc::clone(&failed),
        config.metrics.clone(),
    ));
    let handle = TableHandle {
        table_id: Arc::from(config.table.table_id.as_str()),
        wallet: Arc::clone(&config.wallet),
        requests,
        published,
        stats: committer.stats_reader(),
    };
    // What the journal says is owed goes out again: the wallet answers a repeated id with
    // its first answer.
    let wallet = tokio::spawn(wallet::run(
        Arc::clone(&config.wallet),
        config.wallet_options.clone(),
        config.table.policy.currency.as_str().to_owned(),
        replayed.table.wallet().owed().cloned().collect(),
        wallet_queue,
        handle.clone(),
        config.metrics.clone(),
    ));
    let metrics = config.metrics.clone();
    let actor = Actor {
        stats: committer.stats_reader(),
        journal: Some(committer),
        config,
        table: replayed.table,
        rules,
        clock,
        next_seq: replayed.last_seq + 1,
        chain: replayed.chain,
        recent: replayed.recent,
        release: to_release,
        failed,
        idle_deadline: None,
        order: replayed.order,
        owed_reveal: replayed.owed_reveal,
        stalled: false,
        metrics,
        waiting: HashMap::new(),
    };
    let actor = tokio::spawn(actor.run(inbox, stopped));
    Ok((
        handle,
        ActorTask {
            actor,
            release,
            outbox,
            wallet,
            stop: Some(stop),
        },
    ))
}

struct Actor {
    /// What the table was started with: a journal that failed is reopened from it.
    config: ActorConfig,
    table: Table,
    rules: Arc<dyn Rules>,
    clock: Clock,
    /// `None` only between closing a failed journal and reopening it.
    journal: Option<GroupCommitter>,
    /// The commit counters, carried on by a reopened journal.
    stats: StatsReader,
    /// The seq the journal will give the next record (records are queued in order from
    /// this task only, and the journal numbers them without gaps).
    next_seq: u64,
    chain: Chain,
    recent: RecentCommands,
    release: mpsc::Sender<Release>,
    failed: Arc<Failure>,
    /// A deadline whose `Tick` changed nothing (an automated draw time): not re-armed.
    idle_deadline: Option<u64>,
    /// The order of the shoe in play on a table the actor deals itself (`None` on live
    /// tables, and for a shoe opened without a seed).
    order: Option<ShuffledOrder>,
    /// The key of a committed shoe ended between rounds, until a round carries it.
    owed_reveal: Option<RevealedShuffle>,
    /// One of the actor's own commands failed (validator unreachable, say): retried at the
    /// next wake-up.
    stalled: bool,
    metrics: crate::metrics::TableMetrics,
    /// Players waiting for the wallet's answer to a bet request, by (player, key): the
    /// request and its retries, answered together once the answer is journaled.
    waiting: HashMap<(String, String), Vec<Reply<Applied>>>,
}

impl Actor {
    async fn run(mut self, mut inbox: mpsc::Receiver<Request>, stopped: oneshot::Receiver<()>) {
        let mut stopped = stopped;
        let mut watch_stop = true;
        // Requests the wallet never answered before the restart: nobody waits for them now,
        // and a debit may or may not have been taken, so every one is cancelled.
        self.refuse_unanswered().await;
        // A restart continues the round where the journal stopped.
        self.tick_if_due().await;
        self.drive().await;
        loop {
            let deadline = self.deadline();
            let sleep = deadline.map_or(MAX_TICK_SLEEP, |d| {
                Duration::from_millis(d.saturating_sub(self.clock.now_ms())).min(MAX_TICK_SLEEP)
            });
            // A failed journal is reopened at the next request, or within a second on a
            // table that plays by itself.
            let wake = deadline.is_some() || self.stalled || self.failed.is_set();
            tokio::select! {
                biased;
                stop = &mut stopped, if watch_stop => match stop {
                    Ok(()) => break,
                    // The ActorTask was dropped: keep serving until the handles go.
                    Err(_) => watch_stop = false,
                },
                request = inbox.recv() => match request {
                    Some(request) => {
                        self.recover_if_failed().await;
                        self.handle(request).await;
                        self.tick_if_due().await;
                        self.drive().await;
                    }
                    None => break,
                },
                () = tokio::time::sleep(sleep), if wake => {
                    self.recover_if_failed().await;
                    self.tick_if_due().await;
                    self.drive().await;
                }
            }
        }
        // Let the release task drain, then close the journal once its queue is written.
        let Actor {
            journal, release, ..
        } = self;
        drop(release);
        let Some(committer) = journal else {
            return;
        };
        match tokio::task::spawn_blocking(move || committer.shutdown()).await {
            Ok(Ok(_journal)) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "journal shutdown"),
            Err(e) => tracing::error!(error = %e, "journal shutdown task"),
        }
    }

    fn deadline(&self) -> Option<u64> {
        if self.failed.is_set() {
            return None;
        }
        self.table
            .next_deadline()
            .filter(|&d| Some(d) != self.idle_deadline)
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::Submit {
                command_id,
                command,
                seed,
                reply,
            } => {
                self.tick_if_due().await;
                self.submit(command_id, command, seed, reply).await;
            }
            Request::Snapshot { reply } => {
                let snapshot = Snapshot {
                    seq: self.next_seq - 1,
                    table: self.table.snapshot(),
                };
                self.answer(reply, Ok(snapshot)).await;
            }
            Request::Balance { player, reply } => {
                // What the wallet last told this table.
                let balance = self.table.balance(&player);
                self.answer(reply, Ok(balance)).await;
            }
            Request::Player { player, reply } => {
                let position = self.position(&player);
                self.answer(reply, Ok(position)).await;
            }
            Request::Join { player, reply } => {
                let joined = Joined {
                    seq: self.next_seq - 1,
                    table: self.table.snapshot(),
                    scoreboard: self.table.scoreboard().clone(),
                    position: self.position(&player),
                    seat: self.table.seat_of(&player),
                    seats: self.table.seats(),
                    muted_until: self.table.muted_until(&player, self.clock.now_ms()),
                };
                self.answer(reply, Ok(joined)).await;
            }
            Request::History {
                player,
                before,
                limit,
                reply,
            } => {
                let history = self.table.history(&player, before.as_ref(), limit);
                self.answer(reply, Ok(history)).await;
            }
            Request::Scoreboard { reply } => {
                let scoreboard = self.table.scoreboard().clone();
                self.answer(reply, Ok(scoreboard)).await;
            }
            Request::Books { reply } => {
                let ledger = self.table.ledger();
                let report = BooksReport {
                    players: ledger.nets().values().sum(),
                    nets: ledger.nets().clone(),
                    house: ledger.house(),
                    in_play: ledger.in_play(),
                    check: self.table.check_books(),
                };
                self.answer(reply, Ok(report)).await;
            }
        }
    }

    /// The player's money at the table, now.
    fn position(&self, player: &str) -> PlayerPosition {
        let stakes = self.table.stakes_in_play(player);
        PlayerPosition {
            balance: self.table.balance(player),
            pending: self.table.wallet().owed_to(player),
            round_id: self
                .table
                .round_id()
                .filter(|_| !stakes.is_empty())
                .cloned(),
            stakes,
        }
    }

    /// Answers after everything queued before it is durable (or with the journal's
    /// failure).
    async fn answer<T: Send + 'static>(&self, reply: Reply<T>, value: Result<T, ActorError>) {
        let answer: Answer = Box::new(move |journal| {
            let _ = reply.send(match journal {
                Ok(()) => value,
                Err(reason) => Err(ActorError::JournalFailed(reason)),
            });
        });
        if let Err(mpsc::error::SendError(Release::Answer(answer))) =
            self.release.send(Release::Answer(answer)).await
        {
            answer(Err("the release task has stopped".to_owned()));
        }
    }

    /// After a journal failure: once every reply queued before has gone out, closes the
    /// journal, opens it again (which re-reads and checks the file and cuts a torn tail)
    /// and rebuilds the table from it, dropping whatever was applied in memory but never
    /// made durable. The table then takes commands again; on a disk still full the next
    /// one fails the same way and changes nothing. If the journal cannot be reopened, the
    /// failure stays (with that reason) and the next request tries again.
    async fn recover_if_failed(&mut self) {
        if !self.failed.is_set() {
            return;
        }
        let (drained, replies_out) = oneshot::channel();
        let barrier: Answer = Box::new(move |_| {
            let _ = drained.send(());
        });
        if self.release.send(Release::Answer(barrier)).await.is_err() {
            return;
        }
        let _ = replies_out.await;
        let config = self.config.clone();
        let stats = self.stats.clone();
        let old = self.journal.take();
        let reopened = tokio::task::spawn_blocking(move || reopen(old, &config, &stats))
            .await
            .unwrap_or_else(|e| Err(format!("not reopened: {e}")));
        match reopened {
            Ok((committer, replayed)) => {
                tracing::warn!(
                    table = %self.config.table.table_id,
                    records = replayed.last_seq,
                    "journal reopened after a failure: the table goes on from its last durable record"
                );
                // Every durable round already went to the outbox task when it was released.
                let Replayed {
                    table,
                    last_seq,
                    chain,
                    recent,
                    order,
                    owed_reveal,
                    ..
                } = replayed;
                self.table = table;
                // A request whose pending record was not made durable never went to the
                // wallet: whoever waits for it is told the journal failed.
                let wallet = self.table.wallet();
                let lost: Vec<_> = self
                    .waiting
                    .keys()
                    .filter(|(p, k)| wallet.pending(p, k).is_none())
                    .cloned()
                    .collect();
                let reason = self.failed.get().unwrap_or_default();
                for key in lost {
                    for reply in self.waiting.remove(&key).unwrap_or_default() {
                        let _ = reply.send(Err(ActorError::JournalFailed(reason.clone())));
                    }
                }
                self.next_seq = last_seq + 1;
                self.chain = chain;
                self.recent = recent;
                self.order = order;
                self.owed_reveal = owed_reveal;
                self.idle_deadline = None;
                self.stalled = false;
                self.journal = Some(committer);
                self.failed.clear();
            }
            Err(reason) => {
                tracing::error!(%reason, "the failed journal cannot be reopened yet");
                self.failed.replace(reason);
            }
        }
    }

    async fn tick_if_due(&mut self) {
        let Some(deadline) = self.deadline() else {
            return;
        };
        let now = self.clock.now_ms();
        if now < deadline {
            return;
        }
        let tick = Command::Tick { now_ms: now };
        match self.table.apply(&tick) {
            Ok(events) if events.is_empty() => self.idle_deadline = Some(deadline),
            Ok(events) => {
                self.idle_deadline = None;
                self.journal(None, tick, events, Vec::new(), (None, None))
                    .await;
            }
            // A tick is never refused; if it were, there is nothing to journal.
            Err(refusal) => tracing::error!(%refusal, "tick refused"),
        }
    }

    async fn submit(
        &mut self,
        command_id: Option<String>,
        mut command: Command,
        seed: Option<u64>,
        reply: Reply<Applied>,
    ) {
        if let Some(reason) = self.failed.get() {
            let _ = reply.send(Err(ActorError::JournalFailed(reason)));
            return;
        }
        command.stamp(self.clock.now_ms());
        if let Some(id) = &command_id
            && let Some((original, applied)) = self.recent.get(id)
        {
            let mut resent = command.clone();
            resent.stamp(0);
            if resent == *original {
                let applied = Applied {
                    replayed: true,
                    ..applied.clone()
                };
                self.answer(reply, Ok(applied)).await;
            } else {
                let refusal = Refusal::CommandIdReused {
                    command_id: id.clone(),
                };
                self.refuse(&command, reply, ActorError::Refused(refusal));
            }
            return;
        }
        if let Err(error) = self.ask_authority(&command).await {
            self.refuse(&command, reply, error);
            return;
        }
        let order = match self.shuffle_for(&mut command, seed) {
            Ok(order) => order,
            Err(error) => {
                self.refuse(&command, reply, error);
                return;
            }
        };
        let events = match self.table.apply(&command) {
            Ok(events) => events,
            Err(refusal) => {
                self.refuse(&command, reply, ActorError::Refused(refusal));
                return;
            }
        };
        self.metrics.command(true);
        let retried =
            !events.is_empty() && events.iter().all(|e| matches!(e, Event::Replayed { .. }));
        if retried && let Some(key) = pending_retry(&events) {
            // A retry of a request still at the wallet: it waits for the same answer.
            self.waiting.entry(key).or_default().push(reply);
            return;
        }
        if events.is_empty() || retried {
            // Nothing changed: nothing to journal or publish.
            let applied = Applied {
                seq: self.next_seq - 1,
                events,
                snapshot: self.table.snapshot(),
                replayed: retried,
            };
            self.answer(reply, Ok(applied)).await;
            return;
        }
        self.idle_deadline = None;
        let replies = match bet_key(&command, &events) {
            // The bets go to the wallet once this is journaled; the player hears once it
            // answered.
            Some(key) => {
                self.waiting.entry(key).or_default().push(reply);
                Vec::new()
            }
            None => {
                let mut replies = self.answered_by(&command, &events);
                // The wallet task, which sent the answers, needs only to know they stand.
                let own = match command {
                    Command::WalletDebitedMany { .. } => Some(0..0),
                    _ => None,
                };
                replies.push(Waiter { reply, events: own });
                replies
            }
        };
        let shuffle_seed = self.take_order(order);
        self.journal(command_id, command, events, replies, shuffle_seed)
            .await;
    }

    /// Whoever waits for the requests `command` decides (a `WalletDebited`, or each of a
    /// `WalletDebitedMany`'s answers), each told the events of its own request.
    fn answered_by(&mut self, command: &Command, events: &[Event]) -> Vec<Waiter> {
        for event in events {
            match event {
                Event::BetsAccepted { .. } => self.metrics.bet_accepted(),
                Event::BetsRefused { why, .. } => self.metrics.bet_refused_by_wallet(why),
                _ => {}
            }
        }
        match command {
            Command::WalletDebited { player, key, .. } => self
                .waiting
                .remove(&(player.clone(), key.clone()))
                .unwrap_or_default()
                .into_iter()
                .map(Waiter::of_all)
                .collect(),
            Command::WalletDebitedMany { .. } => {
                let mut waiters = Vec::new();
                for (player, key, range) in answers_in(events) {
                    let waiting = self.waiting.remove(&(player, key)).unwrap_or_default();
                    waiters.extend(waiting.into_iter().map(|reply| Waiter {
                        reply,
                        events: Some(range.clone()),
                    }));
                }
                waiters
            }
            _ => Vec::new(),
        }
    }

    /// Refuses every bet request the journal left waiting for the wallet (see `run`).
    async fn refuse_unanswered(&mut self) {
        let unanswered: Vec<(String, String)> = self
            .table
            .wallet()
            .pending_requests()
            .map(|r| (r.player.clone(), r.key.clone()))
            .collect();
        for (player, key) in unanswered {
            let command = Command::WalletDebited {
                player,
                key,
                outcome: DebitOutcome::Refused {
                    error: WalletError::Unavailable(
                        "the table restarted before the wallet answered".to_owned(),
                    ),
                },
                now_ms: self.clock.now_ms(),
            };
            match self.table.apply(&command) {
                Ok(events) => {
                    self.journal(None, command, events, Vec::new(), (None, None))
                        .await
                }
                Err(refusal) => {
                    tracing::error!(%refusal, "a bet request left pending could not be refused")
                }
            }
        }
    }

    /// Answers `error`, counted by what was refused.
    fn refuse(&self, command: &Command, reply: Reply<Applied>, error: ActorError) {
        self.metrics.command(false);
        if let ActorError::Refused(refusal) = &error {
            match command {
                Command::PlaceBets { .. } => self.metrics.bet_refused(refusal),
                Command::DealCard { .. } => self.metrics.card_refused(refusal),
                _ => {}
            }
        }
        let _ = reply.send(Err(error));
    }

    /// The order of the shoe an `OpenShoe` opens, on a table the actor deals itself: from
    /// `seed`, or a seed drawn from the OS. `None` for any other command or a live table;
    /// a config the shoe refuses is left to the table's refusal.
    /// A drawn key is committed to in the command itself, so the table records the
    /// commitment with the shoe and a replay of the journal opens it the same way.
    fn shuffle_for(
        &self,
        command: &mut Command,
        seed: Option<u64>,
    ) -> Result<Option<ShuffledOrder>, ActorError> {
        let Command::OpenShoe {
            config, commitment, ..
        } = command
        else {
            return Ok(None);
        };
        if self.table.config().pacing == Pacing::Live {
            return Ok(None);
        }
        let seed = match seed {
            Some(seed) => Seed::Chosen(seed),
            None => {
                let key = ShuffleKey::from_os().map_err(ActorError::Startup)?;
                let shoe = self.table.next_shoe_number();
                *commitment = Some(key.commitment(&self.table.config().table_id, shoe));
                Seed::Committed(key)
            }
        };
        Ok(ShuffledOrder::new(*config, seed).ok())
    }

    /// Puts an accepted `OpenShoe`'s order in play; its seed or key, for the journal.
    fn take_order(&mut self, order: Option<ShuffledOrder>) -> Journaled {
        let Some(order) = order else {
            return (None, None);
        };
        let journaled = order.journaled();
        self.order = Some(order);
        journaled
    }

    /// On a table without a croupier: plays the croupier's part as far as it is due now
    /// (see the module docs). Stops at the first command that fails, marking the actor
    /// stalled so that it tries again at its next wake-up.
    async fn drive(&mut self) {
        if self.table.config().pacing == Pacing::Live {
            return;
        }
        self.stalled = false;
        while !self.failed.is_set() {
            let Some(command) = self.next_auto_command() else {
                return;
            };
            if let Err(error) = self.auto(command).await {
                tracing::error!(%error, "the table cannot go on by itself; retrying");
                self.stalled = true;
                return;
            }
        }
    }

    /// The croupier's next step, if one is due now.
    fn next_auto_command(&self) -> Option<Command> {
        let order = self.order.as_ref()?;
        let by = AUTO.to_owned();
        let now_ms = self.clock.now_ms();
        let phase = self.table.phase();
        let Some(shoe) = self.table.shoe() else {
            // The shoe ran out at the end of a round: a new one. (A croupier or operator who
            // ended a shoe leaves the table without one until they open the next.)
            return matches!(phase, Phase::Settled | Phase::Voided).then(|| Command::OpenShoe {
                config: order.config,
                by,
                now_ms,
                commitment: None,
            });
        };
        match phase {
            Phase::Idle | Phase::Settled | Phase::Voided => match shoe.state() {
                ShoeState::AwaitingBurn => Some(Command::Burn {
                    exposed: order.next_card(shoe)?,
                    by,
                    now_ms,
                }),
                ShoeState::Ended => None,
                ShoeState::InPlay | ShoeState::CutCardOut | ShoeState::LastHand => {
                    Some(Command::OpenBetting { by, now_ms })
                }
            },
            Phase::BettingClosed { draw_at, .. } if draw_at.is_none_or(|at| now_ms >= at) => {
                self.deal_next(order, shoe, now_ms)
            }
            Phase::Dealing => self.deal_next(order, shoe, now_ms),
            Phase::Result => Some(Command::ConfirmResult {
                round_id: self.table.round_id()?.clone(),
                by,
                now_ms,
            }),
            Phase::NoShoe | Phase::BettingOpen { .. } | Phase::BettingClosed { .. } => None,
        }
    }

    fn deal_next(&self, order: &ShuffledOrder, shoe: &Shoe, now_ms: u64) -> Option<Command> {
        self.table.due()?;
        Some(Command::DealCard {
            card: order.next_card(shoe)?,
            source: CardSource::Shuffler,
            now_ms,
        })
    }

    /// Applies and journals one of the actor's own commands, checked like any other.
    async fn auto(&mut self, mut command: Command) -> Result<(), ActorError> {
        command.stamp(self.clock.now_ms());
        self.ask_authority(&command).await?;
        let order = self.shuffle_for(&mut command, None)?;
        let events = self.table.apply(&command).map_err(ActorError::Refused);
        self.metrics.command(events.is_ok());
        let events = events?;
        if events.is_empty() {
            return Err(ActorError::Refused(Refusal::NotNow {
                action: "go on by itself",
                phase: self.table.phase(),
            }));
        }
        self.idle_deadline = None;
        let shuffle_seed = self.take_order(order);
        self.journal(None, command, events, Vec::new(), shuffle_seed)
            .await;
        Ok(())
    }

    /// Queues an applied command to the journal and its release.
    async fn journal(
        &mut self,
        command_id: Option<String>,
        command: Command,
        events: Vec<Event>,
        replies: Vec<Waiter>,
        (shuffle_seed, shuffle_key): Journaled,
    ) {
        // Every record goes through here, so a shoe's end reveals its key whatever ended
        // it (the last hand, a void, a croupier), as the replay does.
        let mut events = events;
        reveal(&mut events, self.order.as_ref(), &mut self.owed_reveal);
        let fail = |this: &Self, reason: String, replies: Vec<Waiter>| {
            if this.failed.set(reason.clone()) {
                tracing::error!(%reason, "journal failed: commands are refused until it is reopened");
            }
            let reason = this.failed.get().unwrap_or(reason);
            for waiter in replies {
                waiter.fail(ActorError::JournalFailed(reason.clone()));
            }
        };
        let mut sealed = Vec::new();
        for event in &events {
            if let Event::RoundFinished(round) = event {
                match self.chain.seal(round.as_ref().clone()) {
                    Ok(s) => sealed.push(s),
                    Err(e) => {
                        return fail(
                            self,
                            format!("not written: cannot seal the round: {e}"),
                            replies,
                        );
                    }
                }
            }
        }
        let entry = journal::Entry {
            command_id,
            command: journal::Command::from(&command),
            shuffle_seed,
            shuffle_key,
        };
        let payload = match serde_json::to_vec(&entry) {
            Ok(payload) => payload,
            Err(e) => {
                return fail(
                    self,
                    format!("not written: cannot encode {command:?}: {e}"),
                    replies,
                );
            }
        };
        let Some(committer) = &self.journal else {
            return fail(self, "not reopened yet after a failure".to_owned(), replies);
        };
        let pending = match committer.enqueue(payload).await {
            Ok(pending) => pending,
            Err(e) => return fail(self, e.reason(), replies),
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let applied = Applied {
            seq,
            events,
            snapshot: self.table.snapshot(),
            replayed: false,
        };
        if let Some(id) = entry.command_id {
            self.recent.insert(id, command, applied.clone());
        }
        let release = Release::Record(Box::new(Record {
            pending,
            seq,
            applied,
            sealed,
            replies,
        }));
        if let Err(mpsc::error::SendError(release)) = self.release.send(release).await {
            let replies = match release {
                Release::Record(record) => record.replies,
                Release::Answer(_) => Vec::new(),
            };
            fail(
                self,
                "not answered: the release task has stopped".to_owned(),
                replies,
            );
        }
    }

    /// The rules authority's word on a card or a settlement, before the table applies it.
    async fn ask_authority(&self, command: &Command) -> Result<(), ActorError> {
        match command {
            Command::DealCard { card, .. } => self.check_card(*card).await,
            Command::ConfirmResult { .. } => self.check_settlement().await,
            _ => Ok(()),
        }
    }

    async fn check_card(&self, card: Card) -> Result<(), ActorError> {
        let dealing = matches!(
            self.table.phase(),
            Phase::BettingClosed { .. } | Phase::Dealing | Phase::Result
        );
        // Outside dealing the table refuses the card itself, with the better reason.
        let Some(shoe) = self.table.shoe().filter(|_| dealing) else {
            return Ok(());
        };
        let hand = shoe.hand_cards();
        let mut before_hand = shoe.composition().clone();
        for &dealt in hand {
            before_hand.put_back(dealt);
        }
        match self
            .rules
            .check_card(&before_hand, shoe.decks(), hand, card)
            .await
        {
            Ok(CardCheck::Accepted) => Ok(()),
            Ok(CardCheck::Refused { code, message }) => {
                Err(ActorError::Refused(Refusal::CardRefused {
                    card,
                    code,
                    message,
                }))
            }
            Err(RulesError::Unreachable(reason)) => Err(ActorError::ValidatorUnreachable(format!(
                "validator unreachable: {reason}; {card} was not dealt, send it again"
            ))),
            Err(RulesError::BadAnswer(reason)) => {
                tracing::error!(%card, %reason, "ALERT: the rules authority refused a card check");
                Err(ActorError::RulesDisagree(format!("about {card}: {reason}")))
            }
        }
    }

    async fn check_settlement(&self) -> Result<(), ActorError> {
        // No result showing, or the table refuses to settle: the table's refusal says why.
        let Some(Ok((cards, settled))) = self.table.pending_settlement() else {
            return Ok(());
        };
        let round = self
            .table
            .round_id()
            .map(ToString::to_string)
            .unwrap_or_default();
        let ours: Vec<(&String, &banco_rules::Settlement)> = settled
            .iter()
            .flat_map(|(player, list)| list.iter().map(move |s| (player, s)))
            .collect();
        if ours.is_empty() {
            return Ok(());
        }
        let bets: Vec<Bet> = ours
            .iter()
            .map(|(_, s)| Bet::new(s.kind, s.stake))
            .collect();
        let paytable = &self.table.config().policy.paytable;
        let theirs = match self.rules.settle(paytable, &cards, &bets).await {
            Ok(theirs) => theirs,
            Err(RulesError::Unreachable(reason)) => {
                return Err(ActorError::ValidatorUnreachable(format!(
                    "validator unreachable: {reason}; round {round} was not settled, confirm again"
                )));
            }
            Err(RulesError::BadAnswer(reason)) => {
                tracing::error!(%round, %reason, "ALERT: the rules authority refused the settlement");
                return Err(ActorError::RulesDisagree(format!(
                    "round {round}: {reason}"
                )));
            }
        };
        if theirs.len() != ours.len() {
            return Err(ActorError::RulesDisagree(format!(
                "round {round}: {} settlements for {} bets",
                theirs.len(),
                ours.len()
            )));
        }
        for ((player, mine), certified) in ours.iter().zip(&theirs) {
            if *mine != certified {
                let text = format!(
                    "round {round}: {player}'s {} bet of {}: the table would return {} \
                     (winnings {}), the rules authority {} (winnings {})",
                    mine.kind,
                    mine.stake,
                    mine.returned,
                    mine.winnings,
                    certified.returned,
                    certified.winnings
                );
                tracing::error!(%text, "ALERT: settlement differs from the certified rules");
                return Err(ActorError::RulesDisagree(text));
            }
        }
        Ok(())
    }
}

/// The (player, key) of a bet request that went to the wallet with this command.
fn bet_key(command: &Command, events: &[Event]) -> Option<(String, String)> {
    match (command, events) {
        (Command::PlaceBets { .. } | Command::Rebet { .. }, [Event::BetsPending { request }]) => {
            Some((request.player.clone(), request.key.clone()))
        }
        _ => None,
    }
}

/// The (player, key) of a retried request that is still at the wallet.
fn pending_retry(events: &[Event]) -> Option<(String, String)> {
    match events {
        [Event::Replayed { original, .. }] => match original.as_slice() {
            [Event::BetsPending { request }] => Some((request.player.clone(), request.key.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// The requests a batch of the wallet's answers decided, in the order of its events: each
/// (player, key) with the range of its events, from its `BetsAccepted` or `BetsRefused` to
/// the next one's (what else its answer caused, such as betting closing, included).
fn answers_in(events: &[Event]) -> Vec<(String, String, std::ops::Range<usize>)> {
    let mut decided: Vec<(String, String, std::ops::Range<usize>)> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let (player, key) = match event {
            Event::BetsAccepted { player, key, .. } | Event::BetsRefused { player, key, .. } => {
                (player, key)
            }
            _ => continue,
        };
        if let Some(last) = decided.last_mut() {
            last.2.end = i;
        }
        decided.push((player.clone(), key.clone(), i..events.len()));
    }
    decided
}
