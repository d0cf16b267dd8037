//! One process at a time on a data folder: the demo's folder, a broadcaster's journals, an
//! archive's database and clips. Two processes on one folder wreck each other (a second demo
//! emptied the first's folder while its journal and archive were open), so each holds an
//! advisory lock on a file in the folder for as long as it runs, and a second one is refused
//! naming the folder and the process that holds it.
//!
//! The kernel lets go of the lock when its holder dies, however it dies, so a crash never
//! leaves a stale lock behind; the file itself stays, holding the last holder's details.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;

use anyhow::{Context as _, bail};

/// The lock file a folder's holder keeps locked.
pub const LOCK_FILE: &str = ".banco.lock";

/// The database file a `sqlite://PATH` (or `sqlite:PATH`) URL names; none for another
/// database or an in-memory one, which no other process can open.
pub(crate) fn sqlite_file(db: &str) -> Option<&Path> {
    db.strip_prefix("sqlite://")
        .or_else(|| db.strip_prefix("sqlite:"))
        .map(|rest| rest.split('?').next().unwrap_or(rest))
        .filter(|file| !file.is_empty() && *file != ":memory:")
        .map(Path::new)
}

/// Holds the SQLite file `db` names (if it names one) for this process, as `what`, by a
/// lock file beside it; errors name `--db`.
pub(crate) fn lock_sqlite(db: &str, what: &str) -> anyhow::Result<Option<FolderLock>> {
    let Some(file) = sqlite_file(db) else {
        return Ok(None);
    };
    let mut lock_file = file.as_os_str().to_owned();
    lock_file.push(".lock");
    Ok(Some(
        FolderLock::take_file(Path::new(&lock_file), file, what).context("--db")?,
    ))
}

/// A folder held by this process until the value is dropped.
#[derive(Debug)]
pub struct FolderLock {
    /// Held open: closing it releases the lock.
    _file: File,
}

impl FolderLock {
    /// Takes `folder` (which must exist) for this process, as `what` (`banco-sim demo table`,
    /// `banco broadcaster`, …), or says who has it.
    pub fn take(folder: &Path, what: &str) -> anyhow::Result<FolderLock> {
        FolderLock::take_file(&folder.join(LOCK_FILE), folder, what)
    }

    /// Takes the lock file `path` for the thing it stands beside, `guarded` (a database
    /// file, say), which the refusal names.
    pub(crate) fn take_file(path: &Path, guarded: &Path, what: &str) -> anyhow::Result<FolderLock> {
        let io = |e: std::io::Error| anyhow::anyhow!("{}: cannot lock it: {e}", path.display());
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // The holder writes its details just after locking: they can be missing
                // for an instant, never wrong for long.
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder = if holder.is_empty() {
                    "it has not yet said which"
                } else {
                    holder
                };
                bail!(
                    "{} is in use by another banco process ({holder}): stop it first, \
                     or give another folder",
                    guarded.display()
                );
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let details = format!("pid {}, `{what}`", std::process::id());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(details.as_bytes()))
            .map_err(io)?;
        Ok(FolderLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_second_holder_is_refused_naming_the_folder_and_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::take(dir.path(), "banco broadcaster").unwrap();
        // flock locks belong to an open file, so a second open in this process is refused
        // just as another process would be.
        let err = FolderLock::take(dir.path(), "banco-sim demo table")
            .unwrap_err()
            .to_string();
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        assert!(
            err.contains(&format!("pid {}, `banco broadcaster`", std::process::id())),
            "{err}"
        );
        assert!(err.contains("in use by another banco process"), "{err}");
        drop(first);
        let _again = FolderLock::take(dir.path(), "banco-sim demo table").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(),
            format!("pid {}, `banco-sim demo table`", std::process::id()),
            "the new holder's details replace the old ones"
        );
    }

    #[test]
    fn a_folder_that_does_not_exist_is_an_error_naming_the_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = FolderLock::take(&missing, "banco archive")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&missing.join(LOCK_FILE).display().to_string()),
            "{err}"
        );
    }
}
