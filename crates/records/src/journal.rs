//! The table's journal, format [`JOURNAL_FORMAT`]: what each record's payload holds. The
//! file around the payloads (header, frames, checksums) is the table's
//! (`banco_table::journal::format`); a journal written by one version is replayed by every
//! later one, so these types are a stored format like the round record: nothing here may
//! be renamed, reordered or re-typed, and a changed command is a new format beside this
//! one, never a change to it.
//!
//! Record 1 is a [`ConfigRecord`], every later one an [`Entry`] (serde JSON of each). The
//! golden journals `tests/golden/v<N>/*.journal` were written in format N: every record
//! must parse into these types and encode back to its very bytes, and the table must
//! replay them to the golden round records of their folder.
//!
//! Cards, bet positions and shoe configurations are embedded as `banco_rules` encodes
//! them ([`Card`] as `"8H"`, [`BetKind`] in snake case, [`ShoeConfig`] as its fields), as
//! the round record embeds them: their encoding is part of both formats, so it is as fixed
//! as this one.
//!
//! The configuration inside record 1 is a [`TableSettings`]: the table's
//! configuration as format 1 holds it, which a start compares with its own.

use banco_rules::shoe::ShoeConfig;
use banco_rules::{BetKind, Card};
use serde::{Deserialize, Serialize};

use crate::ids::{RoundId, TxId};
use crate::round::CardSource;

mod settings;
pub use settings::{Chat, Limits, Pacing, Policy, TableSettings, UnderMinimum};

/// The journal format this version writes. Journals started before formats were numbered
/// have none in their [`ConfigRecord`], and are format 1.
///
/// Format 2 has the records of format 1; what changed is what a replay derives from them:
/// the debits of a bet request are numbered by the round's requests in the order they
/// reached the table, no longer by the player's (`banco_table::wallet_book::DebitNumbering`).
/// A journal keeps the format it was started with, and so the ids it gave the wallet.
pub const JOURNAL_FORMAT: u32 = 2;

/// Record 1 of every journal: the configuration the table runs under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigRecord<T = TableSettings> {
    pub table: T,
    /// The shoe an `OpenShoe` without its own config opens, if the host has a default.
    #[serde(default)]
    pub default_shoe: Option<ShoeConfig>,
    /// The journal's format ([`JOURNAL_FORMAT`] when this version starts it); 0 (absent)
    /// in journals started before formats were numbered, which read as format 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub format: u32,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if"
)]
const fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Every record after the first: an accepted command and the croupier's command id, if
/// any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    pub command: Command,
    /// On an `OpenShoe` of an automated or single-player table: the seed of the shoe's
    /// order (`banco_rules::Shoe::shuffled` with `ChaCha20Rng::seed_from_u64(seed)`), so
    /// that a restart deals the same cards and an auditor can replay the shoe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle_seed: Option<u64>,
    /// Instead of `shuffle_seed`, for a shoe whose order the table drew itself: the
    /// 32-byte shuffle key in hex, committed to in the `OpenShoe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shuffle_key: Option<String>,
}

/// A command as the journal holds it. Its meaning is the table's (`banco_table::Command`,
/// which has one variant for each of these, with the same fields).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    OpenShoe {
        config: ShoeConfig,
        by: String,
        now_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commitment: Option<String>,
    },
    Burn {
        exposed: Card,
        by: String,
        now_ms: u64,
    },
    EndShoe {
        reason: String,
        by: String,
        now_ms: u64,
    },
    OpenBetting {
        by: String,
        now_ms: u64,
    },
    CloseBetting {
        by: String,
        now_ms: u64,
    },
    Tick {
        now_ms: u64,
    },
    Deal {
        player: String,
        now_ms: u64,
    },
    DealCard {
        card: Card,
        source: CardSource,
        now_ms: u64,
    },
    UndoLastCard {
        reason: String,
        by: String,
        now_ms: u64,
    },
    ConfirmResult {
        round_id: RoundId,
        by: String,
        now_ms: u64,
    },
    VoidRound {
        round_id: RoundId,
        reason: String,
        by: String,
        now_ms: u64,
    },
    PlaceBets {
        player: String,
        round_id: RoundId,
        bets: Vec<(BetKind, i64)>,
        key: String,
        now_ms: u64,
    },
    ClearBets {
        player: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round_id: Option<RoundId>,
        key: String,
        now_ms: u64,
    },
    Rebet {
        player: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round_id: Option<RoundId>,
        key: String,
        now_ms: u64,
    },
    /// The wallet's answer to one bet request's debits (journals of format 1 written
    /// before the answers were journaled together hold these).
    WalletDebited {
        player: String,
        key: String,
        outcome: DebitOutcome,
        now_ms: u64,
    },
    WalletDebitedMany {
        answers: Vec<DebitAnswer>,
        now_ms: u64,
    },
    WalletAcked {
        acks: Vec<WalletAck>,
        now_ms: u64,
    },
    WalletChanged {
        player: String,
        balance: i64,
        delta: i64,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u64>,
        now_ms: u64,
    },
    TakeSeat {
        player: String,
        seat: u8,
        now_ms: u64,
    },
    LeaveSeat {
        player: String,
        now_ms: u64,
    },
    PassHand {
        player: String,
        round_id: RoundId,
        now_ms: u64,
    },
    Chat {
        player: String,
        text: String,
        now_ms: u64,
    },
    MutePlayer {
        player: String,
        minutes: u32,
        reason: String,
        by: String,
        now_ms: u64,
    },
}

/// What the wallet did with every debit of one bet request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum DebitOutcome {
    Taken {
        balance: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u64>,
    },
    Refused {
        error: WalletRefusal,
    },
}

/// The wallet's answer to the debits of one pending bet request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebitAnswer {
    pub player: String,
    pub key: String,
    pub outcome: DebitOutcome,
}

/// The wallet's acknowledgement of one owed movement (by its number at the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletAck {
    pub number: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// Why the wallet refused a debit, as journaled: `{"error": "<kind>", "detail": ...}`.
/// The wallet's own error type (`banco_wallet::WalletError`) may change with its API;
/// this one may not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "error", content = "detail", rename_all = "snake_case")]
pub enum WalletRefusal {
    InsufficientFunds { needed: i64, available: i64 },
    SelfLimit { limit: i64, asked: i64 },
    AccountBlocked,
    InvalidSession(String),
    Unavailable(String),
    Conflict { tx: TxId, why: String },
    Cancelled { tx: TxId },
    AlreadySettled { tx: TxId },
    DebitDoesNotExist { tx: TxId },
    Invalid(String),
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Records of format 1 the golden journals do not hold, as the table writes them.
    const RECORDS: &[&str] = &[
        r#"{"command":{"command":"tick","now_ms":5}}"#,
        r#"{"command":{"command":"open_shoe","config":{"decks":1,"cut_card_from_end":20,"burn":"expose_and_burn","procedure":"cut_card"},"by":"auto","now_ms":5},"shuffle_seed":7}"#,
        r#"{"command_id":"c1","command":{"command":"rebet","player":"alice","round_id":"T01-S0001-H002","key":"k","now_ms":5}}"#,
        r#"{"command":{"command":"rebet","player":"alice","key":"k","now_ms":5}}"#,
        r#"{"command":{"command":"clear_bets","player":"alice","round_id":"T01-S0001-H002","key":"k","now_ms":5}}"#,
        r#"{"command":{"command":"wallet_debited_many","answers":[{"player":"alice","key":"k1","outcome":{"outcome":"taken","balance":900}},{"player":"bob","key":"k2","outcome":{"outcome":"refused","error":{"error":"unavailable","detail":"timed out"}}},{"player":"carol","key":"k3","outcome":{"outcome":"refused","error":{"error":"account_blocked"}}},{"player":"dan","key":"k4","outcome":{"outcome":"refused","error":{"error":"conflict","detail":{"tx":"T01-1","why":"another amount"}}}}],"now_ms":5}}"#,
        r#"{"command":{"command":"wallet_acked","acks":[{"number":3},{"number":4,"balance":10,"version":2}],"now_ms":5}}"#,
        r#"{"command":{"command":"wallet_changed","player":"alice","balance":100,"delta":-5,"reason":"withdrawal","version":9,"now_ms":5}}"#,
        r#"{"command":{"command":"take_seat","player":"alice","seat":2,"now_ms":5}}"#,
        r#"{"command":{"command":"leave_seat","player":"alice","now_ms":5}}"#,
        r#"{"command":{"command":"pass_hand","player":"alice","round_id":"T01-S0001-H002","now_ms":5}}"#,
        r#"{"command":{"command":"chat","player":"alice","text":" hi ","now_ms":5}}"#,
        r#"{"command":{"command":"mute_player","player":"alice","minutes":10,"reason":"spam","by":"croupier","now_ms":5}}"#,
    ];

    #[test]
    fn records_outside_the_golden_journals_encode_back_to_their_bytes() {
        for record in RECORDS {
            let entry: Entry = serde_json::from_str(record).unwrap();
            assert_eq!(serde_json::to_string(&entry).unwrap(), *record);
        }
    }

    #[test]
    fn unknown_fields_are_refused() {
        for record in [
            r#"{"command":{"command":"tick","now_ms":5,"by":"x"}}"#,
            r#"{"command":{"command":"tick","now_ms":5},"extra":1}"#,
            r#"{"command":{"command":"deposit","player":"alice","amount":5,"now_ms":5}}"#,
        ] {
            assert!(serde_json::from_str::<Entry>(record).is_err(), "{record}");
        }
    }

    #[test]
    fn the_config_record_leaves_out_an_unnumbered_format() {
        let old: ConfigRecord<u8> = serde_json::from_str(r#"{"table":1}"#).unwrap();
        assert_eq!((old.format, old.default_shoe), (0, None));
        assert_eq!(
            serde_json::to_string(&old).unwrap(),
            r#"{"table":1,"default_shoe":null}"#
        );
        let new = ConfigRecord {
            format: JOURNAL_FORMAT,
            ..old
        };
        assert_eq!(
            serde_json::to_string(&new).unwrap(),
            r#"{"table":1,"default_shoe":null,"format":2}"#
        );
    }
}
