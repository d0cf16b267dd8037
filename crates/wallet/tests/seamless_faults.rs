//! The seamless adapter against an operator that misbehaves: it times out, answers 500,
//! malformed JSON, a wrong signature, an answer meant for another request, or gets the
//! same request twice. Money moves once, and a debit without an answer is cancelled.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use banco_wallet::MemoryWallet;
use banco_wallet::seamless::Responder;
use banco_wallet::seamless::protocol::{Answer, Operation, Status};
use banco_wallet::{Wallet, WalletError};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use support::{adapter, cancel, debit, holding, quick, secret};
use tokio::sync::oneshot;

/// What the operator does with one request.
enum Fault {
    /// Makes the movement and answers only once `release` fires, whatever became of the
    /// connection by then; the answer goes to `late` as well.
    Hold {
        release: oneshot::Receiver<()>,
        late: oneshot::Sender<Bytes>,
    },
    /// Never answers, moves nothing.
    Never,
    /// Makes the movement, but answers only once `release` fires.
    AnswerLate(oneshot::Receiver<()>),
    /// Makes the movement, then answers HTTP 500.
    Then500,
    /// Answers TEMPORARY_ERROR (HTTP 503, signed) without moving anything.
    Temporary,
    /// Makes the movement, then answers a body that is not JSON (signed).
    Garbage,
    /// Makes the movement, then signs the answer with another secret.
    WrongSignature,
    /// Makes the movement, then answers with the previous answer it gave to that
    /// operation (signed, but for another request).
    Stale,
    /// Gets the very same request (bytes, signature, request id) twice, as from a proxy
    /// that sends it again, and answers the second.
    Twice,
}

/// One request as the operator received it.
#[derive(Clone, Debug)]
struct Received {
    operation: String,
    request_id: String,
    transaction_id: String,
    retransmission: bool,
}

#[derive(Default)]
struct Script {
    next: HashMap<&'static str, VecDeque<Fault>>,
    /// Applied to every request of an operation once its queue is empty.
    always: HashMap<&'static str, fn() -> Fault>,
    received: Vec<Received>,
    /// The last answer to each operation: its body, signed.
    last_answer: HashMap<String, Bytes>,
    /// The answer to the first of a request received twice.
    first_of_twice: Option<Bytes>,
}

#[derive(Clone)]
struct Operator {
    responder: Responder,
    script: Arc<Mutex<Script>>,
}

impl Operator {
    fn queue(&self, operation: &'static str, fault: Fault) {
        let mut script = self.script.lock().unwrap();
        script.next.entry(operation).or_default().push_back(fault);
    }

    fn always(&self, operation: &'static str, fault: fn() -> Fault) {
        self.script.lock().unwrap().always.insert(operation, fault);
    }

    fn received(&self, operation: &str) -> Vec<Received> {
        let script = self.script.lock().unwrap();
        script
            .received
            .iter()
            .filter(|r| r.operation == operation)
            .cloned()
            .collect()
    }

    async fn answer(&self, request: http::Request<Bytes>) -> http::Response<Bytes> {
        let json: serde_json::Value = serde_json::from_slice(request.body()).unwrap();
        let text = |key: &str| json[key].as_str().unwrap_or_default().to_owned();
        let operation = text("operation");
        let fault = {
            let mut script = self.script.lock().unwrap();
            script.received.push(Received {
                operation: operation.clone(),
                request_id: text("request_id"),
                transaction_id: text("transaction_id"),
                retransmission: json["retransmission"].as_bool().unwrap_or(false),
            });
            let key = Operation::ALL
                .into_iter()
                .map(Operation::name)
                .find(|name| *name == operation)
                .unwrap();
            match script.next.get_mut(key).and_then(VecDeque::pop_front) {
                Some(fault) => Some(fault),
                None => script.always.get(key).map(|make| make()),
            }
        };
        let responder = self.responder.clone();
        let proper = |request| async move { responder.respond(request).await };
        let response = match fault {
            None => proper(request).await,
            Some(Fault::Hold { release, late }) => {
                let (done, answered) = oneshot::channel();
                let responder = self.responder.clone();
                tokio::spawn(async move {
                    let _ = release.await;
                    let response = responder.respond(request).await;
                    let _ = late.send(response.body().clone());
                    let _ = done.send(response);
                });
                match answered.await {
                    Ok(response) => response,
                    Err(_) => status(500),
                }
            }
            Some(Fault::Never) => std::future::pending().await,
            Some(Fault::AnswerLate(release)) => {
                let response = proper(request).await;
                let _ = release.await;
                response
            }
            Some(Fault::Then500) => {
                proper(request).await;
                status(500)
            }
            Some(Fault::Temporary) => {
                let answer = Answer::status(text("request_id"), Status::TemporaryError)
                    .with_message("the wallet's database is failing over");
                self.responder.signed(&answer)
            }
            Some(Fault::Garbage) => {
                proper(request).await;
                let body = Bytes::from_static(b"{\"status\": \"OK\", \"balance_minor\": ");
                signed(&secret(), body)
            }
            Some(Fault::WrongSignature) => {
                let response = proper(request).await;
                let other = banco_wallet::seamless::SeamlessSecret::new(
                    b"the operator's other secret!!!!!!",
                )
                .unwrap();
                signed(&other, response.into_body())
            }
            Some(Fault::Twice) => {
                let again = same(&request);
                let first = proper(request).await;
                self.script.lock().unwrap().first_of_twice = Some(first.into_body());
                self.responder.respond(again).await
            }
            Some(Fault::Stale) => {
                let fresh = proper(request).await;
                let stale = self
                    .script
                    .lock()
                    .unwrap()
                    .last_answer
                    .get(&operation)
                    .cloned();
                stale.map_or(fresh, |body| signed(&secret(), body))
            }
        };
        self.script
            .lock()
            .unwrap()
            .last_answer
            .insert(operation, response.body().clone());
        response
    }
}

/// A copy of `request`, byte for byte.
fn same(request: &http::Request<Bytes>) -> http::Request<Bytes> {
    let mut copy = http::Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.headers_mut() = request.headers().clone();
    copy
}

fn status(code: u16) -> http::Response<Bytes> {
    let mut response = http::Response::new(Bytes::new());
    *response.status_mut() = http::StatusCode::from_u16(code).unwrap();
    response
}

fn signed(secret: &banco_wallet::seamless::SeamlessSecret, body: Bytes) -> http::Response<Bytes> {
    http::Response::builder()
        .header("x-banco-signature", secret.sign(&body))
        .body(body)
        .unwrap()
}

/// An operator on a loopback port serving `wallet` as scripted; its URL.
async fn operator(wallet: Arc<MemoryWallet>) -> (Operator, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("seamless+http://{}/", listener.local_addr().unwrap());
    let wallet: Arc<dyn Wallet> = wallet;
    let operator = Operator {
        responder: Responder::new(wallet, secret()),
        script: Arc::default(),
    };
    let serving = operator.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let operator = serving.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let operator = operator.clone();
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body.collect().await.unwrap().to_bytes();
                            let response = operator
                                .answer(http::Request::from_parts(parts, body))
                                .await;
                            Ok::<_, Infallible>(response.map(Full::new))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    (operator, url)
}

#[tokio::test]
async fn a_debit_without_an_answer_is_unavailable_and_its_cancel_goes_through() {
    let wallet = holding("alice", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    let (release, held) = oneshot::channel();
    let (late, late_answer) = oneshot::channel();
    operator.queue(
        "debit",
        Fault::Hold {
            release: held,
            late,
        },
    );
    // No later attempt is answered either, until the debit's limit is over.
    operator.always("debit", || Fault::Never);
    let (adapter, _) = adapter(&url, quick());

    let stake = debit("debit:H001:alice:1:banker", "alice", 300);
    let err = adapter.debit(&stake).await.unwrap_err();
    assert!(
        matches!(&err, WalletError::Unavailable(why) if why.contains("no answer within")),
        "{err}"
    );
    // The table cancels it; the operator fails the first cancel, then takes it.
    operator.queue("cancel", Fault::Temporary);
    let back = adapter.cancel(&cancel(&stake)).await.unwrap();
    assert_eq!(back.balance, 1_000);
    let cancels = operator.received("cancel");
    assert_eq!(cancels.len(), 2, "{cancels:?}");
    assert!(!cancels[0].retransmission && cancels[1].retransmission);
    assert_ne!(cancels[0].request_id, cancels[1].request_id);
    assert_eq!(cancels[0].transaction_id, cancels[1].transaction_id);

    // The held debit reaches the wallet at last, after its cancel: it is refused.
    release.send(()).unwrap();
    let answer: Answer = serde_json::from_slice(&late_answer.await.unwrap()).unwrap();
    assert_eq!(answer.status, Status::BetCancelled);
    assert_eq!(wallet.balance("alice", "EUR"), 1_000);
}

#[tokio::test]
async fn a_500_after_the_movement_is_retried_and_money_moves_once() {
    let wallet = holding("bob", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    operator.queue("debit", Fault::Then500);
    let (adapter, _) = adapter(&url, quick());

    let stake = debit("debit:H001:bob:1:banker", "bob", 250);
    let receipt = adapter.debit(&stake).await.unwrap();
    assert_eq!((receipt.balance, receipt.replayed), (750, true));
    assert_eq!(wallet.balance("bob", "EUR"), 750, "moved once");
    let debits = operator.received("debit");
    assert_eq!(debits.len(), 2, "{debits:?}");
    assert!(!debits[0].retransmission && debits[1].retransmission);
    assert_ne!(debits[0].request_id, debits[1].request_id);
    assert!(debits.iter().all(|d| d.transaction_id == stake.tx.as_str()));
}

#[tokio::test]
async fn an_answer_after_the_attempt_s_timeout_is_retried_and_money_moves_once() {
    let wallet = holding("carol", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    let (_release, late) = oneshot::channel();
    operator.queue("credit", Fault::AnswerLate(late));
    let (adapter, _) = adapter(&url, quick());

    let stake = debit("debit:H001:carol:1:player", "carol", 100);
    adapter.debit(&stake).await.unwrap();
    let win = support::credit("credit:H001:carol:player", &stake, 200);
    let receipt = adapter.credit(&win).await.unwrap();
    assert_eq!((receipt.balance, receipt.replayed), (1_100, true));
    assert_eq!(wallet.balance("carol", "EUR"), 1_100, "paid once");
    assert_eq!(operator.received("credit").len(), 2);
}

/// The operator moves the money each time but its answers are never the operator's:
/// banco takes none of them as a decision, the debit is unavailable, and the table's
/// cancel gives the stake back.
async fn no_answer_is_taken(fault: fn() -> Fault, named: &str) {
    let wallet = holding("dave", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    operator.always("debit", fault);
    let (adapter, _) = adapter(&url, quick());

    let stake = debit("debit:H001:dave:1:banker", "dave", 400);
    let err = adapter.debit(&stake).await.unwrap_err();
    assert!(
        matches!(&err, WalletError::Unavailable(why) if why.contains(named)),
        "{err}"
    );
    assert!(operator.received("debit").len() > 1, "retried");
    assert_eq!(wallet.balance("dave", "EUR"), 600, "the operator took it");
    adapter.cancel(&cancel(&stake)).await.unwrap();
    assert_eq!(wallet.balance("dave", "EUR"), 1_000);
}

/// The limit cuts the second attempt short: its timeout says less than the first
/// attempt's malformed answer, which is what the error names.
#[tokio::test]
async fn an_attempt_the_limit_cut_short_does_not_hide_the_fault_before_it() {
    let wallet = holding("gina", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    operator.queue("debit", Fault::Garbage);
    // Never released while the debit is tried.
    let (_release, late) = oneshot::channel();
    operator.queue("debit", Fault::AnswerLate(late));
    let config = banco_wallet::seamless::SeamlessConfig {
        debit_limit: std::time::Duration::from_millis(300),
        attempt_timeout: std::time::Duration::from_secs(5),
        ..quick()
    };
    let (adapter, _) = adapter(&url, config);

    let err = adapter
        .debit(&debit("debit:H001:gina:1:player", "gina", 100))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WalletError::Unavailable(why)
            if why.contains("2 attempts") && why.contains("not JSON of the protocol")),
        "{err}"
    );
}

#[tokio::test]
async fn malformed_json_is_no_answer() {
    no_answer_is_taken(|| Fault::Garbage, "not JSON of the protocol").await;
}

#[tokio::test]
async fn a_wrong_signature_on_the_answer_is_no_answer() {
    no_answer_is_taken(
        || Fault::WrongSignature,
        "the answer's signature: the x-banco-signature header does not match",
    )
    .await;
}

#[tokio::test]
async fn an_answer_to_another_request_is_no_answer() {
    let wallet = holding("erin", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    let (adapter, _) = adapter(&url, quick());

    let first = debit("debit:H001:erin:1:banker", "erin", 100);
    adapter.debit(&first).await.unwrap();
    // The second debit is answered once with the first one's (signed) answer: an OK that
    // is not about it.
    operator.queue("debit", Fault::Stale);
    let second = debit("debit:H001:erin:2:banker", "erin", 100);
    let receipt = adapter.debit(&second).await.unwrap();
    assert_eq!(receipt.tx, second.tx);
    assert_eq!((receipt.balance, receipt.replayed), (800, true));
    assert_eq!(wallet.balance("erin", "EUR"), 800);
    assert_eq!(operator.received("debit").len(), 3);
}

#[tokio::test]
async fn the_same_request_received_twice_moves_money_once() {
    let wallet = holding("frank", 1_000);
    let (operator, url) = operator(wallet.clone()).await;
    operator.queue("debit", Fault::Twice);
    let (adapter, _) = adapter(&url, quick());

    let stake = debit("debit:H001:frank:1:banker", "frank", 300);
    let receipt = adapter.debit(&stake).await.unwrap();
    assert_eq!(wallet.balance("frank", "EUR"), 700, "moved once");
    // The answer banco got is the operator's replay of its first, to the same request.
    assert_eq!((receipt.balance, receipt.replayed), (700, true));
    let first = operator.script.lock().unwrap().first_of_twice.clone();
    let first: Answer = serde_json::from_slice(&first.unwrap()).unwrap();
    let debits = operator.received("debit");
    assert_eq!(debits.len(), 1, "one attempt: the answer was taken");
    assert_eq!(first.request_id, debits[0].request_id);
    assert_eq!(
        (first.status, first.balance_minor, first.replayed),
        (Status::Ok, Some(700), false)
    );

    // The table's cancel of it, received twice too, gives the stake back once.
    operator.queue("cancel", Fault::Twice);
    let back = adapter.cancel(&cancel(&stake)).await.unwrap();
    assert_eq!((back.balance, back.replayed), (1_000, true));
    assert_eq!(wallet.balance("frank", "EUR"), 1_000);
}
