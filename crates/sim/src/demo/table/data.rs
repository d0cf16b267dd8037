//! The demo's folder: keys and tokens, the table's journal, the archive, clips and logs.
//!
//! Every run starts afresh: a folder the demo made before (it holds the marker file) is
//! emptied first, so that a run never trips over the last one's table configuration or
//! half-played round. A folder the demo did not make is never touched.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use banco_auth::Role;

use banco::clients::folder_lock::{FolderLock, LOCK_FILE};
use banco::clients::token::{issue, keygen};

/// Marks a folder as the demo's own, so that emptying it can never hit anything else.
const MARKER: &str = ".banco-demo";
const AUDIENCE: &str = "banco";
/// Tokens outlive any demo session.
const TOKEN_TTL: Duration = Duration::from_secs(7 * 86_400);

/// Where everything of one demo run is.
#[derive(Debug)]
pub(crate) struct DemoData {
    pub(crate) dir: PathBuf,
    /// Held for the demo's whole life.
    _lock: FolderLock,
}

impl DemoData {
    /// Makes `dir` ready for a fresh run: emptied if the demo made it, created if missing,
    /// refused if it holds anything else or another demo is using it.
    pub(crate) fn prepare(dir: &Path) -> anyhow::Result<DemoData> {
        if dir.exists() {
            let mut entries = std::fs::read_dir(dir)
                .with_context(|| format!("--data-dir {}: cannot read it", dir.display()))?;
            let foreign = entries.any(|e| e.is_ok_and(|e| e.file_name() != LOCK_FILE))
                && !dir.join(MARKER).exists();
            if foreign {
                bail!(
                    "--data-dir {}: the folder holds files the demo did not make; \
                     give an empty or new folder",
                    dir.display()
                );
            }
        }
        std::fs::create_dir_all(dir)
            .with_context(|| format!("could not create {}", dir.display()))?;
        // Absolute, so that children and the printed commands work from any folder.
        let dir = &dir
            .canonicalize()
            .with_context(|| format!("{}", dir.display()))?;
        // Taken before anything is emptied: a second demo on this folder would otherwise
        // delete the first one's journal and archive under it.
        let lock = FolderLock::take(dir, "banco-sim demo table").context("--data-dir")?;
        for entry in
            std::fs::read_dir(dir).with_context(|| format!("could not read {}", dir.display()))?
        {
            let entry = entry.with_context(|| format!("could not read {}", dir.display()))?;
            if entry.file_name() == LOCK_FILE {
                continue;
            }
            let path = entry.path();
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.with_context(|| format!("could not empty {}", path.display()))?;
        }
        let dir = dir.clone();
        std::fs::write(
            dir.join(MARKER),
            "made by `banco-sim demo table`; emptied by its next run\n",
        )
        .with_context(|| format!("could not write in {}", dir.display()))?;
        let data = DemoData { dir, _lock: lock };
        for sub in ["keys", "table-key", "tokens", "logs"] {
            std::fs::create_dir_all(data.dir.join(sub))
                .with_context(|| format!("could not create {}", data.dir.join(sub).display()))?;
        }
        keygen(&data.dir.join("keys"))?;
        keygen(&data.dir.join("table-key"))?;
        for (file, role, sub) in [
            ("service.token", Role::Service, "broadcaster"),
            ("camera.token", Role::Service, "camera-T01"),
            ("croupier.token", Role::Croupier, "maria"),
            ("auditor.token", Role::Auditor, "auditor"),
        ] {
            let token = issue(&data.signing_key(), AUDIENCE, role, sub, TOKEN_TTL)?;
            let path = data.token(file);
            std::fs::write(&path, format!("{token}\n"))
                .with_context(|| format!("could not write {}", path.display()))?;
        }
        Ok(data)
    }

    /// Signs every token of the demo.
    pub(crate) fn signing_key(&self) -> PathBuf {
        self.dir.join("keys").join("signing.key")
    }

    pub(crate) fn public_key(&self) -> PathBuf {
        self.dir.join("keys").join("signing.pub")
    }

    /// Signs the table's finished rounds (the archive checks them with its public half).
    pub(crate) fn table_key(&self) -> PathBuf {
        self.dir.join("table-key").join("signing.key")
    }

    pub(crate) fn table_key_pub(&self) -> PathBuf {
        self.dir.join("table-key").join("signing.pub")
    }

    pub(crate) fn token(&self, file: &str) -> PathBuf {
        self.dir.join("tokens").join(file)
    }

    pub(crate) fn archive_db(&self) -> PathBuf {
        self.dir.join("archive.db")
    }

    pub(crate) fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// A token for one of the bots (they mint their own with the same key and names).
    pub(crate) fn player_token(&self, player: &str) -> anyhow::Result<String> {
        issue(
            &self.signing_key(),
            AUDIENCE,
            Role::Player,
            player,
            TOKEN_TTL,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_run_starts_afresh_and_a_foreign_folder_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("demo-data");
        let data = DemoData::prepare(&dir).unwrap();
        assert!(data.signing_key().exists() && data.table_key_pub().exists());
        std::fs::write(data.dir.join("archive.db"), "old").unwrap();
        let err = DemoData::prepare(&dir).unwrap_err();
        assert!(
            format!("{err:#}").contains("in use by another banco process"),
            "{err:#}"
        );
        assert!(
            data.dir.join("archive.db").exists(),
            "a demo refused leaves the running one's files alone"
        );
        drop(data);
        let again = DemoData::prepare(&dir).unwrap();
        assert!(
            !again.archive_db().exists(),
            "the last run's archive is gone"
        );
        assert!(again.token("croupier.token").exists());

        let foreign = root.path().join("mine");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("thesis.tex"), "keep me").unwrap();
        let err = DemoData::prepare(&foreign).unwrap_err().to_string();
        assert!(err.contains("did not make"), "{err}");
        assert!(foreign.join("thesis.tex").exists());
    }
}
