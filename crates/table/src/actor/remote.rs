//! [`RemoteRules`]: the validator's RulesService over gRPC, as the actor's [`Rules`].
//!
//! Plaintext on loopback; TLS (trusting one configured CA) with an `https://` URL.
//! Every call has a deadline. A validator that is down, slow or refusing the caller is
//! [`RulesError::Unreachable`], which the actor turns into a refused card: a card is never
//! accepted unchecked.

use std::time::Duration;

use banco_auth::client::ClientError;
use banco_auth::{BearerToken, ClientTls};
use banco_rules::{Bet, Card, Composition, Paytable, Settlement};
use banco_wire::convert;
use banco_wire::pb;
use banco_wire::pb::rules_service_client::RulesServiceClient;
use tonic::Code;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use super::rules::{BoxFuture, CardCheck, RefusalKind, Rules, RulesError};

/// The validator over gRPC, with a bearer token (role `service`) and a deadline per call.
#[derive(Clone, Debug)]
pub struct RemoteRules {
    client: RulesServiceClient<InterceptedService<Channel, BearerToken>>,
    timeout: Duration,
}

impl RemoteRules {
    /// A client of the validator at `url` (e.g. `http://127.0.0.1:50051`), in plaintext
    /// (loopback only: a validator beyond it serves TLS, see [`RemoteRules::connect_tls`]).
    /// The connection is made lazily, on the first call and again after a failure, so a
    /// validator that is down at start-up only makes cards wait for it. Call within a tokio
    /// runtime.
    pub fn connect(url: &str, token: &str, timeout: Duration) -> Result<RemoteRules, ClientError> {
        RemoteRules::connect_tls(url, token, timeout, None)
    }

    /// As [`RemoteRules::connect`], over TLS when `tls` is given: the validator's
    /// certificate must then be signed by that CA, and `url` must be `https://`. The two
    /// go together: an `https://` URL without a CA, or a CA with an `http://` URL (which
    /// tonic would silently send in plaintext), is refused here rather than at the first
    /// card.
    pub fn connect_tls(
        url: &str,
        token: &str,
        timeout: Duration,
        tls: Option<ClientTls>,
    ) -> Result<RemoteRules, ClientError> {
        let endpoint = banco_auth::client::endpoint_trusting(url, tls.as_ref())?
            .connect_timeout(timeout)
            .timeout(timeout);
        let token = banco_auth::client::bearer(token)?;
        let channel = endpoint.connect_lazy();
        Ok(RemoteRules {
            client: RulesServiceClient::with_interceptor(channel, token),
            timeout,
        })
    }
}

fn status_error(status: &tonic::Status) -> RulesError {
    let text = format!("{:?}: {}", status.code(), status.message());
    match status.code() {
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            RulesError::BadAnswer(text)
        }
        _ => RulesError::Unreachable(text),
    }
}

fn refusal_kind(code: i32) -> RefusalKind {
    match pb::RefusalCode::try_from(code) {
        Ok(pb::RefusalCode::Misread) => RefusalKind::Misread,
        Ok(pb::RefusalCode::HandComplete) => RefusalKind::HandComplete,
        Ok(pb::RefusalCode::BurnPending) => RefusalKind::BurnPending,
        Ok(pb::RefusalCode::NoShoe) => RefusalKind::NoShoe,
        Ok(pb::RefusalCode::WrongPhase) => RefusalKind::WrongPhase,
        _ => RefusalKind::Other,
    }
}

impl Rules for RemoteRules {
    fn check_card(
        &self,
        shoe: &Composition,
        _decks: u8,
        hand: &[Card],
        card: Card,
    ) -> BoxFuture<'_, Result<CardCheck, RulesError>> {
        let request = pb::CheckCardRequest {
            shoe: Some(pb::check_card_request::Shoe::Unseen(
                pb::ShoeComposition::from(shoe),
            )),
            hand: convert::cards_to_pb(hand.iter().copied()),
            card: convert::card_to_pb(card),
        };
        let mut client = self.client.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let answer = tokio::time::timeout(timeout, client.check_card(request))
                .await
                .map_err(|_| RulesError::Unreachable(format!("no answer within {timeout:?}")))?
                .map_err(|s| status_error(&s))?
                .into_inner();
            if answer.accepted {
                return Ok(CardCheck::Accepted);
            }
            let refusal = answer.refusal.ok_or_else(|| {
                RulesError::BadAnswer("card not accepted, and no refusal given".to_owned())
            })?;
            Ok(CardCheck::Refused {
                code: refusal_kind(refusal.code),
                message: refusal.message,
            })
        })
    }

    fn settle(
        &self,
        paytable: &Paytable,
        cards: &[Card],
        bets: &[Bet],
    ) -> BoxFuture<'_, Result<Vec<Settlement>, RulesError>> {
        let request = pb::SettleRequest {
            paytable: Some(pb::Paytable::from(paytable)),
            cards: convert::cards_to_pb(cards.iter().copied()),
            bets: bets.iter().copied().map(pb::Bet::from).collect(),
        };
        let expected = bets.len();
        let mut client = self.client.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let answer = tokio::time::timeout(timeout, client.settle(request))
                .await
                .map_err(|_| RulesError::Unreachable(format!("no answer within {timeout:?}")))?
                .map_err(|s| status_error(&s))?
                .into_inner();
            let settlements = convert::settlements("settlements", answer.settlements)
                .map_err(|e| RulesError::BadAnswer(e.to_string()))?;
            if settlements.len() != expected {
                return Err(RulesError::BadAnswer(format!(
                    "{} settlements for {expected} bets",
                    settlements.len()
                )));
            }
            Ok(settlements)
        })
    }
}
