//! The protocol's server side: answers `POST /balance`, `/debit`, `/credit` and `/cancel`
//! from any [`Wallet`] (banco's own store behind `banco wallet --seamless-listen`), checking
//! each request's signature and timestamp and signing each answer.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::protocol::{
    Answer, BalanceRequest, CancelRequest, CreditRequest, DebitRequest, Envelope, MAX_BODY_BYTES,
    Operation, Status, TIMESTAMP_WINDOW_MS, now_ms,
};
use super::signature::{SIGNATURE_HEADER, SeamlessSecret};
use crate::api::{Receipt, Wallet, WalletError};

/// A client that has not sent its request's headers by then is disconnected.
const HEADER_READ: Duration = Duration::from_secs(10);
/// A TLS handshake that takes longer than this is given up.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);
/// Once asked to stop, connections get this long to finish the requests they are in.
const DRAIN: Duration = Duration::from_secs(10);

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to serve the seamless protocol in plain HTTP on {0}: it is not a loopback \
         address, so players' ids and amounts would cross the network in clear; give it TLS \
         or bind to 127.0.0.1 / [::1]"
    )]
    PlaintextBeyondLoopback(SocketAddr),
    #[error("the seamless listener: {0}")]
    Io(#[from] std::io::Error),
}

/// Answers one request at a time, whatever carries it: the HTTP server below, or a test's
/// own server that wraps it.
#[derive(Clone, Debug)]
pub struct Responder {
    wallet: Arc<dyn Wallet>,
    secret: SeamlessSecret,
}

impl Responder {
    pub fn new(wallet: Arc<dyn Wallet>, secret: SeamlessSecret) -> Responder {
        Responder { wallet, secret }
    }

    /// The secret answers are signed with.
    pub fn secret(&self) -> &SeamlessSecret {
        &self.secret
    }

    /// The signed answer to one request (its body read whole).
    pub async fn respond(&self, request: http::Request<Bytes>) -> http::Response<Bytes> {
        let answer = self.answer(&request).await;
        self.signed(&answer)
    }

    /// `answer` as the protocol sends it: JSON, signed, with its status's HTTP status.
    pub fn signed(&self, answer: &Answer) -> http::Response<Bytes> {
        let body = match serde_json::to_vec(answer) {
            Ok(body) => Bytes::from(body),
            Err(error) => {
                tracing::error!(%error, "seamless answer could not be written");
                return plain(StatusCode::INTERNAL_SERVER_ERROR);
            }
        };
        let signature = self.secret.sign(&body);
        http::Response::builder()
            .status(answer.status.http_status())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signature)
            .body(body)
            .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR))
    }

    async fn answer(&self, request: &http::Request<Bytes>) -> Answer {
        let body = request.body();
        // Said back even in a refusal, when the body has one, so the caller can match it.
        let request_id = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("request_id")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        let refuse = |status, message: String| {
            Answer::status(request_id.clone(), status).with_message(message)
        };
        let path = request.uri().path();
        let Some(operation) = Operation::ALL
            .into_iter()
            .find(|op| path.rsplit('/').next() == Some(op.name()))
        else {
            return refuse(
                Status::InvalidRequest,
                format!("no operation at {path}: POST to …/balance, /debit, /credit or /cancel"),
            );
        };
        if request.method() != Method::POST {
            return refuse(
                Status::InvalidRequest,
                format!("{} {path}: only POST is answered", request.method()),
            );
        }
        let signature = request
            .headers()
            .get(SIGNATURE_HEADER)
            .map(|v| v.as_bytes());
        if let Err(error) = self.secret.verify(body, signature) {
            tracing::warn!(operation = operation.name(), %error, "seamless request refused: bad signature");
            return refuse(Status::InvalidSignature, error.to_string());
        }
        let envelope: Envelope = match read(body) {
            Ok(envelope) => envelope,
            Err(message) => return refuse(Status::InvalidRequest, message),
        };
        if envelope.operation != operation {
            return refuse(
                Status::InvalidRequest,
                format!(
                    "operation: the body is a {} request, posted to {path}",
                    envelope.operation.name()
                ),
            );
        }
        let now = now_ms();
        let skew = now.abs_diff(envelope.timestamp_ms);
        if skew > TIMESTAMP_WINDOW_MS {
            tracing::warn!(
                operation = operation.name(),
                skew_ms = skew,
                "seamless request refused: stale timestamp"
            );
            return refuse(
                Status::InvalidSignature,
                format!(
                    "timestamp_ms {} is {} s from this server's clock ({now}); at most {} s \
                     either way, so that an old request cannot be sent again as new",
                    envelope.timestamp_ms,
                    skew / 1000,
                    TIMESTAMP_WINDOW_MS / 1000
                ),
            );
        }
        let id = envelope.request_id;
        let invalid = |message| refuse(Status::InvalidRequest, message);
        match operation {
            Operation::Balance => match read::<BalanceRequest>(body) {
                Ok(request) => self.balance(id, &request).await,
                Err(message) => invalid(message),
            },
            Operation::Debit => match read::<DebitRequest>(body) {
                Ok(request) => {
                    let debit = request.into();
                    outcome(id, self.wallet.debit(&debit).await)
                }
                Err(message) => invalid(message),
            },
            Operation::Credit => match read::<CreditRequest>(body) {
                Ok(request) => {
                    let credit = request.into();
                    outcome(id, self.wallet.credit(&credit).await)
                }
                Err(message) => invalid(message),
            },
            Operation::Cancel => match read::<CancelRequest>(body) {
                Ok(request) => {
                    let cancel = request.into();
                    outcome(id, self.wallet.cancel(&cancel).await)
                }
                Err(message) => invalid(message),
            },
        }
    }

    async fn balance(&self, id: String, request: &BalanceRequest) -> Answer {
        match self
            .wallet
            .account(&request.player_id, &request.currency)
            .await
        {
            Ok(view) => Answer {
                status: if view.blocked {
                    Status::AccountBlocked
                } else {
                    Status::Ok
                },
                balance_minor: Some(view.balance),
                currency: Some(view.currency),
                ..Answer::status(id, Status::Ok)
            },
            Err(error) => Answer::refusal(id, &error),
        }
    }
}

fn outcome(id: String, result: Result<Receipt, WalletError>) -> Answer {
    match result {
        Ok(receipt) => Answer::ok(id, &receipt),
        Err(error) => Answer::refusal(id, &error),
    }
}

/// A request body as `T`; why not, for the caller.
fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("the body is not a valid request: {e}"))
}

fn plain(status: StatusCode) -> http::Response<Bytes> {
    let mut response = http::Response::new(Bytes::new());
    *response.status_mut() = status;
    response
}

/// Serves the protocol in plain HTTP/1.1 on `listener` (a loopback address only) from
/// `wallet`, until `shutdown` completes; requests under way then get [`DRAIN`] to finish.
pub async fn serve(
    listener: TcpListener,
    wallet: Arc<dyn Wallet>,
    secret: SeamlessSecret,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let addr = listener.local_addr()?;
    if !addr.ip().to_canonical().is_loopback() {
        return Err(ServeError::PlaintextBeyondLoopback(addr));
    }
    run(listener, None, Responder::new(wallet, secret), shutdown).await
}

/// As [`serve`], over TLS on any address. `tls` is the server's identity (e.g.
/// `banco_auth::ServerTls::rustls_config`); its ALPN is set to HTTP/1.1 here.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    wallet: Arc<dyn Wallet>,
    secret: SeamlessSecret,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let mut config = (*tls).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    run(
        listener,
        Some(acceptor),
        Responder::new(wallet, secret),
        shutdown,
    )
    .await
}

async fn run(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    responder: Responder,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors, or a connection reset before it was
                        // taken: the next accept may well work.
                        tracing::warn!(%error, "seamless listener: accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let responder = responder.clone();
                let stopping = stopping.clone();
                let tls = tls.clone();
                connections.spawn(async move {
                    match tls {
                        None => connection(tcp, responder, stopping).await,
                        Some(acceptor) => {
                            match tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(tcp)).await {
                                Ok(Ok(tls)) => connection(tls, responder, stopping).await,
                                Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                            }
                        }
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    let _ = stop.send(true);
    drop(listener);
    let drained = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "seamless server: connections still open after the drain, closed"
        );
        connections.abort_all();
    }
    Ok(())
}

/// One client connection: its requests in turn, until it closes or the server stops.
async fn connection<IO>(io: IO, responder: Responder, mut stopping: watch::Receiver<bool>)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let responder = responder.clone();
        async move { Ok::<_, Infallible>(respond(&responder, request).await) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ)
        .serve_connection(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "seamless connection ended");
            }
            return;
        }
        _ = stopping.wait_for(|stop| *stop) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

async fn respond(
    responder: &Responder,
    request: http::Request<Incoming>,
) -> http::Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let response = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(body) => {
            responder
                .respond(http::Request::from_parts(parts, body.to_bytes()))
                .await
        }
        Err(error) => {
            let too_large = error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            let message = if too_large {
                format!("the body is larger than {MAX_BODY_BYTES} bytes")
            } else {
                format!("the body could not be read: {error}")
            };
            responder.signed(&Answer::status("", Status::InvalidRequest).with_message(message))
        }
    };
    response.map(Full::new)
}
