//! The interceptors on a real server and client over 127.0.0.1: the guarded service is the
//! standard gRPC health service, so no protocol of our own is needed.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{AuthInterceptor, BearerToken, Issuer, Role, require_tls_unless_loopback};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::Code;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Server};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

async fn serve(guard: AuthInterceptor) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    require_tls_unless_loopback(addr, false).unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(
        Server::builder()
            .add_service(InterceptedService::new(health, guard))
            .serve_with_incoming(TcpListenerStream::new(listener)),
    );
    addr
}

async fn check(addr: SocketAddr, token: Option<&str>) -> Result<(), tonic::Status> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let request = HealthCheckRequest {
        service: String::new(),
    };
    match token {
        Some(token) => {
            HealthClient::with_interceptor(channel, BearerToken::new(token).unwrap())
                .check(request)
                .await
        }
        None => HealthClient::new(channel).check(request).await,
    }
    .map(|_| ())
}

#[tokio::test]
async fn guarded_service_admits_the_role_and_refuses_the_rest() {
    let issuer = Issuer::new(signing_key_from_seed(&[11; 32]), "banco").unwrap();
    let guard = AuthInterceptor::new(Arc::new(issuer.verifier()), &[Role::Croupier]);
    let addr = serve(guard).await;
    let ttl = Duration::from_secs(60);
    let croupier = issuer
        .issue("dealer-1", Role::Croupier, ttl, SystemTime::now())
        .unwrap();
    let player = issuer
        .issue("alice", Role::Player, ttl, SystemTime::now())
        .unwrap();
    let stale = issuer
        .issue(
            "dealer-1",
            Role::Croupier,
            ttl,
            SystemTime::now() - Duration::from_secs(3600),
        )
        .unwrap();

    check(addr, Some(&croupier)).await.unwrap();
    let denied = check(addr, Some(&player)).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    let missing = check(addr, None).await.unwrap_err();
    assert_eq!(missing.code(), Code::Unauthenticated, "{missing:?}");
    let expired = check(addr, Some(&stale)).await.unwrap_err();
    assert_eq!(expired.code(), Code::Unauthenticated, "{expired:?}");
    assert!(
        expired.message().contains("expired"),
        "{}",
        expired.message()
    );
}
