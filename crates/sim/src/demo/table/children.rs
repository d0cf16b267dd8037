//! The demo's child processes: each logs to `<data-dir>/logs/<name>.log`, runs in a process
//! group of its own (so a Ctrl-C at the terminal reaches the demo, which then stops them in
//! order, instead of every process at once), and is stopped politely (SIGTERM), then killed.
//! If the demo dies first (its terminal closed), each stops itself ([`stop_with_parent`]).
//! One that dies early is named, with the tail of its log.
//!
//! [`stop_with_parent`]: banco::clients::stop_with_parent

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// How long a service may take to say where it listens (a debug build on a busy machine
/// opens its database and binds within a few seconds).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long each child gets to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of a log shown when its process died.
const TAIL_LINES: usize = 15;

/// One running child.
#[derive(Debug)]
struct Running {
    name: String,
    process: Child,
    log: PathBuf,
}

/// Every child the demo started, in start order.
#[derive(Debug)]
pub(crate) struct Children {
    logs: PathBuf,
    running: Vec<Running>,
}

impl Children {
    pub(crate) fn new(logs: &Path) -> anyhow::Result<Children> {
        std::fs::create_dir_all(logs)
            .with_context(|| format!("could not create {}", logs.display()))?;
        Ok(Children {
            logs: logs.to_owned(),
            running: Vec::new(),
        })
    }

    fn log_file(&self, name: &str) -> anyhow::Result<(PathBuf, File)> {
        let path = self.logs.join(format!("{name}.log"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("could not open {}", path.display()))?;
        Ok((path, file))
    }

    fn spawn(&mut self, name: &str, mut command: Command, stdout: Stdio) -> anyhow::Result<()> {
        let (log, file) = self.log_file(name)?;
        let stderr = file
            .try_clone()
            .with_context(|| format!("{}", log.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .env(
                banco::clients::stop_with_parent::ENV,
                std::process::id().to_string(),
            );
        let process = command
            .spawn()
            .with_context(|| format!("could not start {name} ({command:?})"))?;
        self.running.push(Running {
            name: name.to_owned(),
            process,
            log,
        });
        Ok(())
    }

    /// Starts `command`, its output into its log.
    pub(crate) fn start(&mut self, name: &str, command: Command) -> anyhow::Result<()> {
        let (_, file) = self.log_file(name)?;
        self.spawn(name, command, Stdio::from(file))
    }

    /// Starts `command` and waits for the line on its standard output that begins with
    /// `prefix` (`validator listening on `); returns the rest of that line. Everything it
    /// prints goes to its log.
    pub(crate) fn start_listening(
        &mut self,
        name: &str,
        command: Command,
        prefix: &str,
    ) -> anyhow::Result<String> {
        let (_, mut file) = self.log_file(name)?;
        self.spawn(name, command, Stdio::piped())?;
        let Some(child) = self.running.last_mut() else {
            bail!("{name} was not started");
        };
        let Some(stdout) = child.process.stdout.take() else {
            bail!("{name}: no standard output to read");
        };
        let (tx, rx) = mpsc::channel();
        let prefix = prefix.to_owned();
        // Copies stdout into the log for the child's whole life, and hands over the line
        // that says where it listens.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(file, "{line}");
                if let Some(rest) = line.strip_prefix(&prefix)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(rest.trim().to_owned());
                }
            }
        });
        let started = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(address) => return Ok(address),
                Err(mpsc::RecvTimeoutError::Timeout) if started.elapsed() < START_TIMEOUT => {
                    self.check()?;
                }
                Err(_) => {
                    // Its output ended (it is exiting) or it took too long: give it a
                    // moment to be reaped, so that its exit status is what is reported.
                    std::thread::sleep(Duration::from_millis(300));
                    self.check()?;
                    bail!(
                        "{name} did not say where it listens within {} s{}",
                        START_TIMEOUT.as_secs(),
                        self.tail_of(name)
                    );
                }
            }
        }
    }

    /// An error naming the first child that has exited, with the tail of its log.
    pub(crate) fn check(&mut self) -> anyhow::Result<()> {
        for child in &mut self.running {
            if let Ok(Some(status)) = child.process.try_wait() {
                bail!(
                    "{} stopped early ({status}); the end of {}:\n{}",
                    child.name,
                    child.log.display(),
                    tail(&child.log)
                );
            }
        }
        Ok(())
    }

    fn tail_of(&self, name: &str) -> String {
        self.running
            .iter()
            .find(|c| c.name == name)
            .map(|c| format!("; the end of {}:\n{}", c.log.display(), tail(&c.log)))
            .unwrap_or_default()
    }

    /// Stops one child (SIGTERM, then SIGKILL after a while), e.g. the bots before the
    /// summary, so their final line is in their log.
    pub(crate) fn interrupt(&mut self, name: &str) -> anyhow::Result<()> {
        let Some(index) = self.running.iter().position(|c| c.name == name) else {
            bail!("no child named {name}");
        };
        let child = self.running.remove(index);
        stop(child);
        Ok(())
    }

    /// Stops every child, the last started first: SIGTERM, then SIGKILL after a while.
    pub(crate) fn stop_all(&mut self) {
        while let Some(child) = self.running.pop() {
            stop(child);
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop_all();
    }
}

fn stop(mut child: Running) {
    if let Ok(Some(status)) = child.process.try_wait() {
        eprintln!(
            "demo: {} had already stopped ({status}); see {}",
            child.name,
            child.log.display()
        );
        return;
    }
    // SIGTERM is what each banco service treats as "stop cleanly", as Ctrl-C; unlike
    // SIGINT it is not ignored in a demo started in the background by a script.
    let sent = Command::new("kill")
        .args(["-TERM", &child.process.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let deadline = Instant::now() + STOP_TIMEOUT;
    while sent && Instant::now() < deadline {
        if let Ok(Some(_)) = child.process.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("demo: {} did not stop on SIGTERM; killing it", child.name);
    let _ = child.process.kill();
    let _ = child.process.wait();
}

/// The last lines of a log, indented.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    if lines.is_empty() {
        return "    (empty)".to_owned();
    }
    lines[start..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_child_that_dies_is_named_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut children = Children::new(dir.path()).unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "echo starting; echo 'no such table' >&2; exit 3"]);
        let err = children
            .start_listening("broken", command, "broken listening on ")
            .unwrap_err()
            .to_string();
        assert!(err.contains("broken stopped early"), "{err}");
        assert!(err.contains("no such table"), "{err}");
        assert!(err.contains("broken.log"), "{err}");
    }

    #[test]
    fn the_address_is_read_and_the_child_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut children = Children::new(dir.path()).unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "echo 'svc listening on 127.0.0.1:9'; exec sleep 30"]);
        let addr = children
            .start_listening("svc", command, "svc listening on ")
            .unwrap();
        assert_eq!(addr, "127.0.0.1:9");
        children.check().unwrap();
        children.stop_all();
        assert!(children.running.is_empty());
        let log = std::fs::read_to_string(dir.path().join("svc.log")).unwrap();
        assert!(log.contains("svc listening on 127.0.0.1:9"), "{log}");
    }
}
