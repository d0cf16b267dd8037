//! The tonic interceptors: who gets in, with which status, and what handlers see.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use banco_auth::keys::signing_key_from_seed;
use banco_auth::{AuthInterceptor, BearerToken, Issuer, Role, caller};
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::{Code, Request};

const T0: u64 = 1_800_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn issuer() -> Issuer {
    Issuer::new(signing_key_from_seed(&[3; 32]), "banco").unwrap()
}

/// A TableService guard whose clock reads T0.
fn table_guard(issuer: &Issuer) -> AuthInterceptor {
    AuthInterceptor::new(Arc::new(issuer.verifier()), &[Role::Croupier]).with_clock(|| at(T0))
}

fn token(issuer: &Issuer, role: Role) -> String {
    issuer
        .issue("dealer-1", role, Duration::from_secs(600), at(T0))
        .unwrap()
}

fn request_with(authorization: &str) -> Request<()> {
    let mut request = Request::new(());
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(authorization).unwrap(),
    );
    request
}

#[test]
fn the_right_role_gets_in_and_handlers_see_the_caller() {
    let issuer = issuer();
    let token = token(&issuer, Role::Croupier);
    let request = table_guard(&issuer)
        .call(request_with(&format!("Bearer {token}")))
        .unwrap();
    let who = caller(&request).unwrap();
    assert_eq!(who.sub, "dealer-1");
    assert_eq!(who.role, Role::Croupier);
    assert!(
        request.metadata().get("authorization").is_none(),
        "the token is removed before handlers can log it"
    );
}

#[test]
fn the_scheme_is_case_insensitive() {
    let issuer = issuer();
    let token = token(&issuer, Role::Croupier);
    assert!(
        table_guard(&issuer)
            .call(request_with(&format!("bearer {token}")))
            .is_ok()
    );
}

#[test]
fn a_valid_token_with_the_wrong_role_is_permission_denied() {
    let issuer = issuer();
    let token = token(&issuer, Role::Player);
    let status = table_guard(&issuer)
        .call(request_with(&format!("Bearer {token}")))
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert!(status.message().contains("player"), "{}", status.message());
    assert!(
        status.message().contains("croupier"),
        "{}",
        status.message()
    );
}

#[test]
fn several_roles_can_be_admitted() {
    let issuer = issuer();
    let mut archive =
        AuthInterceptor::new(Arc::new(issuer.verifier()), &[Role::Auditor, Role::Service])
            .with_clock(|| at(T0));
    for role in [Role::Auditor, Role::Service] {
        let request = request_with(&format!("Bearer {}", token(&issuer, role)));
        assert!(archive.call(request).is_ok(), "{role}");
    }
    let request = request_with(&format!("Bearer {}", token(&issuer, Role::Croupier)));
    assert_eq!(
        archive.call(request).unwrap_err().code(),
        Code::PermissionDenied
    );
}

/// `part` with its first character replaced by another base64url character.
fn flip_first(part: &str) -> String {
    let replacement = if part.starts_with('A') { "B" } else { "A" };
    format!("{replacement}{}", &part[1..])
}

#[test]
fn bad_credentials_are_unauthenticated_with_a_reason() {
    let issuer = issuer();
    let good = token(&issuer, Role::Croupier);
    let (head, sig) = good.rsplit_once('.').unwrap();
    let foreign = Issuer::new(signing_key_from_seed(&[4; 32]), "banco").unwrap();
    let elsewhere = Issuer::new(signing_key_from_seed(&[3; 32]), "casino-b").unwrap();
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("missing header", None, "missing"),
        ("basic scheme", Some(format!("Basic {good}")), "Bearer"),
        ("no scheme", Some(good.clone()), "Bearer"),
        (
            "bad base64",
            Some(format!("Bearer {head}.!!{}", &sig[2..])),
            "base64",
        ),
        (
            "extra segment",
            Some(format!("Bearer {good}.AAAA")),
            "3 dot-separated",
        ),
        (
            "oversized",
            Some(format!("Bearer banco1.{}", "A".repeat(5000))),
            "maximum",
        ),
        (
            "forged",
            Some(format!("Bearer {head}.{}", flip_first(sig))),
            "signature",
        ),
        (
            "unknown key",
            Some(format!("Bearer {}", token(&foreign, Role::Croupier))),
            "unknown key",
        ),
        (
            "wrong audience",
            Some(format!("Bearer {}", token(&elsewhere, Role::Croupier))),
            "audience",
        ),
        ("double space", Some(format!("Bearer  {good}")), "malformed"),
    ];
    for (what, header, reason) in cases {
        let request = match &header {
            Some(h) => request_with(h),
            None => Request::new(()),
        };
        let Err(status) = table_guard(&issuer).call(request) else {
            panic!("{what}: accepted");
        };
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
        assert!(
            status.message().contains(reason),
            "{what}: {}",
            status.message()
        );
        assert!(!status.message().contains(sig), "{what}: token echoed");
    }
}

#[test]
fn expired_is_unauthenticated() {
    let issuer = issuer();
    let token = token(&issuer, Role::Croupier);
    let mut late = AuthInterceptor::new(Arc::new(issuer.verifier()), &[Role::Croupier])
        .with_clock(|| at(T0 + 600 + 31));
    let status = late
        .call(request_with(&format!("Bearer {token}")))
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert!(status.message().contains("expired"), "{}", status.message());
}

#[test]
fn two_authorization_entries_are_refused() {
    let issuer = issuer();
    let token = token(&issuer, Role::Croupier);
    let mut request = request_with(&format!("Bearer {token}"));
    request.metadata_mut().append(
        "authorization",
        MetadataValue::try_from(format!("Bearer {token}")).unwrap(),
    );
    let status = table_guard(&issuer).call(request).unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
}

#[test]
fn caller_without_the_interceptor_is_an_internal_error() {
    let status = caller(&Request::new(())).unwrap_err();
    assert_eq!(status.code(), Code::Internal);
}

#[test]
fn bearer_token_attaches_a_header_the_guard_accepts() {
    let issuer = issuer();
    let token = token(&issuer, Role::Croupier);
    let mut attach = BearerToken::new(&token).unwrap();
    let outgoing = attach.call(Request::new(())).unwrap();
    let value = outgoing.metadata().get("authorization").unwrap();
    assert!(value.is_sensitive());
    assert_eq!(value.to_str().unwrap(), format!("Bearer {token}"));
    assert!(!format!("{attach:?}").contains(&token));
    assert!(table_guard(&issuer).call(outgoing).is_ok());
}

#[test]
fn bearer_token_refuses_what_cannot_be_a_token() {
    assert!(BearerToken::new("").is_err());
    assert!(BearerToken::new("a b").is_err());
    assert!(BearerToken::new("a\nb").is_err());
    assert!(BearerToken::new(&"a".repeat(5000)).is_err());
}
