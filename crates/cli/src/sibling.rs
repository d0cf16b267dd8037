//! Finding another of banco's binaries: beside the running one (cargo builds them all into
//! one folder, and a package installs them together), else on PATH.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The binary `name` beside `exe`, else in one of the folders of `path` (PATH's value);
/// an error naming both places and ending with `advice`.
pub(crate) fn beside_or_on_path(
    exe: &Path,
    name: &str,
    path: Option<&OsStr>,
    advice: &str,
) -> anyhow::Result<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let beside = exe.with_file_name(&file);
    if beside.is_file() {
        return Ok(beside);
    }
    let on_path = path.and_then(|paths| {
        std::env::split_paths(paths)
            .map(|dir| dir.join(&file))
            .find(|p| p.is_file())
    });
    on_path.with_context(|| {
        format!(
            "{name} is neither beside {} nor on PATH: {advice}",
            exe.display()
        )
    })
}

/// [`beside_or_on_path`] with this process's PATH.
pub fn find(exe: &Path, name: &str, advice: &str) -> anyhow::Result<PathBuf> {
    beside_or_on_path(exe, name, std::env::var_os("PATH").as_deref(), advice)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn touch(path: &Path) {
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn the_one_beside_comes_first_then_path() {
        let dir = tempfile::tempdir().unwrap();
        let (here, there) = (dir.path().join("here"), dir.path().join("there"));
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&there).unwrap();
        touch(&there.join("banco-bench"));
        let path = std::env::join_paths([&there]).unwrap();
        let exe = here.join("banco");
        assert_eq!(
            beside_or_on_path(&exe, "banco-bench", Some(&path), "build it").unwrap(),
            there.join("banco-bench")
        );
        touch(&here.join("banco-bench"));
        assert_eq!(
            beside_or_on_path(&exe, "banco-bench", Some(&path), "build it").unwrap(),
            here.join("banco-bench")
        );
    }

    #[test]
    fn missing_names_where_it_looked_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("banco");
        let empty = std::env::join_paths([dir.path().join("nothing")]).unwrap();
        for path in [Some(empty.as_os_str()), None] {
            let err = beside_or_on_path(&exe, "banco-bench", path, "build it (`cargo b`)")
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                format!(
                    "banco-bench is neither beside {} nor on PATH: build it (`cargo b`)",
                    exe.display()
                )
            );
        }
    }
}
