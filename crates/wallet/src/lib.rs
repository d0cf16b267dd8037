//! # banco-wallet
//!
//! The players' money, one account per player and currency across every table. The tables
//! never keep a player's balance of their own: every stake is a [`Debit`] and every return
//! (stake back, winnings, refund of a void or of cleared bets) a [`Credit`] against the
//! player's account, each with a transaction id derived from table, round, player and bet
//! ([`TxId`]), so that a retry moves money at most once.
//!
//! A wallet is reached through the [`Wallet`] trait (a table's debits, credits and
//! cancels) and the [`Cashier`] trait (deposits and withdrawals), whichever wallet it is.
//! This crate implements both with [`Store`], banco's own store in an SQLite file or
//! PostgreSQL, serves that store as WalletService over gRPC ([`grpc::serve`], what `banco
//! wallet` runs) and reaches it from elsewhere with [`grpc::GrpcWallet`]; an operator's own
//! wallet is reached over the seamless protocol ([`seamless`]).
//!
//! The trait's contract, which every implementation keeps:
//! - the same transaction id with the same request gets the first answer again (marked
//!   [`Receipt::replayed`]); the same id with a different request is refused
//!   ([`WalletError::Conflict`]) and changes nothing;
//! - a [`Cancel`] of a debit that was never received is remembered, so the debit, arriving
//!   late, is refused ([`WalletError::Cancelled`]); a cancel of a debit already settled by a
//!   credit is refused ([`WalletError::AlreadySettled`]);
//! - no player balance is ever negative, also when several tables debit one player at the
//!   same instant;
//! - [`WalletError::Unavailable`] is the only error worth retrying as it is; every other
//!   error is the wallet's decision about that request.

pub mod api;
pub mod grpc;
pub mod memory;
pub mod seamless;
pub mod store;

pub use api::{
    AccountView, BalanceChange, BoxFuture, Cancel, Cash, Cashier, Changes, Credit, CreditKind,
    Debit, LimitChange, Receipt, SelfLimit, TableRounds, TxId, TxIdError, Wallet, WalletError,
};
pub use memory::MemoryWallet;
pub use store::{Store, StoreError, StoreOptions};
