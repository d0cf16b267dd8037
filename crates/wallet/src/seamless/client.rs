//! One HTTP exchange with the operator's wallet, and what its answer is worth: a signed,
//! well-formed answer to this very request, or a [`Fault`] naming why it is no answer.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::endpoint::Endpoint;
use super::protocol::{Answer, MAX_BODY_BYTES, Operation, Status};
use super::signature::{SIGNATURE_HEADER, SeamlessSecret, SignatureError};

/// Why an attempt got no answer that can be taken as the operator's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    #[error("could not reach the operator: {0}")]
    Unreachable(String),
    #[error("no answer within {0} ms")]
    Timeout(u128),
    #[error("HTTP {0}")]
    Http(u16),
    #[error("the answer could not be read: {0}")]
    Body(String),
    #[error("the answer's signature: {0}")]
    Signature(SignatureError),
    #[error("the answer is not JSON of the protocol: {0}")]
    Malformed(String),
    #[error("the answer is for request {got}, not for {sent}")]
    WrongRequest { sent: String, got: String },
    #[error("the answer is not a decision: {0}")]
    NotADecision(String),
    #[error("TEMPORARY_ERROR: {0}")]
    Temporary(String),
    #[error(
        "the operator refused banco's signature (INVALID_SIGNATURE: {0}); check that both \
         sides have the same secret and both clocks are right"
    )]
    SignatureRefused(String),
}

/// An answer as it came: HTTP status, raw body and its signature header.
#[derive(Clone, Debug)]
pub struct Exchange {
    pub http_status: u16,
    pub body: Bytes,
    pub signature: Option<Vec<u8>>,
}

impl Exchange {
    /// The operator's answer to the request `request_id`, if this is one: an HTTP status
    /// the protocol answers with, a valid signature over the body, the protocol's JSON,
    /// the same request id. `TEMPORARY_ERROR` and `INVALID_SIGNATURE` are faults too.
    pub fn answer(&self, secret: &SeamlessSecret, request_id: &str) -> Result<Answer, Fault> {
        let read = || -> Result<Answer, Fault> {
            secret
                .verify(&self.body, self.signature.as_deref())
                .map_err(Fault::Signature)?;
            let answer: Answer =
                serde_json::from_slice(&self.body).map_err(|e| Fault::Malformed(e.to_string()))?;
            if answer.request_id != request_id {
                return Err(Fault::WrongRequest {
                    sent: request_id.to_owned(),
                    got: answer.request_id,
                });
            }
            Ok(answer)
        };
        let message = |answer: &Answer| answer.message.clone().unwrap_or_default();
        match self.http_status {
            500..=599 => match read() {
                // A 5xx is temporary whatever it says; a signed one says why.
                Ok(answer) => Err(Fault::Temporary(message(&answer))),
                Err(_) => Err(Fault::Http(self.http_status)),
            },
            200 | 400 | 401 => {
                let answer = read()?;
                match answer.status {
                    Status::TemporaryError => Err(Fault::Temporary(message(&answer))),
                    Status::InvalidSignature => Err(Fault::SignatureRefused(message(&answer))),
                    _ => Ok(answer),
                }
            }
            other => Err(Fault::Http(other)),
        }
    }
}

/// The connections to one operator, kept open between requests.
#[derive(Clone, Debug)]
pub struct HttpClient {
    endpoint: Endpoint,
    client: Client<Connector, Full<Bytes>>,
}

/// How long an idle connection is kept for the next request.
const IDLE: Duration = Duration::from_secs(30);

impl HttpClient {
    pub fn new(endpoint: Endpoint) -> HttpClient {
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(IDLE)
            .build(Connector {
                endpoint: endpoint.clone(),
            });
        HttpClient { endpoint, client }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Posts `body` to `operation`'s URL with `signature` as its `X-Banco-Signature`
    /// (`None`: no header) and reads the whole answer. No time limit: the caller sets it.
    pub async fn post(
        &self,
        operation: Operation,
        body: Bytes,
        signature: Option<&str>,
    ) -> Result<Exchange, Fault> {
        let mut request = http::Request::post(self.endpoint.url(operation))
            .header(http::header::CONTENT_TYPE, "application/json");
        if let Some(signature) = signature {
            request = request.header(SIGNATURE_HEADER, signature);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| Fault::Unreachable(e.to_string()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| Fault::Unreachable(banco_auth::error_chain(&e)))?;
        let http_status = response.status().as_u16();
        let signature = response
            .headers()
            .get(SIGNATURE_HEADER)
            .map(|v| v.as_bytes().to_vec());
        let body = Limited::new(response.into_body(), MAX_BODY_BYTES)
            .collect()
            .await
            .map_err(|e| Fault::Body(e.to_string()))?
            .to_bytes();
        Ok(Exchange {
            http_status,
            body,
            signature,
        })
    }
}

/// Dials the endpoint's host (whatever the URI: the client only ever asks for it), with
/// TLS when it is https.
#[derive(Clone, Debug)]
struct Connector {
    endpoint: Endpoint,
}

impl tower_service::Service<http::Uri> for Connector {
    type Response = TokioIo<Stream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Stream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        let endpoint = self.endpoint.clone();
        Box::pin(async move {
            let tcp = TcpStream::connect((endpoint.host(), endpoint.port())).await?;
            // One small request, one small answer: send each at once.
            tcp.set_nodelay(true)?;
            let stream = match endpoint.tls() {
                None => Stream::Plain(tcp),
                Some((connector, name)) => {
                    Stream::Tls(Box::new(connector.connect(name.clone(), tcp).await?))
                }
            };
            Ok(TokioIo::new(stream))
        })
    }
}

/// A connection to the operator, plain (loopback) or TLS.
#[derive(Debug)]
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
