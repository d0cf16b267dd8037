//! A child of `banco-sim demo` stops when the demo does, however the demo ends: a closed
//! terminal (SIGHUP) or a kill leaves it no time to stop them, and its validator,
//! broadcaster, bots and video encoder would go on holding their ports and the CPU after
//! the window is gone. The demo asks for it in the environment of each child it starts.

#[cfg(target_os = "linux")]
use anyhow::Context as _;
use anyhow::bail;
#[cfg(target_os = "linux")]
use rustix::process::{Signal, getppid, set_parent_process_death_signal};

/// The variable that asks for it; its value is the parent's process id.
pub const ENV: &str = "BANCO_STOP_WITH_PARENT";

/// If the environment asks: SIGTERM when the parent dies (a clean stop for the services,
/// see `stop_signal`; never ignored from birth, as SIGINT is in a background process);
/// an error if the parent has died already. Linux only; elsewhere the variable is refused.
#[cfg(target_os = "linux")]
pub fn apply() -> anyhow::Result<()> {
    let Some(value) = std::env::var_os(ENV) else {
        return Ok(());
    };
    let parent: i32 = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("{ENV}={value:?}: not a process id"))?;
    set_parent_process_death_signal(Some(Signal::TERM))
        .with_context(|| format!("{ENV}: could not ask to be stopped with the parent"))?;
    // The parent may have died before this process asked.
    let now = getppid().map_or(0, |pid| pid.as_raw_nonzero().get());
    if now != parent {
        bail!("{ENV}: its parent, process {parent}, has already exited");
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn apply() -> anyhow::Result<()> {
    if std::env::var_os(ENV).is_some() {
        bail!("{ENV}: a child stopping with its parent needs Linux");
    }
    Ok(())
}
