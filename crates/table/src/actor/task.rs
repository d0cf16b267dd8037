//! The actor task itself: start-up, and the loop that owns the table and journals what it
//! accepts. The replay is in [`super::recovery`], the croupier's part on tables without
//! one in [`super::autopilot`], the rules authority's checks in [`super::authority`], and
//! the bet requests waiting for the wallet in [`super::waiting`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use banco_records::journal;
use banco_wallet::TableRounds;
use tokio::sync::{broadcast, mpsc, oneshot};

use super::autopilot::{Journaled, ShuffledOrder, reveal};
use super::failure::Failure;
use super::outbox::{self, Chain, Watermark};
use super::recent::RecentCommands;
use super::recovery::{journaled_config, replay};
use super::release::{self, Answer, Record, Release, Waiter};
use super::rules::Rules;
use super::waiting::{bet_key, pending_retry};
use super::wallet;
use super::{
    ActorConfig, ActorError, ActorTask, Applied, ArchiveSink, BooksReport, Clock, Joined,
    PlayerPosition, Reply, Request, Snapshot, TableHandle,
};
use crate::command::Command;
use crate::event::{Event, RevealedShuffle};
use crate::journal::{GroupCommitter, Journal, StatsReader};
use crate::refusal::Refusal;
use crate::round_id::RoundId;
use crate::table::Table;

/// A new journal numbers the table's rounds from the first again, and the wallet's
/// transaction ids are derived from them: against a wallet holding movements of this
/// table's earlier rounds (its journal lost, or the table's folder mistyped), a bet's debit
/// would be answered as the replay of the earlier one with its id, the bet taken without
/// money moving, and a payout's credit likewise. Refused before the journal holds
/// anything, so each start asks again; a wallet that cannot tell is trusted, with a
/// warning.
async fn check_wallet_knows_no_rounds(config: &ActorConfig) -> Result<(), ActorError> {
    let table = &config.table.table_id;
    let journal = config.journal.display();
    match config.wallet.table_rounds(table).await {
        Ok(TableRounds::None) => Ok(()),
        Ok(TableRounds::CannotTell) => {
            tracing::warn!(
                table = %table,
                journal = %journal,
                "a new journal, and the wallet cannot say whether it holds movements of \
                 this table's earlier rounds, whose transaction ids the new rounds would reuse"
            );
            Ok(())
        }
        Ok(TableRounds::Newest(round)) => Err(ActorError::Startup(format!(
            "the journal {journal} is new, but the wallet holds movements of table {table} \
             (the newest of round {round}): a new journal numbers the rounds from {first} \
             again, and their bets and payouts would reuse those rounds' transaction ids, \
             which the wallet answers as replays without moving money. Restore the table's \
             journal (and its folder's other files), or host the table under a new id",
            first = RoundId::new(table, 1, 1),
        ))),
        Err(e) => Err(ActorError::Startup(format!(
            "the journal {journal} is new, and the wallet could not say whether it holds \
             movements of table {table}'s earlier rounds, whose transaction ids the new \
             rounds would reuse: {e}"
        ))),
    }
}

/// The longest the actor sleeps without re-reading its clock while a deadline is pending
/// (so that a clock that jumps, or a manual test clock, is noticed).
const MAX_TICK_SLEEP: Duration = Duration::from_secs(1);

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
        check_wallet_knows_no_rounds(&config).await?;
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

pub(super) struct Actor {
    /// What the table was started with: a journal that failed is reopened from it.
    pub(super) config: ActorConfig,
    pub(super) table: Table,
    pub(super) rules: Arc<dyn Rules>,
    pub(super) clock: Clock,
    /// `None` only between closing a failed journal and reopening it.
    pub(super) journal: Option<GroupCommitter>,
    /// The commit counters, carried on by a reopened journal.
    pub(super) stats: StatsReader,
    /// The seq the journal will give the next record (records are queued in order from
    /// this task only, and the journal numbers them without gaps).
    pub(super) next_seq: u64,
    pub(super) chain: Chain,
    pub(super) recent: RecentCommands,
    pub(super) release: mpsc::Sender<Release>,
    pub(super) failed: Arc<Failure>,
    /// A deadline whose `Tick` changed nothing (an automated draw time): not re-armed.
    pub(super) idle_deadline: Option<u64>,
    /// The order of the shoe in play on a table the actor deals itself (`None` on live
    /// tables, and for a shoe opened without a seed).
    pub(super) order: Option<ShuffledOrder>,
    /// The key of a committed shoe ended between rounds, until a round carries it.
    pub(super) owed_reveal: Option<RevealedShuffle>,
    /// One of the actor's own commands failed (validator unreachable, say): retried at the
    /// next wake-up.
    pub(super) stalled: bool,
    pub(super) metrics: crate::metrics::TableMetrics,
    /// Players waiting for the wallet's answer to a bet request, by (player, key): the
    /// request and its retries, answered together once the answer is journaled.
    pub(super) waiting: HashMap<(String, String), Vec<Reply<Applied>>>,
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

    /// Queues an applied command to the journal and its release.
    pub(super) async fn journal(
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
        // A command is kept beside its record only when a croupier's command id may be
        // retried (answered from `recent`); a bet, which has none, moves into its record.
        let remembered = command_id.is_some().then(|| command.clone());
        let entry = journal::Entry {
            command_id,
            command: command.into(),
            shuffle_seed,
            shuffle_key,
        };
        let payload = match serde_json::to_vec(&entry) {
            Ok(payload) => payload,
            Err(e) => {
                return fail(
                    self,
                    format!("not written: cannot encode {:?}: {e}", entry.command),
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
        if let (Some(id), Some(command)) = (entry.command_id, remembered) {
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
}
