//! The book (`docs/`, mdBook): its command-line page regenerated from `banco`'s clap
//! command, the book built with mdbook (installed with cargo when missing), and every
//! relative link of the book and of the README checked to lead to a file that exists.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The mdbook installed when none is found: the 0.4 line, which builds on the workspace's
/// toolchain; without its `serve` and `watch` features (a web server and a file watcher
/// the build does not need, and most of its compile time).
const MDBOOK_VERSION: &str = "0.4.52";

/// `cargo xtask docs`: the CLI page written, then [`check`].
pub(crate) fn docs(root: &Path, target: &Path) -> Result<()> {
    let page = root.join("docs/src/reference/cli.md");
    crate::cargo(&[
        "run",
        "--quiet",
        "--package",
        "banco-cli",
        "--example",
        "cli_reference",
        "--",
        &page.to_string_lossy(),
    ])?;
    eprintln!("xtask: wrote {}", page.display());
    check(root, target)
}

/// The book built into `<target>/book`, then its links and the README's checked.
pub(crate) fn check(root: &Path, target: &Path) -> Result<()> {
    let mdbook = mdbook()?;
    let dest = target.join("book");
    eprintln!("xtask: mdbook build docs --dest-dir {}", dest.display());
    let status = Command::new(&mdbook)
        .arg("build")
        .arg(root.join("docs"))
        .arg("--dest-dir")
        .arg(&dest)
        .status()
        .with_context(|| format!("could not start {}", mdbook.display()))?;
    if !status.success() {
        bail!("mdbook could not build the book in docs/ ({status})");
    }
    let mut problems = check_links(root)?;
    problems.extend(outside_references(root)?);
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("xtask: {problem}");
        }
        bail!(
            "{} broken link(s) in docs/src and README.md, or references outside the \
             repository (above)",
            problems.len()
        );
    }
    eprintln!(
        "xtask: the book is in {}; every relative link resolves",
        dest.join("index.html").display()
    );
    Ok(())
}

/// mdbook on the PATH or in cargo's bin folder; installed with cargo when in neither.
fn mdbook() -> Result<PathBuf> {
    let bin = cargo_bin().join("mdbook");
    for candidate in [PathBuf::from("mdbook"), bin.clone()] {
        if runs(&candidate) {
            return Ok(candidate);
        }
    }
    eprintln!("xtask: installing mdbook {MDBOOK_VERSION} (cargo install, once)");
    let status = crate::cargo_command(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "install",
            "mdbook",
            "--locked",
            "--version",
            MDBOOK_VERSION,
            "--no-default-features",
            "--features",
            "search",
        ])
        .status()
        .context("could not start cargo install")?;
    if !status.success() {
        bail!("could not install mdbook {MDBOOK_VERSION} ({status})");
    }
    for candidate in [PathBuf::from("mdbook"), bin] {
        if runs(&candidate) {
            return Ok(candidate);
        }
    }
    bail!("mdbook was installed but cannot be run: is cargo's bin folder on PATH?")
}

fn runs(program: &Path) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Where `cargo install` puts binaries: `$CARGO_HOME/bin`, else `~/.cargo/bin`.
fn cargo_bin() -> PathBuf {
    env::var_os("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
        .join("bin")
}

/// Notes the project was started from, kept beside the repository and not in it: a
/// reader of the repository alone cannot follow a reference to them.
/// Spelt in two parts so that this file does not name them itself.
const OUTSIDE: [&str; 3] = [
    concat!("RULES", ".md"),
    concat!("DESIGN", ".md"),
    concat!("../", "shared/"),
];

/// Every tracked text file's mentions of [`OUTSIDE`], as `file:line: …`.
fn outside_references(root: &Path) -> Result<Vec<String>> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .context("could not run git ls-files")?;
    if !listed.status.success() {
        bail!("git ls-files failed ({})", listed.status);
    }
    let mut problems = Vec::new();
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name);
        // Binary and unreadable files (a golden video, say) cannot point anywhere.
        let Ok(text) = fs::read_to_string(root.join(name.as_ref())) else {
            continue;
        };
        problems.extend(mentions(&name, &text));
    }
    Ok(problems)
}

fn mentions(name: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            OUTSIDE.iter().find(|o| line.contains(*o)).map(|o| {
                format!(
                    "{name}:{}: names `{o}`, which is not in the repository: point at the \
                     book page that holds it",
                    i + 1
                )
            })
        })
        .collect()
}

/// Every broken relative link of `docs/src/**/*.md` and `README.md`, as
/// `file:line: link \`target\`: why`; and every page of `docs/src` that the book's
/// `SUMMARY.md` does not list (mdbook would leave it out, and links to it would break).
pub(crate) fn check_links(root: &Path) -> Result<Vec<String>> {
    let src = root.join("docs").join("src");
    let mut files = vec![root.join("README.md")];
    markdown_under(&src, &mut files)?;
    let mut problems = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file)
            .with_context(|| format!("could not read {}", file.display()))?;
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let dir = file.parent().unwrap_or(root);
        for (line, target) in links(&text) {
            if let Some(why) = broken(dir, &target) {
                problems.push(format!("{shown}:{line}: link `{target}`: {why}"));
            }
        }
    }
    let summary = src.join("SUMMARY.md");
    let listed: Vec<PathBuf> = match fs::read_to_string(&summary) {
        Ok(text) => links(&text)
            .into_iter()
            .map(|(_, target)| src.join(strip_anchor(&target)))
            .collect(),
        Err(err) => bail!("could not read {}: {err}", summary.display()),
    };
    for file in files
        .iter()
        .filter(|f| f.starts_with(&src) && **f != summary)
    {
        if !listed.iter().any(|l| same_file(l, file)) {
            let shown = file.strip_prefix(root).unwrap_or(file).display();
            problems.push(format!(
                "{shown}: not listed in docs/src/SUMMARY.md, so the book leaves it out"
            ));
        }
    }
    Ok(problems)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("could not read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("could not read {}", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_under(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// Why `target`, written in a file of `dir`, leads nowhere; `None` when it is fine or
/// not a file of the repository (a web address, mail, an anchor on the same page).
fn broken(dir: &Path, target: &str) -> Option<String> {
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
    {
        return None;
    }
    let path = strip_anchor(target);
    if path.is_empty() {
        return None;
    }
    if path.starts_with('/') {
        return Some(
            "absolute paths do not work in the book or on a forge: make it relative".into(),
        );
    }
    let resolved = dir.join(path);
    if resolved.exists() {
        None
    } else {
        Some(format!("{} does not exist", resolved.display()))
    }
}

fn strip_anchor(target: &str) -> &str {
    target.split(['#', '?']).next().unwrap_or_default()
}

/// The targets of the inline links `[text](target)` and images of a Markdown text, with
/// their line numbers (from 1), leaving out fenced code blocks and `code spans`.
pub(crate) fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fence: Option<&str> = None;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let mut rest = without_code_spans(line);
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = closing_paren(after) else {
                break;
            };
            let inside = after[..end].trim();
            let target = if let Some(angled) = inside.strip_prefix('<') {
                angled.split('>').next().unwrap_or_default()
            } else {
                // A title may follow the target: `(page.md "Title")`.
                inside.split_whitespace().next().unwrap_or_default()
            };
            if !target.is_empty() {
                found.push((number + 1, target.to_owned()));
            }
            rest = after[end..].to_owned();
        }
    }
    found
}

/// `line` with every `code span` blanked out.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Where the `)` that closes a link target is, parentheses inside it balanced.
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            '\n' => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_found_outside_code_with_their_lines() {
        let text = "# T\nSee [a](a.md#x) and ![i](img/p.png \"t\").\n\
                    `[not](code.md)` [b](<b c.md>)\n```\n[no](fenced.md)\n```\n\
                    [web](https://example.invalid/x) [m](mailto:a@b) [here](#top)\n";
        let found = links(text);
        assert_eq!(
            found,
            vec![
                (2, "a.md#x".to_owned()),
                (2, "img/p.png".to_owned()),
                (3, "b c.md".to_owned()),
                (7, "https://example.invalid/x".to_owned()),
                (7, "mailto:a@b".to_owned()),
                (7, "#top".to_owned()),
            ]
        );
    }

    #[test]
    fn a_reference_outside_the_repository_is_named_with_its_line() {
        let text = format!("fine\n// as {} says\nsee {}seeds\n", OUTSIDE[0], OUTSIDE[2]);
        let found = super::mentions("a.rs", &text);
        assert_eq!(found.len(), 2, "{found:?}");
        let named = |line: usize, what: &str| format!("a.rs:{line}: names `{what}`");
        assert!(found[0].starts_with(&named(2, OUTSIDE[0])), "{}", found[0]);
        assert!(found[1].starts_with(&named(3, OUTSIDE[2])), "{}", found[1]);
        assert!(super::mentions("b.md", "the rules page").is_empty());
    }

    #[test]
    fn a_missing_file_is_broken_and_the_rest_are_not() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(broken(dir, "Cargo.toml#deps"), None);
        assert_eq!(broken(dir, "src/main.rs"), None);
        assert_eq!(broken(dir, "https://example.invalid/nothing.md"), None);
        assert_eq!(broken(dir, "#anchor"), None);
        let missing = broken(dir, "src/nothing.md").unwrap_or_default();
        assert!(missing.contains("nothing.md does not exist"), "{missing}");
        assert!(broken(dir, "/etc/passwd").is_some());
    }
}
