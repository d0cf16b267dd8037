//! A child of `banco demo` stops when the demo does, however the demo ends: a closed
//! terminal (SIGHUP) or a kill leaves it no time to stop them, and its validator,
//! broadcaster, bots and video encoder would go on holding their ports and the CPU after
//! the window is gone. The demo asks for it in the environment of each child it starts.

use anyhow::{Context as _, bail};
use rustix::process::{Signal, getppid, set_parent_process_death_signal};

/// The variable that asks for it; its value is the parent's process id.
pub(crate) const ENV: &str = "BANCO_STOP_WITH_PARENT";

/// If the environment asks: SIGINT, which every banco command takes as "stop cleanly",
/// when the parent dies; an error if it has died already.
pub(crate) fn apply() -> anyhow::Result<()> {
    let Some(value) = std::env::var_os(ENV) else {
        return Ok(());
    };
    let parent: i32 = value
        .to_str()
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("{ENV}={value:?}: not a process id"))?;
    set_parent_process_death_signal(Some(Signal::INT))
        .with_context(|| format!("{ENV}: could not ask to be stopped with the parent"))?;
    // The parent may have died before this process asked.
    let now = getppid().map_or(0, |pid| pid.as_raw_nonzero().get());
    if now != parent {
        bail!("{ENV}: its parent, process {parent}, has already exited");
    }
    Ok(())
}
