//! [`RemoteRules`] against a validator serving TLS on 127.0.0.1 (a self-signed certificate
//! made at test time): with its CA a card is checked; without it, or with another CA, or in
//! plaintext, no card is accepted.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_auth::client::ClientError;
use banco_auth::keys::signing_key_from_seed;
use banco_auth::{ClientTls, Issuer, Role};
use banco_rules::{Card, Composition};
use banco_table::{CardCheck, RemoteRules, Rules, RulesError};
use banco_validator::{ServeOptions, ServerTls, serve_with_tls};
use tokio::net::TcpListener;

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap()
}

fn token() -> String {
    issuer()
        .issue(
            "table-T01",
            Role::Service,
            Duration::from_secs(600),
            SystemTime::now(),
        )
        .unwrap()
}

use banco_testkit::self_signed_localhost as self_signed;

/// Serves RulesService with TLS on 127.0.0.1:0 until the test ends; returns the port.
async fn tls_validator(tls: ServerTls) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let options = ServeOptions {
        verifier: Arc::new(issuer().verifier()),
        metrics: None,
    };
    tokio::spawn(serve_with_tls(
        listener,
        options,
        Some(tls),
        std::future::pending(),
    ));
    port
}

async fn check_ace(rules: &RemoteRules) -> Result<CardCheck, RulesError> {
    let shoe = Composition::full(8).unwrap();
    rules
        .check_card(&shoe, 8, &[], Card::parse("AS").unwrap())
        .await
}

#[tokio::test]
async fn over_https_with_the_ca_a_card_is_checked() {
    let (ca, tls) = self_signed();
    let port = tls_validator(tls).await;
    // By the name in the certificate, reached at an IP address: the domain override.
    let client = ClientTls::from_ca_pem(ca.as_bytes())
        .unwrap()
        .with_domain("localhost");
    let rules = RemoteRules::connect_tls(
        &format!("https://127.0.0.1:{port}"),
        &token(),
        Duration::from_secs(5),
        Some(client),
    )
    .unwrap();
    assert_eq!(check_ace(&rules).await.unwrap(), CardCheck::Accepted);

    // By `localhost`, the URL's own host, without an override.
    let rules = RemoteRules::connect_tls(
        &format!("https://localhost:{port}"),
        &token(),
        Duration::from_secs(5),
        Some(ClientTls::from_ca_pem(ca.as_bytes()).unwrap()),
    )
    .unwrap();
    assert_eq!(check_ace(&rules).await.unwrap(), CardCheck::Accepted);
}

#[tokio::test]
async fn https_without_a_ca_is_a_clear_error() {
    let (_, tls) = self_signed();
    let port = tls_validator(tls).await;
    let url = format!("https://127.0.0.1:{port}");
    let err = RemoteRules::connect(&url, &token(), Duration::from_secs(5)).unwrap_err();
    assert!(matches!(err, ClientError::HttpsNeedsCa(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("https needs a CA certificate"), "{text}");
    assert!(text.contains(&url), "{text}");
    assert!(!text.contains("--"), "a library names no flag: {text}");
}

#[tokio::test]
async fn a_ca_with_a_plaintext_url_is_refused() {
    let (ca, tls) = self_signed();
    let port = tls_validator(tls).await;
    let err = RemoteRules::connect_tls(
        &format!("http://127.0.0.1:{port}"),
        &token(),
        Duration::from_secs(5),
        Some(ClientTls::from_ca_pem(ca.as_bytes()).unwrap()),
    )
    .unwrap_err();
    assert!(matches!(err, ClientError::CaNeedsHttps(_)), "{err:?}");
    assert!(err.to_string().contains("use https://"), "{err}");
}

#[tokio::test]
async fn no_card_is_accepted_unchecked() {
    let (_, tls) = self_signed();
    let (other_ca, _) = self_signed();
    let port = tls_validator(tls).await;

    // Trusting another CA: the handshake fails, the card is not accepted.
    let rules = RemoteRules::connect_tls(
        &format!("https://127.0.0.1:{port}"),
        &token(),
        Duration::from_secs(5),
        Some(ClientTls::from_ca_pem(other_ca.as_bytes()).unwrap()),
    )
    .unwrap();
    let err = check_ace(&rules).await.unwrap_err();
    assert!(matches!(err, RulesError::Unreachable(_)), "{err:?}");

    // Plaintext to the TLS server: no answer that accepts the card.
    let rules = RemoteRules::connect(
        &format!("http://127.0.0.1:{port}"),
        &token(),
        Duration::from_secs(2),
    )
    .unwrap();
    let err = check_ace(&rules).await.unwrap_err();
    assert!(matches!(err, RulesError::Unreachable(_)), "{err:?}");
}
