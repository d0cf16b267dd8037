//! `banco token`: the key pair that signs bearer tokens, and the tokens themselves.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use banco_auth::keys::{
    generate_signing_key, load_signing_key, save_signing_key, save_verifying_key,
};
use banco_auth::{Issuer, Role, check_subject};

use crate::times::TimeArgs;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a signing key (`signing.key`, mode 0600) and its public key (`signing.pub`),
    /// which every service is given to check tokens.
    Keygen {
        /// Folder to write the two files into, made (mode 0700) if it does not exist;
        /// existing files are never overwritten.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Issue a signed, expiring token for one subject and role; prints it on stdout.
    Issue {
        /// The signing key file made by `banco token keygen`.
        #[arg(long, default_value = "signing.key")]
        key: PathBuf,
        /// croupier, player, auditor, service or cashier.
        #[arg(long)]
        role: String,
        /// Who the token is for: the player's account, the croupier's name, the service.
        #[arg(long)]
        sub: String,
        /// Lifetime: a number with s, m, h or d (`90s`, `30m`, `8h`, `7d`).
        #[arg(long, default_value = "8h")]
        ttl: String,
        /// The deployment the token is for; services refuse tokens for another.
        #[arg(long, default_value = "banco")]
        audience: String,
        #[command(flatten)]
        times: TimeArgs,
    },
}

pub(crate) fn run(command: &TokenCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokenCommand::Keygen { dir } => {
            let (secret, public) = keygen(dir)?;
            eprintln!(
                "wrote {} (secret, 0600) and {}",
                secret.display(),
                public.display()
            );
        }
        TokenCommand::Issue {
            key,
            role,
            sub,
            ttl,
            audience,
            times,
        } => {
            let role: Role = role.parse()?;
            let ttl = parse_ttl(ttl)?;
            let now = SystemTime::now();
            println!("{}", issue_at(key, audience, role, sub, ttl, now)?);
            // Stdout is the token alone (scripts redirect it into a file); a person is told
            // on stderr until when it works.
            let issued = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let expires = i64::try_from(issued.saturating_add(ttl.as_secs())).unwrap_or(i64::MAX);
            eprintln!(
                "banco token issue: {role} token for {sub} (audience {audience}), valid until {}",
                times.times().seconds(expires)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `signing.key` and `signing.pub` in `dir` (never overwritten; `dir` made if need be);
/// their paths.
pub fn keygen(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    make_private_dir(dir)?;
    let key = generate_signing_key()?;
    let secret = dir.join("signing.key");
    let public = dir.join("signing.pub");
    save_signing_key(&secret, &key)?;
    save_verifying_key(&public, &key.verifying_key())?;
    Ok((secret, public))
}

/// Makes `dir` and its missing parents, readable by this user alone (0700) since it holds a
/// secret key; a folder that exists is left as it is.
fn make_private_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("--dir {}: could not create it", dir.display()))
}

/// A token for `sub` in `role`, signed with the key in `key`, valid for `ttl` from now.
pub fn issue(
    key: &Path,
    audience: &str,
    role: Role,
    sub: &str,
    ttl: Duration,
) -> anyhow::Result<String> {
    issue_at(key, audience, role, sub, ttl, SystemTime::now())
}

/// [`issue`] as of `now`.
fn issue_at(
    key: &Path,
    audience: &str,
    role: Role,
    sub: &str,
    ttl: Duration,
    now: SystemTime,
) -> anyhow::Result<String> {
    check_subject(sub).with_context(|| format!("--sub {sub}"))?;
    let issuer = Issuer::new(load_signing_key(key)?, audience)?;
    Ok(issuer.issue(sub, role, ttl, now)?)
}

/// `90s`, `30m`, `8h`, `7d`.
pub(crate) fn parse_ttl(text: &str) -> anyhow::Result<Duration> {
    parse_duration("--ttl", text)
}

/// A duration typed as a number and a unit (`90s`, `30m`, `8h`, `7d`), for `flag`.
pub(crate) fn parse_duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    // The last character, however many bytes it takes (`7€` is refused, not a panic).
    let unit_at = text.char_indices().last().map_or(0, |(at, _)| at);
    let (number, unit) = text.split_at(unit_at);
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => bail!("{flag} {text}: expected a number followed by s, m, h or d (e.g. 8h)"),
    };
    let n: u64 = number
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .with_context(|| format!("{flag} {text}: `{number}` is not a positive whole number"))?;
    let seconds = n
        .checked_mul(scale)
        .with_context(|| format!("{flag} {text}: too long"))?;
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_forms() {
        assert_eq!(parse_ttl("90s").ok(), Some(Duration::from_secs(90)));
        assert_eq!(parse_ttl("30m").ok(), Some(Duration::from_secs(1800)));
        assert_eq!(parse_ttl("8h").ok(), Some(Duration::from_secs(28_800)));
        assert_eq!(parse_ttl("7d").ok(), Some(Duration::from_secs(604_800)));
        for bad in [
            "",
            "h",
            "0h",
            "-1h",
            "8",
            "8w",
            "1.5h",
            "99999999999999999999d",
            "7€",
        ] {
            let err = parse_ttl(bad).expect_err(bad).to_string();
            assert!(err.contains(&format!("--ttl {bad}")), "{err}");
        }
        let err = parse_duration("--limit-period", "1w").expect_err("1w");
        assert!(err.to_string().starts_with("--limit-period 1w: "), "{err}");
    }

    #[test]
    fn keygen_makes_a_missing_folder_private() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let dir = tmp.path().join("keys").join("table-1");
        let (secret, public) = keygen(&dir).expect("keygen into a new folder");
        assert!(secret.is_file() && public.is_file());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&dir)
                .expect("the folder")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        }
        // A file where the folder should be: refused, naming it.
        let file = tmp.path().join("a-file");
        std::fs::write(&file, "").expect("a file");
        let err = keygen(&file.join("keys"))
            .expect_err("a file in the way")
            .to_string();
        assert!(err.contains("a-file"), "{err}");
    }
}
