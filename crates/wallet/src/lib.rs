//! # banco-wallet
//!
//! The players' money, one account per player and currency across every table. The tables
//! never keep a player's balance of their own: every stake is a [`Debit`] and every return
//! (stake back, winnings, refund of a void or of cleared bets) a [`Credit`] against the
//! player's account, each with a transaction id derived from table, round, player and bet
//! ([`TxId`]), so that a retry moves money at most once.
//!
//! A table talks to a wallet through the [`Wallet`] trait, whichever wallet it is:
//! - **embedded**: this crate's store in the broadcaster's process (SQLite), the default;
//! - **`banco wallet`**: the same store behind WalletService over gRPC (SQLite or
//!   PostgreSQL), for several broadcasters sharing one balance per player;
//! - **seamless**: an operator's own wallet over the HTTP/JSON protocol of
//!   `proto/seamless-wallet.openapi.yaml`, as live-game providers connect to casinos.
//!
//! The trait's contract, which every implementation keeps and `banco wallet conformance`
//! checks:
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
pub mod seamless;

pub use api::{
    AccountView, BalanceChange, BoxFuture, Cancel, Credit, CreditKind, Debit, Receipt, SelfLimit,
    TxId, TxIdError, Wallet, WalletError,
};
