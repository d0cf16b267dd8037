//! banco's services as separate processes on loopback ports, started the way an operator
//! starts them: keys from `banco token keygen`, the bound address read from the first line
//! of stdout, and a SIGKILL (not a polite shutdown) when a test wants a crash.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use banco_auth::{BearerToken, Issuer, Role};
use tonic::transport::{Channel, Endpoint};

use crate::banco;

/// A signing key pair on disk (`signing.key`, `signing.pub`) and tokens signed with it.
#[derive(Debug)]
pub struct Keys {
    dir: PathBuf,
}

impl Keys {
    /// Runs `banco token keygen --dir <dir>`.
    pub fn generate(dir: &Path) -> Keys {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let out = banco()
            .args(["token", "keygen", "--dir"])
            .arg(dir)
            .output()
            .unwrap_or_else(|e| panic!("banco token keygen: {e}"));
        assert!(
            out.status.success(),
            "banco token keygen: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Keys {
            dir: dir.to_owned(),
        }
    }

    pub fn public_key(&self) -> PathBuf {
        self.dir.join("signing.pub")
    }

    pub fn signing_key(&self) -> PathBuf {
        self.dir.join("signing.key")
    }

    /// `banco token issue --role <role> --sub <sub> --ttl <ttl>`: the token it prints.
    pub fn issue(&self, role: &str, sub: &str, ttl: &str) -> String {
        let out = banco()
            .args(["token", "issue", "--role", role, "--sub", sub, "--ttl", ttl])
            .arg("--key")
            .arg(self.signing_key())
            .output()
            .unwrap_or_else(|e| panic!("banco token issue: {e}"));
        assert!(
            out.status.success(),
            "banco token issue: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The same kind of token signed in this process (for many players at once, or a
    /// token issued at a chosen time, e.g. one already expired).
    pub fn issue_at(&self, role: Role, sub: &str, ttl: Duration, now: SystemTime) -> String {
        let key = banco_auth::keys::load_signing_key(&self.signing_key())
            .unwrap_or_else(|e| panic!("{e}"));
        let issuer = Issuer::new(key, "banco").unwrap_or_else(|e| panic!("{e}"));
        issuer
            .issue(sub, role, ttl, now)
            .unwrap_or_else(|e| panic!("token for {sub}: {e}"))
    }

    /// A token file for `--service-token-file`.
    pub fn service_token_file(&self) -> PathBuf {
        let path = self.dir.join("service.token");
        if !path.exists() {
            let token = self.issue("service", "broadcaster", "1d");
            std::fs::write(&path, token).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        path
    }
}

/// A service in its own process. Killed (SIGKILL) when dropped, pass or fail.
#[derive(Debug)]
pub struct Service {
    child: Child,
    addr: String,
}

impl Service {
    /// Starts `banco <args>` and waits for its `<name> listening on <addr>` line.
    pub fn start(name: &str, args: &[std::ffi::OsString]) -> Service {
        let mut command = banco();
        command.args(args);
        Service::spawn(name, command)
    }

    /// Starts `command` (a `banco` service, perhaps behind a wrapper such as a shell that
    /// sets a limit first) and waits for its `<name> listening on <addr>` line.
    pub fn spawn(name: &str, command: std::process::Command) -> Service {
        Service::spawn_with_metrics(name, command, false).0
    }

    /// [`Service::start`]; with `metrics`, also waits for the `metrics listening on
    /// <addr>` line that follows (the service given `--metrics-listen`), and returns that
    /// address.
    pub fn start_with_metrics(
        name: &str,
        args: &[std::ffi::OsString],
        metrics: bool,
    ) -> (Service, Option<String>) {
        let mut command = banco();
        command.args(args);
        Service::spawn_with_metrics(name, command, metrics)
    }

    fn spawn_with_metrics(
        name: &str,
        command: std::process::Command,
        metrics: bool,
    ) -> (Service, Option<String>) {
        let more: &[&str] = if metrics { &["metrics"] } else { &[] };
        let (service, mut addrs) = Service::spawn_listening(name, command, more);
        (service, addrs.pop())
    }

    /// Starts `command` and waits for its `<name> listening on <addr>` line, then for one
    /// `<other> listening on <addr>` line per name of `more`, in that order (a service's
    /// second listener, its metrics); their addresses.
    pub fn spawn_listening(
        name: &str,
        mut command: std::process::Command,
        more: &[&str],
    ) -> (Service, Vec<String>) {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("banco {name}: {e}"));
        let Some(stdout) = child.stdout.take() else {
            panic!("banco {name}: no stdout");
        };
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let read = reader.read_line(&mut line);
        let prefix = format!("{name} listening on ");
        let Some(addr) = line.trim().strip_prefix(&prefix).map(str::to_owned) else {
            let _ = child.kill();
            let status = child.wait();
            panic!("banco {name} did not start ({read:?}, {status:?}): first line `{line}`");
        };
        let addrs = more
            .iter()
            .map(|other| {
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                match line.trim().strip_prefix(&format!("{other} listening on ")) {
                    Some(addr) => addr.to_owned(),
                    None => panic!("banco {name}: no {other} address, but `{line}`"),
                }
            })
            .collect();
        // Keep draining stdout so the service never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        (Service { child, addr }, addrs)
    }

    /// `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL, then reap.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGINT (what Ctrl-C sends), then waits up to `within` for the process to
    /// exit; whether it did.
    pub fn interrupt(&mut self, within: Duration) -> bool {
        self.signal("INT", within).is_some()
    }

    /// Sends `signal` (`INT`, `TERM`, …), then waits up to `within` for the process to
    /// exit; how it exited, `None` if it still runs.
    pub fn signal(&mut self, signal: &str, within: Duration) -> Option<std::process::ExitStatus> {
        let sent = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(sent, "could not send SIG{signal}");
        crate::poll_blocking(
            within,
            Duration::from_millis(50),
            || self.child.try_wait().ok().flatten(),
            Option::is_some,
        )
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `banco validator --listen 127.0.0.1:0 --public-key <keys>`.
pub fn start_validator(keys: &Keys) -> Service {
    start_validator_on(keys, "127.0.0.1:0")
}

/// `banco validator --listen <listen> --public-key <keys>`: `listen` is the address of an
/// earlier start to come back where the broadcaster's `--validator` expects it.
pub fn start_validator_on(keys: &Keys, listen: &str) -> Service {
    Service::start(
        "validator",
        &[
            "validator".into(),
            "--listen".into(),
            listen.into(),
            "--public-key".into(),
            keys.public_key().into(),
        ],
    )
}

/// How to start `banco broadcaster`.
#[derive(Clone, Debug)]
pub struct BroadcasterSetup {
    /// `--listen`: `127.0.0.1:0` for a fresh port, or the address of an earlier start to
    /// come back where clients with a fixed `--server` expect it.
    pub listen: String,
    pub table: String,
    pub data_dir: PathBuf,
    pub validator_url: String,
    pub public_key: PathBuf,
    pub service_token_file: PathBuf,
    pub welcome_credit: i64,
    pub decks: u8,
    /// `--archive URL`: finished rounds go to this ArchiveService (None: to
    /// `outbox.jsonl`).
    pub archive_url: Option<String>,
    /// `--table-key FILE`: the signing key that signs every finished round (None:
    /// unsigned).
    pub table_key: Option<PathBuf>,
    /// `--clips-dir DIR`: where round clips are written (None: the broadcaster's default).
    pub clips_dir: Option<PathBuf>,
    /// `--betting-seconds N`: betting closes by itself after N seconds (None: the
    /// croupier closes it).
    pub betting_seconds: Option<u32>,
    /// More flags, as given (e.g. `--player-bets-per-second 1`).
    pub extra_args: Vec<String>,
    /// `--subscriber-queue N`: events that may wait unread for one subscriber before it
    /// is cut off (None: the broadcaster's default).
    pub subscriber_queue: Option<usize>,
}

impl BroadcasterSetup {
    /// Table `T01`, 8 decks, no welcome credit.
    pub fn new(keys: &Keys, validator: &Service, data_dir: &Path) -> BroadcasterSetup {
        BroadcasterSetup {
            listen: "127.0.0.1:0".to_owned(),
            table: "T01".to_owned(),
            data_dir: data_dir.to_owned(),
            validator_url: validator.url(),
            public_key: keys.public_key(),
            service_token_file: keys.service_token_file(),
            welcome_credit: 0,
            decks: 8,
            archive_url: None,
            table_key: None,
            clips_dir: None,
            betting_seconds: None,
            extra_args: Vec::new(),
            subscriber_queue: None,
        }
    }

    /// The outbox file this broadcaster writes its finished rounds to.
    pub fn outbox(&self) -> PathBuf {
        self.data_dir.join(&self.table).join("outbox.jsonl")
    }

    /// Starts it (again, on the same data dir, after a kill) on `listen`.
    pub fn start(&self) -> Service {
        let mut command = banco();
        command.args(self.args());
        Service::spawn("broadcaster", command)
    }

    /// The arguments after `banco`.
    pub fn args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec![
            "broadcaster".into(),
            "--listen".into(),
            self.listen.clone().into(),
            "--table".into(),
            self.table.clone().into(),
            "--data-dir".into(),
            self.data_dir.clone().into(),
            "--validator".into(),
            self.validator_url.clone().into(),
            "--public-key".into(),
            self.public_key.clone().into(),
            "--service-token-file".into(),
            self.service_token_file.clone().into(),
            "--welcome-credit".into(),
            self.welcome_credit.to_string().into(),
            "--decks".into(),
            self.decks.to_string().into(),
        ];
        if let Some(url) = &self.archive_url {
            args.extend(["--archive".into(), url.into()]);
        }
        if let Some(key) = &self.table_key {
            args.extend(["--table-key".into(), key.into()]);
        }
        if let Some(dir) = &self.clips_dir {
            args.extend(["--clips-dir".into(), dir.into()]);
        }
        if let Some(seconds) = self.betting_seconds {
            args.extend(["--betting-seconds".into(), seconds.to_string().into()]);
        }
        if let Some(events) = self.subscriber_queue {
            args.extend(["--subscriber-queue".into(), events.to_string().into()]);
        }
        args.extend(self.extra_args.iter().map(Into::into));
        args
    }
}

/// How to start `banco edge`.
#[derive(Clone, Debug)]
pub struct EdgeSetup {
    /// `--listen`: `127.0.0.1:0` for a fresh port, or an earlier start's address.
    pub listen: String,
    /// `--events`: the NATS server the broadcasters publish to.
    pub events: String,
    pub public_key: PathBuf,
    pub service_token_file: PathBuf,
    /// More flags, as given (`--subscriber-queue 64`).
    pub extra_args: Vec<String>,
}

impl EdgeSetup {
    pub fn new(keys: &Keys, events: &str) -> EdgeSetup {
        EdgeSetup {
            listen: "127.0.0.1:0".to_owned(),
            events: events.to_owned(),
            public_key: keys.public_key(),
            service_token_file: keys.service_token_file(),
            extra_args: Vec::new(),
        }
    }

    /// The arguments after `banco`.
    pub fn args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec![
            "edge".into(),
            "--listen".into(),
            self.listen.clone().into(),
            "--events".into(),
            self.events.clone().into(),
            "--public-key".into(),
            self.public_key.clone().into(),
            "--service-token-file".into(),
            self.service_token_file.clone().into(),
        ];
        args.extend(self.extra_args.iter().map(Into::into));
        args
    }

    pub fn start(&self) -> Service {
        Service::start("edge", &self.args())
    }
}

/// An archive that checks the tables' signatures, and the table key they sign with.
#[derive(Debug)]
pub struct SignedArchive {
    pub service: Service,
    pub table_keys: Keys,
}

impl SignedArchive {
    /// `banco archive` on `db_url`, trusting a table key made in `dir/table-key`.
    pub fn start(keys: &Keys, db_url: &str, dir: &Path) -> SignedArchive {
        let table_keys = Keys::generate(&dir.join("table-key"));
        let service = start_archive(keys, db_url, "127.0.0.1:0", Some(&table_keys.public_key()));
        SignedArchive {
            service,
            table_keys,
        }
    }
}

impl BroadcasterSetup {
    /// Delivering its rounds to `archive`, signed, and spending through the wallet at
    /// `wallet` (as `--wallet` takes it), without clips.
    pub fn with_wallet(mut self, archive: &SignedArchive, wallet: &str) -> BroadcasterSetup {
        self.archive_url = Some(archive.service.url());
        self.table_key = Some(archive.table_keys.signing_key());
        self.extra_args.extend([
            "--wallet".to_owned(),
            wallet.to_owned(),
            "--no-clips".to_owned(),
        ]);
        self
    }
}

/// `banco wallet` on the database `db` (`sqlite://PATH`, made if new, or `postgres://…`),
/// on a free loopback port.
pub fn start_wallet(keys: &Keys, db: &str) -> Service {
    Service::start("wallet", &wallet_args(keys, db))
}

/// [`start_wallet`], also serving the seamless protocol (signed with the secret in
/// `secret_file`) on a free loopback port: the wallet, and the seamless listener's address.
pub fn start_seamless_wallet(keys: &Keys, db: &str, secret_file: &Path) -> (Service, String) {
    let mut command = banco();
    command
        .args(wallet_args(keys, db))
        .args(["--seamless-listen", "127.0.0.1:0", "--seamless-secret-file"])
        .arg(secret_file);
    let (wallet, mut seamless) = Service::spawn_listening("wallet", command, &["seamless"]);
    let addr = seamless.pop().expect("one seamless address was waited for");
    (wallet, addr)
}

fn wallet_args(keys: &Keys, db: &str) -> Vec<std::ffi::OsString> {
    vec![
        "wallet".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--db".into(),
        db.into(),
        "--public-key".into(),
        keys.public_key().into(),
    ]
}

/// The seamless protocol's shared secret of the tests.
pub const SEAMLESS_SECRET: &str = "a secret shared with the casino, 32 bytes or more";

/// [`SEAMLESS_SECRET`] in `dir/wallet.secret`, readable by its owner only (as banco
/// requires of a secret file); its path.
pub fn seamless_secret_file(dir: &Path) -> PathBuf {
    let path = dir.join("wallet.secret");
    std::fs::write(&path, format!("{SEAMLESS_SECRET}\n"))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    path
}

/// `banco cashier deposit <player> <amount>` at `wallet`, as desk `desk-1`; the token
/// file is kept in `dir`.
pub fn cashier_deposit(keys: &Keys, dir: &Path, wallet: &Service, player: &str, amount: &str) {
    let desk = dir.join("desk.token");
    std::fs::write(&desk, keys.issue("cashier", "desk-1", "1h"))
        .unwrap_or_else(|e| panic!("{}: {e}", desk.display()));
    let deposit = banco()
        .args(["cashier", "--token-file"])
        .arg(&desk)
        .args(["--server", &format!("grpc://{}", wallet.addr())])
        .args(["deposit", player, amount])
        .output()
        .unwrap_or_else(|e| panic!("banco cashier: {e}"));
    assert_eq!(
        deposit.status.code(),
        Some(0),
        "{}",
        crate::output_text(&deposit)
    );
}

/// `banco archive --db <db_url> --listen <listen> --public-key <keys>`, with
/// `--table-key-pub` when given, else `--accept-unsigned`. `listen` is `127.0.0.1:0` the first time, and the address
/// it got to restart it where the broadcaster expects it.
pub fn start_archive(
    keys: &Keys,
    db_url: &str,
    listen: &str,
    table_key_pub: Option<&Path>,
) -> Service {
    let mut args: Vec<std::ffi::OsString> = vec![
        "archive".into(),
        "--db".into(),
        db_url.into(),
        "--listen".into(),
        listen.into(),
        "--public-key".into(),
        keys.public_key().into(),
    ];
    match table_key_pub {
        Some(path) => args.extend(["--table-key-pub".into(), path.into()]),
        None => args.push("--accept-unsigned".into()),
    }
    // Without an SQLite file the clips would go to `clips` in the working directory: the
    // source tree, and one folder locked by every PostgreSQL archive the tests start.
    if !db_url.starts_with("sqlite:") {
        args.extend(["--clips".into(), keys.dir.join("archive-clips").into()]);
    }
    Service::start("archive", &args)
}

/// A channel to `url`, retried for a few seconds while the service comes up.
pub async fn channel(url: &str) -> Channel {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .unwrap_or_else(|e| panic!("{url}: {e}"))
        .connect_timeout(Duration::from_secs(2));
    crate::poll(
        Duration::from_secs(5),
        Duration::from_millis(100),
        async || endpoint.connect().await,
        Result::is_ok,
    )
    .await
    .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"))
}

/// A bearer token for a client interceptor.
pub fn bearer(token: &str) -> BearerToken {
    BearerToken::new(token).unwrap_or_else(|e| panic!("token: {e}"))
}

/// `banco croupier --server <url> --token-file <token_file> <args>`, whatever it exits with.
pub fn croupier_cli_output(url: &str, token_file: &Path, args: &[&str]) -> std::process::Output {
    banco()
        .args(["croupier", "--server", url, "--token-file"])
        .arg(token_file)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("banco croupier: {e}"))
}

/// `banco croupier --server <url> --token-file <token_file> <args>`, which must succeed; its
/// stdout.
pub fn croupier_cli(url: &str, token_file: &Path, args: &[&str]) -> String {
    let out = croupier_cli_output(url, token_file, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "banco croupier {args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
