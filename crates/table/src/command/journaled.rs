//! A command as the journal holds it ([`banco_records::journal`], format
//! [`JOURNAL_FORMAT`](banco_records::journal::JOURNAL_FORMAT)), and back. Every command
//! has a stored form and every stored form is a command, so neither way can fail; the
//! stored types change only with a new format, the table's whenever it needs.

use banco_records::journal::{self, Command as Stored, WalletRefusal};
use banco_wallet::WalletError;

use super::{Command, DebitAnswer, DebitOutcome, WalletAck};

/// A field's value in the other form: the wallet's answers, which have stored types of
/// their own.
trait Convert<T> {
    fn convert(self) -> T;
}

impl<A: Into<B>, B> Convert<Vec<B>> for Vec<A> {
    fn convert(self) -> Vec<B> {
        self.into_iter().map(Into::into).collect()
    }
}

impl Convert<journal::DebitOutcome> for DebitOutcome {
    fn convert(self) -> journal::DebitOutcome {
        self.into()
    }
}

impl Convert<DebitOutcome> for journal::DebitOutcome {
    fn convert(self) -> DebitOutcome {
        self.into()
    }
}

/// `From` both ways between [`Command`] and its stored form, variant for variant: the
/// fields before a `;` are the same types on both sides, those after it [`Convert`].
macro_rules! both_ways {
    ($($variant:ident { $($field:ident),* $(; $($converted:ident),*)? }),* $(,)?) => {
        impl From<Command> for Stored {
            fn from(command: Command) -> Stored {
                match command {
                    $(Command::$variant { $($field,)* $($($converted,)*)? } => Stored::$variant {
                        $($field,)*
                        $($($converted: $converted.convert(),)*)?
                    },)*
                }
            }
        }

        impl From<Stored> for Command {
            fn from(stored: Stored) -> Command {
                match stored {
                    $(Stored::$variant { $($field,)* $($($converted,)*)? } => Command::$variant {
                        $($field,)*
                        $($($converted: $converted.convert(),)*)?
                    },)*
                }
            }
        }
    };
}

both_ways! {
    OpenShoe { config, by, now_ms, commitment },
    Burn { exposed, by, now_ms },
    EndShoe { reason, by, now_ms },
    OpenBetting { by, now_ms },
    CloseBetting { by, now_ms },
    Tick { now_ms },
    Deal { player, now_ms },
    DealCard { card, source, now_ms },
    UndoLastCard { reason, by, now_ms },
    ConfirmResult { round_id, by, now_ms },
    VoidRound { round_id, reason, by, now_ms },
    PlaceBets { player, round_id, bets, key, now_ms },
    ClearBets { player, round_id, key, now_ms },
    Rebet { player, round_id, key, now_ms },
    WalletDebited { player, key, now_ms; outcome },
    WalletDebitedMany { now_ms; answers },
    WalletAcked { now_ms; acks },
    WalletChanged { player, balance, delta, reason, version, now_ms },
    TakeSeat { player, seat, now_ms },
    LeaveSeat { player, now_ms },
    PassHand { player, round_id, now_ms },
    Chat { player, text, now_ms },
    MutePlayer { player, minutes, reason, by, now_ms },
}

impl From<DebitOutcome> for journal::DebitOutcome {
    fn from(outcome: DebitOutcome) -> journal::DebitOutcome {
        match outcome {
            DebitOutcome::Taken { balance, version } => {
                journal::DebitOutcome::Taken { balance, version }
            }
            DebitOutcome::Refused { error } => journal::DebitOutcome::Refused {
                error: stored_refusal(error),
            },
        }
    }
}

impl From<journal::DebitOutcome> for DebitOutcome {
    fn from(outcome: journal::DebitOutcome) -> DebitOutcome {
        match outcome {
            journal::DebitOutcome::Taken { balance, version } => {
                DebitOutcome::Taken { balance, version }
            }
            journal::DebitOutcome::Refused { error } => DebitOutcome::Refused {
                error: wallet_error(error),
            },
        }
    }
}

impl From<DebitAnswer> for journal::DebitAnswer {
    fn from(
        DebitAnswer {
            player,
            key,
            outcome,
        }: DebitAnswer,
    ) -> journal::DebitAnswer {
        journal::DebitAnswer {
            player,
            key,
            outcome: outcome.into(),
        }
    }
}

impl From<journal::DebitAnswer> for DebitAnswer {
    fn from(
        journal::DebitAnswer {
            player,
            key,
            outcome,
        }: journal::DebitAnswer,
    ) -> DebitAnswer {
        DebitAnswer {
            player,
            key,
            outcome: outcome.into(),
        }
    }
}

impl From<WalletAck> for journal::WalletAck {
    fn from(
        WalletAck {
            number,
            balance,
            version,
        }: WalletAck,
    ) -> journal::WalletAck {
        journal::WalletAck {
            number,
            balance,
            version,
        }
    }
}

impl From<journal::WalletAck> for WalletAck {
    fn from(
        journal::WalletAck {
            number,
            balance,
            version,
        }: journal::WalletAck,
    ) -> WalletAck {
        WalletAck {
            number,
            balance,
            version,
        }
    }
}

/// Both ways between the wallet's error and the journal's refusal, variant for variant
/// (functions: both types are other crates').
macro_rules! refusals_both_ways {
    (
        units { $($unit:ident),* }
        tuples { $($tuple:ident),* }
        structs { $($variant:ident { $($field:ident),* }),* }
    ) => {
        fn stored_refusal(error: WalletError) -> WalletRefusal {
            match error {
                $(WalletError::$unit => WalletRefusal::$unit,)*
                $(WalletError::$tuple(detail) => WalletRefusal::$tuple(detail),)*
                $(WalletError::$variant { $($field),* } => WalletRefusal::$variant { $($field),* },)*
            }
        }

        fn wallet_error(refusal: WalletRefusal) -> WalletError {
            match refusal {
                $(WalletRefusal::$unit => WalletError::$unit,)*
                $(WalletRefusal::$tuple(detail) => WalletError::$tuple(detail),)*
                $(WalletRefusal::$variant { $($field),* } => WalletError::$variant { $($field),* },)*
            }
        }
    };
}

refusals_both_ways! {
    units { AccountBlocked }
    tuples { InvalidSession, Unavailable, Invalid }
    structs {
        InsufficientFunds { needed, available },
        SelfLimit { limit, asked },
        Conflict { tx, why },
        Cancelled { tx },
        AlreadySettled { tx },
        DebitDoesNotExist { tx }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use banco_records::round::CardSource;
    use banco_rules::BetKind;
    use banco_rules::shoe::ShoeConfig;

    use super::*;

    /// One command of each kind, with every optional field once set and once not.
    fn every_command() -> Vec<Command> {
        let round = crate::RoundId::from("T01-S0001-H001");
        let card = "8H".parse().unwrap();
        let refused = |error| DebitOutcome::Refused { error };
        // Every kind of refusal, as the journal holds them.
        let refusals = [
            r#"{"error":"insufficient_funds","detail":{"needed":5,"available":3}}"#,
            r#"{"error":"self_limit","detail":{"limit":5,"asked":6}}"#,
            r#"{"error":"account_blocked"}"#,
            r#"{"error":"invalid_session","detail":"expired"}"#,
            r#"{"error":"unavailable","detail":"timed out"}"#,
            r#"{"error":"conflict","detail":{"tx":"T01-1","why":"another amount"}}"#,
            r#"{"error":"cancelled","detail":{"tx":"T01-1"}}"#,
            r#"{"error":"already_settled","detail":{"tx":"T01-1"}}"#,
            r#"{"error":"debit_does_not_exist","detail":{"tx":"T01-1"}}"#,
            r#"{"error":"invalid","detail":"currency"}"#,
        ]
        .map(|json| wallet_error(serde_json::from_str(json).unwrap()));
        let answers = refusals
            .into_iter()
            .map(refused)
            .chain([
                DebitOutcome::Taken {
                    balance: 9,
                    version: None,
                },
                DebitOutcome::Taken {
                    balance: 9,
                    version: Some(2),
                },
            ])
            .map(|outcome| DebitAnswer {
                player: "alice".into(),
                key: "k".into(),
                outcome,
            })
            .collect();
        let (by, now_ms) = (String::from("croupier"), 5);
        vec![
            Command::OpenShoe {
                config: ShoeConfig::default(),
                by: by.clone(),
                now_ms,
                commitment: Some("ab".into()),
            },
            Command::OpenShoe {
                config: ShoeConfig::default(),
                by: by.clone(),
                now_ms,
                commitment: None,
            },
            Command::Burn {
                exposed: card,
                by: by.clone(),
                now_ms,
            },
            Command::EndShoe {
                reason: "damaged".into(),
                by: by.clone(),
                now_ms,
            },
            Command::OpenBetting {
                by: by.clone(),
                now_ms,
            },
            Command::CloseBetting {
                by: by.clone(),
                now_ms,
            },
            Command::Tick { now_ms },
            Command::Deal {
                player: "solo".into(),
                now_ms,
            },
            Command::DealCard {
                card,
                source: CardSource::Scanner,
                now_ms,
            },
            Command::UndoLastCard {
                reason: "misread".into(),
                by: by.clone(),
                now_ms,
            },
            Command::ConfirmResult {
                round_id: round.clone(),
                by: by.clone(),
                now_ms,
            },
            Command::VoidRound {
                round_id: round.clone(),
                reason: "floor".into(),
                by: by.clone(),
                now_ms,
            },
            Command::PlaceBets {
                player: "alice".into(),
                round_id: round.clone(),
                bets: vec![(BetKind::Tie, 500), (BetKind::Banker, 100)],
                key: "k".into(),
                now_ms,
            },
            Command::ClearBets {
                player: "alice".into(),
                round_id: Some(round.clone()),
                key: "k".into(),
                now_ms,
            },
            Command::Rebet {
                player: "alice".into(),
                round_id: None,
                key: "k".into(),
                now_ms,
            },
            Command::WalletDebited {
                player: "alice".into(),
                key: "k".into(),
                outcome: DebitOutcome::Taken {
                    balance: 9,
                    version: Some(1),
                },
                now_ms,
            },
            Command::WalletDebitedMany { answers, now_ms },
            Command::WalletAcked {
                acks: vec![
                    WalletAck {
                        number: 1,
                        balance: None,
                        version: None,
                    },
                    WalletAck {
                        number: 2,
                        balance: Some(7),
                        version: Some(3),
                    },
                ],
                now_ms,
            },
            Command::WalletChanged {
                player: "alice".into(),
                balance: 100,
                delta: -5,
                reason: "withdrawal".into(),
                version: Some(9),
                now_ms,
            },
            Command::TakeSeat {
                player: "alice".into(),
                seat: 2,
                now_ms,
            },
            Command::LeaveSeat {
                player: "alice".into(),
                now_ms,
            },
            Command::PassHand {
                player: "alice".into(),
                round_id: round,
                now_ms,
            },
            Command::Chat {
                player: "alice".into(),
                text: " hi ".into(),
                now_ms,
            },
            Command::MutePlayer {
                player: "alice".into(),
                minutes: 10,
                reason: "spam".into(),
                by,
                now_ms,
            },
        ]
    }

    #[test]
    fn every_command_is_stored_and_read_back_as_itself() {
        for command in every_command() {
            let stored = Stored::from(command.clone());
            let json = serde_json::to_string(&stored).unwrap();
            let read: Stored = serde_json::from_str(&json).unwrap();
            assert_eq!(Command::from(read), command, "{json}");
        }
    }
}
