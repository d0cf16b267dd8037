//! The croupier's requests read into table commands, and the request fields every service
//! checks the same way (reasons, client-chosen keys, round ids).

use banco_rules::shoe::ShoeConfig;
use banco_wire::convert::card;
use banco_wire::{ConversionError, pb};

use super::phase::card_source;
use crate::command::Command;
use crate::round_id::RoundId;

/// Longest reason kept (it goes into the journal and the archive).
pub const MAX_REASON_CHARS: usize = 500;

/// Longest `command_id` or idempotency key, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// A required free-text field (a reason): not empty, not only spaces.
pub fn reason(field: &str, text: &str) -> Result<String, ConversionError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ConversionError::missing(field));
    }
    if trimmed.chars().count() > MAX_REASON_CHARS {
        return Err(ConversionError::invalid(
            field,
            format!("{} characters", trimmed.chars().count()),
            format!("at most {MAX_REASON_CHARS} characters"),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(ConversionError::invalid(
            field,
            format!("{trimmed:?}"),
            "control characters are not allowed",
        ));
    }
    Ok(trimmed.to_owned())
}

/// A client-chosen id (`command_id`, `idempotency_key`): 1 to 128 visible ASCII characters.
pub fn key(field: &str, text: &str) -> Result<String, ConversionError> {
    if text.is_empty() {
        return Err(ConversionError::missing(field));
    }
    if text.len() > MAX_KEY_LEN || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConversionError::invalid(
            field,
            format!("{:?}", text.chars().take(40).collect::<String>()),
            format!("1 to {MAX_KEY_LEN} visible ASCII characters without spaces"),
        ));
    }
    Ok(text.to_owned())
}

/// A round id a request names: required; whether it is the round in play is the table's
/// call.
pub fn round_id(field: &str, text: &str) -> Result<RoundId, ConversionError> {
    if text.is_empty() {
        return Err(ConversionError::missing(field));
    }
    Ok(RoundId::from(text))
}

/// An OpenShoe by `by`: the table's configured shoe (the `ShoeConfig`) unless the request
/// names one.
impl TryFrom<(&pb::OpenShoeRequest, ShoeConfig, &str)> for Command {
    type Error = ConversionError;

    fn try_from(
        (request, default, by): (&pb::OpenShoeRequest, ShoeConfig, &str),
    ) -> Result<Command, ConversionError> {
        let config = match request.config {
            Some(config) => ShoeConfig::try_from(config).map_err(|e| e.within("config"))?,
            None => default,
        };
        Ok(Command::OpenShoe {
            config,
            by: by.to_owned(),
            now_ms: 0,
            commitment: None,
        })
    }
}

impl TryFrom<(&pb::BurnRequest, &str)> for Command {
    type Error = ConversionError;

    fn try_from((request, by): (&pb::BurnRequest, &str)) -> Result<Command, ConversionError> {
        // The source is checked even though the burn does not keep it: a client sending an
        // unspecified one has a bug worth seeing.
        card_source("source", request.source)?;
        Ok(Command::Burn {
            exposed: card("exposed_card", &request.exposed_card)?,
            by: by.to_owned(),
            now_ms: 0,
        })
    }
}

impl TryFrom<&pb::DealCardRequest> for Command {
    type Error = ConversionError;

    fn try_from(request: &pb::DealCardRequest) -> Result<Command, ConversionError> {
        Ok(Command::DealCard {
            card: card("card", &request.card)?,
            source: card_source("source", request.source)?,
            now_ms: 0,
        })
    }
}

impl TryFrom<(&pb::UndoLastCardRequest, &str)> for Command {
    type Error = ConversionError;

    fn try_from(
        (request, by): (&pb::UndoLastCardRequest, &str),
    ) -> Result<Command, ConversionError> {
        if !request.card.is_empty() {
            card("card", &request.card)?;
        }
        Ok(Command::UndoLastCard {
            reason: reason("reason", &request.reason)?,
            by: by.to_owned(),
            now_ms: 0,
        })
    }
}

impl TryFrom<(&pb::ConfirmResultRequest, &str)> for Command {
    type Error = ConversionError;

    fn try_from(
        (request, by): (&pb::ConfirmResultRequest, &str),
    ) -> Result<Command, ConversionError> {
        Ok(Command::ConfirmResult {
            round_id: round_id("round_id", &request.round_id)?,
            by: by.to_owned(),
            now_ms: 0,
        })
    }
}

impl TryFrom<(&pb::VoidRoundRequest, &str)> for Command {
    type Error = ConversionError;

    fn try_from((request, by): (&pb::VoidRoundRequest, &str)) -> Result<Command, ConversionError> {
        Ok(Command::VoidRound {
            round_id: round_id("round_id", &request.round_id)?,
            reason: reason("reason", &request.reason)?,
            by: by.to_owned(),
            now_ms: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_trimmed_and_refused_when_empty_long_or_with_controls() {
        assert_eq!(reason("reason", "  misread  "), Ok("misread".to_owned()));
        assert_eq!(
            reason("reason", "   "),
            Err(ConversionError::missing("reason"))
        );
        let long = "x".repeat(MAX_REASON_CHARS + 1);
        assert!(reason("reason", &long).is_err());
        assert!(reason("reason", "bad\u{7}bell").is_err());
    }

    #[test]
    fn keys_are_visible_ascii_up_to_their_length() {
        assert_eq!(key("command_id", "c-1"), Ok("c-1".to_owned()));
        assert_eq!(
            key("command_id", ""),
            Err(ConversionError::missing("command_id"))
        );
        assert!(key("command_id", "with space").is_err());
        assert!(key("command_id", &"k".repeat(MAX_KEY_LEN + 1)).is_err());
    }

    #[test]
    fn a_deal_card_request_names_the_field_at_fault() {
        let request = pb::DealCardRequest {
            card: "9H".to_owned(),
            source: pb::CardSource::Unspecified.into(),
            ..pb::DealCardRequest::default()
        };
        let error = Command::try_from(&request).expect_err("no source");
        assert_eq!(error.field(), "source");
        let request = pb::DealCardRequest {
            source: pb::CardSource::Scanner.into(),
            ..request
        };
        assert!(matches!(
            Command::try_from(&request),
            Ok(Command::DealCard { now_ms: 0, .. })
        ));
    }

    #[test]
    fn a_void_needs_its_round_and_reason_and_keeps_who_asked() {
        let request = pb::VoidRoundRequest {
            round_id: "T01-S0001-H0002".to_owned(),
            reason: String::new(),
            ..pb::VoidRoundRequest::default()
        };
        let error = Command::try_from((&request, "ana")).expect_err("no reason");
        assert_eq!(error, ConversionError::missing("reason"));
        let request = pb::VoidRoundRequest {
            reason: "card on the floor".to_owned(),
            ..request
        };
        let Ok(Command::VoidRound { by, round_id, .. }) = Command::try_from((&request, "ana"))
        else {
            panic!("a void command");
        };
        assert_eq!(
            (by.as_str(), round_id.to_string().as_str()),
            ("ana", "T01-S0001-H0002")
        );
    }
}
