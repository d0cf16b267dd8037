//! `banco wallet-conformance` as a casino's developer runs it: against banco's own
//! seamless server it passes every check; against one that forgets early cancels it fails,
//! naming that check, with exit status 1; bad arguments are refused before any request.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use banco_e2e::banco;
use banco_wallet::Wallet;
use banco_wallet::seamless::SeamlessSecret;
use banco_wallet::seamless::memory::{ForgetsEarlyCancels, MemoryWallet};
use tokio::sync::oneshot;

const SECRET: &str = "a secret shared with the casino, 32 bytes or more";

fn secret_file(dir: &Path) -> PathBuf {
    let path = dir.join("wallet.secret");
    std::fs::write(&path, format!("{SECRET}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

/// `wallet` served on a loopback port until the sender is dropped; its URL.
async fn serve(wallet: Arc<dyn Wallet>) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let secret = SeamlessSecret::new(SECRET.as_bytes()).unwrap();
    tokio::spawn(banco_wallet::seamless::serve(
        listener,
        wallet,
        secret,
        async {
            let _ = stopped.await;
        },
    ));
    (url, stop)
}

async fn conformance(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        banco()
            .arg("wallet-conformance")
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_passes_against_banco_s_server_and_names_a_wrong_one_s_fault() {
    let dir = tempfile::tempdir().unwrap();
    let secret = secret_file(dir.path()).display().to_string();

    let wallet = MemoryWallet::new();
    wallet.deposit("test-player", "EUR", 2_500);
    let (url, _stop) = serve(wallet.clone()).await;
    let args = vec![
        url,
        "--secret-file".to_owned(),
        secret.clone(),
        "--player".to_owned(),
        "test-player".to_owned(),
    ];
    let out = conformance(args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("PASS  balance: OK, €25.00 for test-player"),
        "{stdout}"
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
    let checks = stdout.lines().filter(|l| l.starts_with("PASS  ")).count();
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{checks} passed, 0 failed").as_str())
    );
    assert_eq!(wallet.balance("test-player", "EUR"), 2_500);

    let wrong = MemoryWallet::new();
    wrong.deposit("test-player", "EUR", 2_500);
    let (url, _stop) = serve(ForgetsEarlyCancels::new(wrong)).await;
    let args = vec![
        url,
        "--secret-file".to_owned(),
        secret,
        "--player".to_owned(),
        "test-player".to_owned(),
    ];
    let out = conformance(args).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let failed: Vec<_> = stdout.lines().filter(|l| l.starts_with("FAIL  ")).collect();
    assert_eq!(failed.len(), 1, "{stdout}");
    assert!(
        failed[0].starts_with("FAIL  cancel before debit, then the debit refused: "),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{} passed, 1 failed", checks - 1).as_str())
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let secret = secret_file(dir.path()).display().to_string();
    let exposed = dir.path().join("exposed.secret");
    std::fs::write(&exposed, SECRET).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&exposed, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let cases = [
        (
            vec!["http://casino.example/banco/", "--secret-file", &secret],
            "plain http goes only to this machine",
        ),
        (
            vec![
                "http://127.0.0.1:9/",
                "--secret-file",
                &secret,
                "--currency",
                "eur",
            ],
            "--currency eur: not an ISO 4217 code",
        ),
        (
            vec![
                "http://127.0.0.1:9/",
                "--secret-file",
                exposed.to_str().unwrap(),
            ],
            "chmod 600",
        ),
    ];
    for (args, needle) in cases {
        let out = conformance(args.into_iter().map(str::to_owned).collect()).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{needle}: {stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing checked");
    }
}
