//! Rebuilding the table from its journal: at start-up ([`replay`]), after the journal
//! failed (closed, reopened and replayed, dropping what never became durable), and for a
//! reader of past records ([`read_published`]).

use std::collections::VecDeque;

use banco_records::journal::{self, JOURNAL_FORMAT};
use tokio::sync::oneshot;

use super::autopilot::{Seed, ShuffledOrder, reveal};
use super::journaled_config::{JournaledConfig, check_same};
use super::outbox::{Chain, SealedRound, Watermark};
use super::recent::RecentCommands;
use super::release::{Answer, Release};
use super::task::Actor;
use super::{ActorConfig, ActorError, Applied, REMEMBERED_COMMANDS};
use crate::command::Command;
use crate::event::{Event, RevealedShuffle};
use crate::fairness::ShuffleKey;
use crate::journal::{GroupCommitter, Journal, StatsReader};
use crate::table::Table;

/// What replaying the journal rebuilt.
pub(super) struct Replayed {
    pub(super) table: Table,
    /// The journal's last record: the next one the actor writes is numbered after it.
    pub(super) last_seq: u64,
    pub(super) chain: Chain,
    /// The croupier's command ids of the journal, with their answers.
    pub(super) recent: RecentCommands,
    /// Rounds sealed after the outbox's watermark: the archive has not confirmed them.
    pub(super) undelivered: VecDeque<SealedRound>,
    /// The order of the shoe in play, on a table the actor deals itself.
    pub(super) order: Option<ShuffledOrder>,
    pub(super) owed_reveal: Option<RevealedShuffle>,
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

pub(super) fn replay(
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
    table = table.numbering_debits_as(journaled.format);
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
                    "journal {journal}: record {} is a `{command}` of the table's own ledger, \
                     from before the tables spent through a wallet; pay out the balances it \
                     holds with the version that wrote it, then start this table on a new \
                     journal",
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

pub(super) fn journaled_config(config: &ActorConfig) -> JournaledConfig {
    JournaledConfig {
        table: (&config.table).into(),
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

impl Actor {
    /// After a journal failure: once every reply queued before has gone out, closes the
    /// journal, opens it again (which re-reads and checks the file and cuts a torn tail)
    /// and rebuilds the table from it, dropping whatever was applied in memory but never
    /// made durable. The table then takes commands again; on a disk still full the next
    /// one fails the same way and changes nothing. If the journal cannot be reopened, the
    /// failure stays (with that reason) and the next request tries again.
    pub(super) async fn recover_if_failed(&mut self) {
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
}
