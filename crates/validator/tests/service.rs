//! RulesService over a real socket on 127.0.0.1, with tokens, health and reflection.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{BearerToken, Issuer, Role};
use banco_validator::{ServeOptions, serve};
use banco_wire::pb;
use banco_wire::pb::rules_service_client::RulesServiceClient;
use tokio::net::TcpListener;
use tonic::Code;
use tonic::transport::Channel;

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[7; 32]), "banco").unwrap()
}

async fn start() -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = ServeOptions {
        verifier: Arc::new(issuer().verifier()),
        metrics: None,
    };
    tokio::spawn(async move {
        serve(listener, options, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (addr, stop)
}

async fn channel(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

fn token(role: Role, issued: SystemTime) -> BearerToken {
    BearerToken::new(
        &issuer()
            .issue("tester", role, Duration::from_secs(60), issued)
            .unwrap(),
    )
    .unwrap()
}

fn request() -> pb::CheckCardRequest {
    pb::CheckCardRequest {
        shoe: Some(pb::check_card_request::Shoe::Seen(pb::SeenCards {
            decks: 8,
            cards: vec!["AS".into(); 7],
        })),
        hand: vec!["AS".into()],
        card: "AS".into(),
    }
}

#[tokio::test]
async fn roles_tokens_and_answers_over_the_wire() {
    let (addr, _stop) = start().await;
    let channel = channel(addr).await;

    let mut service = RulesServiceClient::with_interceptor(
        channel.clone(),
        token(Role::Service, SystemTime::now()),
    );
    let answer = service.check_card(request()).await.unwrap().into_inner();
    assert!(!answer.accepted);
    assert_eq!(answer.refusal.unwrap().code(), pb::RefusalCode::Misread);

    let mut auditor = RulesServiceClient::with_interceptor(
        channel.clone(),
        token(Role::Auditor, SystemTime::now()),
    );
    let bad = auditor
        .check_card(pb::CheckCardRequest {
            card: "1H".into(),
            ..request()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("card"), "{bad:?}");

    let mut player = RulesServiceClient::with_interceptor(
        channel.clone(),
        token(Role::Player, SystemTime::now()),
    );
    assert_eq!(
        player.check_card(request()).await.unwrap_err().code(),
        Code::PermissionDenied
    );

    let mut croupier = RulesServiceClient::with_interceptor(
        channel.clone(),
        token(Role::Croupier, SystemTime::now()),
    );
    assert_eq!(
        croupier.check_card(request()).await.unwrap_err().code(),
        Code::PermissionDenied
    );

    let stale = SystemTime::now() - Duration::from_secs(3600);
    let mut expired =
        RulesServiceClient::with_interceptor(channel.clone(), token(Role::Service, stale));
    assert_eq!(
        expired.check_card(request()).await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let forger = Issuer::new(signing_key_from_seed(&[8; 32]), "banco").unwrap();
    let forged = forger
        .issue(
            "tester",
            Role::Service,
            Duration::from_secs(60),
            SystemTime::now(),
        )
        .unwrap();
    let mut forged =
        RulesServiceClient::with_interceptor(channel.clone(), BearerToken::new(&forged).unwrap());
    assert_eq!(
        forged.check_card(request()).await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let mut anonymous = RulesServiceClient::new(channel.clone());
    assert_eq!(
        anonymous.check_card(request()).await.unwrap_err().code(),
        Code::Unauthenticated
    );
}

#[tokio::test]
async fn health_and_reflection_answer_without_a_token() {
    let (addr, _stop) = start().await;
    let channel = channel(addr).await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "banco.v1.RulesService".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        status.status(),
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );

    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let mut reflection = ServerReflectionClient::new(channel);
    let ask = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter([ask]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("unexpected reflection answer: {answer:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for service in [
        "banco.v1.RulesService",
        "banco.v1.TableService",
        "banco.v1.ArchiveService",
    ] {
        assert!(
            names.iter().any(|n| n == service),
            "{service} missing from {names:?}"
        );
    }
}

#[tokio::test]
async fn plaintext_beyond_loopback_is_refused() {
    let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    let options = ServeOptions {
        verifier: Arc::new(issuer().verifier()),
        metrics: None,
    };
    let err = serve(listener, options, async {}).await.unwrap_err();
    assert!(err.to_string().contains("TLS"), "{err}");
}
