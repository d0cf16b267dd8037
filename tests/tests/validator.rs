//! `banco token` and `banco validator` as an operator runs them: keys on disk, the
//! validator in its own process on a loopback port, a client holding an issued token.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use banco_auth::BearerToken;
use banco_e2e::banco;
use banco_wire::pb;
use banco_wire::pb::rules_service_client::RulesServiceClient;

/// Kills the validator when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn issue(dir: &Path, role: &str) -> String {
    let out = banco()
        .args([
            "token",
            "issue",
            "--role",
            role,
            "--sub",
            "table-T01",
            "--ttl",
            "5m",
        ])
        .arg("--key")
        .arg(dir.join("signing.key"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn validator_process_checks_cards_for_the_service_role_only() {
    let dir = tempfile::tempdir().unwrap();
    let keygen = banco()
        .args(["token", "keygen", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        keygen.status.success(),
        "{}",
        String::from_utf8_lossy(&keygen.stderr)
    );
    let again = banco()
        .args(["token", "keygen", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        !again.status.success(),
        "an existing key is never overwritten"
    );

    let mut child = banco()
        .args(["validator", "--listen", "127.0.0.1:0", "--public-key"])
        .arg(dir.path().join("signing.pub"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _running = Running(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("validator listening on ")
        .unwrap()
        .to_owned();

    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let service = BearerToken::new(&issue(dir.path(), "service")).unwrap();
    let mut client = RulesServiceClient::with_interceptor(channel.clone(), service);
    let request = pb::CheckCardRequest {
        shoe: Some(pb::check_card_request::Shoe::Seen(pb::SeenCards {
            decks: 8,
            cards: vec!["AS".into(); 8],
        })),
        hand: vec![],
        card: "AS".into(),
    };
    let answer = client
        .check_card(request.clone())
        .await
        .unwrap()
        .into_inner();
    assert!(!answer.accepted);
    let refusal = answer.refusal.unwrap();
    assert_eq!(refusal.code(), pb::RefusalCode::Misread);
    assert!(refusal.message.contains("ninth A♠"), "{}", refusal.message);

    let player = BearerToken::new(&issue(dir.path(), "player")).unwrap();
    let mut client = RulesServiceClient::with_interceptor(channel, player);
    let denied = client.check_card(request).await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);
}

#[test]
fn token_issue_refuses_bad_roles_subjects_and_lifetimes() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        banco()
            .args(["token", "keygen", "--dir"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success()
    );
    for (args, needle) in [
        (["--role", "dealer", "--sub", "x", "--ttl", "1h"], "dealer"),
        (
            ["--role", "player", "--sub", "bad name", "--ttl", "1h"],
            "bad name",
        ),
        (
            ["--role", "player", "--sub", "alice", "--ttl", "1y"],
            "--ttl 1y",
        ),
    ] {
        let out = banco()
            .args(["token", "issue"])
            .args(args)
            .arg("--key")
            .arg(dir.path().join("signing.key"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}
