//! RulesService over TLS: a self-signed certificate for `localhost` made at test time, a
//! TLS client that trusts it, a plaintext client that must fail, and TLS beyond loopback.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Issuer, Role};
use banco_validator::{ServeOptions, ServerTls, serve_with_tls};
use banco_wire::pb;
use banco_wire::pb::rules_service_client::RulesServiceClient;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

use banco_testkit::self_signed_localhost as self_signed;

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap()
}

fn service_token() -> BearerToken {
    BearerToken::new(
        &issuer()
            .issue(
                "table",
                Role::Service,
                Duration::from_secs(60),
                SystemTime::now(),
            )
            .unwrap(),
    )
    .unwrap()
}

/// Serves with TLS on `bind`; returns the port's loopback address, the stop switch and
/// the server task (which yields serve's result).
async fn start(
    bind: &str,
    tls: ServerTls,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    JoinHandle<Result<(), banco_validator::ServeError>>,
) {
    let listener = TcpListener::bind(bind).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = oneshot::channel::<()>();
    let options = ServeOptions {
        verifier: Arc::new(issuer().verifier()),
        metrics: None,
    };
    let task = tokio::spawn(serve_with_tls(listener, options, Some(tls), async {
        let _ = stopped.await;
    }));
    (SocketAddr::from(([127, 0, 0, 1], port)), stop, task)
}

async fn tls_channel(addr: SocketAddr, ca_pem: &str) -> Channel {
    Channel::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(ca_pem))
                .domain_name("localhost"),
        )
        .unwrap()
        .connect()
        .await
        .unwrap()
}

fn request() -> pb::CheckCardRequest {
    pb::CheckCardRequest {
        shoe: Some(pb::check_card_request::Shoe::Seen(pb::SeenCards {
            decks: 8,
            cards: vec![],
        })),
        hand: vec![],
        card: "AS".into(),
    }
}

async fn check_card_over_tls(addr: SocketAddr, ca_pem: &str) {
    let channel = tls_channel(addr, ca_pem).await;
    let mut client = RulesServiceClient::with_interceptor(channel, service_token());
    let answer = client.check_card(request()).await.unwrap().into_inner();
    assert!(answer.accepted, "{answer:?}");
}

#[tokio::test]
async fn a_tls_client_with_a_service_token_is_answered() {
    let (ca_pem, tls) = self_signed();
    let (addr, stop, task) = start("127.0.0.1:0", tls).await;
    check_card_over_tls(addr, &ca_pem).await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_plaintext_client_cannot_talk_to_a_tls_server() {
    let (_, tls) = self_signed();
    let (addr, _stop, _task) = start("127.0.0.1:0", tls).await;
    let attempt = tokio::time::timeout(Duration::from_secs(10), async {
        let channel = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await?;
        let mut client = RulesServiceClient::with_interceptor(channel, service_token());
        client
            .check_card(request())
            .await
            .map(|_| ())
            .map_err(|status| -> Box<dyn std::error::Error> { Box::new(status) })?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
    .await
    .expect("a plaintext client hung against the TLS server");
    assert!(
        attempt.is_err(),
        "plaintext call was answered by a TLS server"
    );
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused() {
    let (_, tls) = self_signed();
    let (other_ca, _) = self_signed();
    let (addr, _stop, _task) = start("127.0.0.1:0", tls).await;
    let connected = Channel::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(other_ca))
                .domain_name("localhost"),
        )
        .unwrap()
        .connect()
        .await;
    match connected {
        Err(_) => {}
        Ok(channel) => {
            let mut client = RulesServiceClient::with_interceptor(channel, service_token());
            assert!(client.check_card(request()).await.is_err());
        }
    }
}

#[tokio::test]
async fn tls_beyond_loopback_is_served() {
    let (ca_pem, tls) = self_signed();
    let (addr, stop, task) = start("0.0.0.0:0", tls).await;
    check_card_over_tls(addr, &ca_pem).await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
