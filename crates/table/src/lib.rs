//! The table actor: round phases, pacing, bet book, ledger, journal and recovery.

pub mod actor;
pub mod book;
pub mod chat;
pub mod command;
pub mod convert;
pub mod currency;
pub mod event;
pub mod fairness;
pub mod history;
pub mod instant_wallet;
pub mod journal;
pub mod ledger;
pub mod metrics;
pub mod phase;
pub mod policy;
pub mod refusal;
pub mod round_id;
pub mod spec;
pub mod table;
pub mod wallet_book;

pub use actor::{
    ActorConfig, ActorError, ActorTask, Applied, ArchiveSink, BooksReport, CardCheck, Clock,
    Joined, JournaledConfig, LocalRules, MemorySink, PlayerPosition, Published, RefusalKind,
    RemoteRules, Rules, RulesError, SealedRound, SinkError, Snapshot, TableHandle, spawn,
};
pub use chat::ChatTextProblem;
pub use command::{CardSource, Command, DebitAnswer, DebitOutcome, WalletAck};
pub use currency::{BadCurrency, Currency, Utc};
pub use event::{
    BalanceReason, BetRefusal, BurnRecord, Event, FinishedRound, RevealedShuffle, RoundTotals,
    ShoeOpening, TableSnapshot,
};
pub use history::{HISTORY_PER_PLAYER, HistoryEntry};
pub use phase::Phase;
pub use policy::{ChatPolicy, Limits, Pacing, TableConfig, TablePolicy, UnderMinimum};
pub use refusal::Refusal;
pub use round_id::RoundId;
pub use spec::{TableSpec, TableSpecError, parse_blocked_words, parse_table_spec};
pub use table::Table;
pub use wallet_book::{Owed, OwedOp, PendingRequest, WalletBook};
