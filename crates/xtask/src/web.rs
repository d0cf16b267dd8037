//! The player page (`web/`): `npm ci` when its lock file changed, then `npm run build`
//! (protobuf and gRPC-Web clients generated from `proto/`, the sources and the tests
//! type-checked, bundled by esbuild into `web/dist`, which the broadcaster builds into its
//! binary) when any of its sources, tests or `proto/` changed since the last build; and
//! the page's own unit tests (`npm run unit`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};

/// What the page's build reads, besides `src/`.
const INPUTS: &[&str] = &[
    "package.json",
    "package-lock.json",
    "build.mjs",
    "buf.gen.yaml",
    "tsconfig.json",
    "test.mjs",
];

/// Where the last build's stamp is kept (the newest input time it was built from):
/// beside the packages, not in `dist`, whose every file is served.
const STAMP: &str = "node_modules/.banco-page-built-from";

pub(crate) fn build(root: &Path) -> Result<()> {
    let web = root.join("web");
    let npm = which_npm()?;
    let installed = web.join("node_modules").join(".package-lock.json");
    if newer(&web.join("package-lock.json"), &installed) {
        eprintln!("xtask: npm ci (web/)");
        // From npm's cache when it has the locked versions: no registry needed then.
        run(Command::new(&npm)
            .args(["ci", "--prefer-offline", "--no-audit", "--no-fund"])
            .current_dir(&web))?;
    }
    let mut newest = SystemTime::UNIX_EPOCH;
    for input in INPUTS {
        newest = newest.max(modified(&web.join(input)));
    }
    newest = newest.max(newest_in(
        web.join("src").as_path(),
        &web.join("src").join("gen"),
    ));
    newest = newest.max(newest_in(&web.join("test"), Path::new("")));
    newest = newest.max(newest_in(&root.join("proto"), Path::new("")));
    let stamp = web.join(STAMP);
    let built = fs::read_to_string(&stamp).ok();
    let want = stamp_of(newest);
    if built.as_deref() == Some(want.as_str()) && web.join("dist").join("index.html").is_file() {
        return Ok(());
    }
    eprintln!("xtask: npm run build (web/)");
    run(Command::new(&npm).args(["run", "build"]).current_dir(&web))?;
    fs::write(&stamp, want).with_context(|| format!("could not write {}", stamp.display()))?;
    Ok(())
}

/// The page's unit tests (`web/test/`, Node's test runner), after [`build`].
pub(crate) fn test(root: &Path) -> Result<()> {
    build(root)?;
    eprintln!("xtask: npm run unit (web/)");
    run(Command::new(which_npm()?)
        .args(["run", "unit"])
        .current_dir(root.join("web")))
}

fn which_npm() -> Result<PathBuf> {
    let found = Command::new("npm").arg("--version").output();
    match found {
        Ok(out) if out.status.success() => Ok(PathBuf::from("npm")),
        _ => bail!(
            "npm is not installed: the player page (web/) is built with Node 20 and npm \
             (Debian: apt-get install nodejs npm)"
        ),
    }
}

fn run(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("could not start {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}

fn modified(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Whether `a` changed after `b` (or `b` is missing).
fn newer(a: &Path, b: &Path) -> bool {
    !b.exists() || modified(a) > modified(b)
}

/// The newest modification time under `dir`, leaving out `skip`.
fn newest_in(dir: &Path, skip: &Path) -> SystemTime {
    let mut newest = modified(dir);
    let Ok(entries) = fs::read_dir(dir) else {
        return newest;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path == skip {
            continue;
        }
        newest = newest.max(if path.is_dir() {
            newest_in(&path, skip)
        } else {
            modified(&path)
        });
    }
    newest
}

fn stamp_of(time: SystemTime) -> String {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}\n", since.as_secs(), since.subsec_nanos())
}
