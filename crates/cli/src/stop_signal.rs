//! What asks a service to stop cleanly: Ctrl-C (SIGINT) at a terminal, and SIGTERM, which
//! systemd, container runtimes, `kill` and the end of `banco-sim demo` send. SIGINT alone was
//! not enough: a process started in the background by a script ignores SIGINT from birth,
//! and SIGTERM killed a service mid-stop.
//!
//! The listeners are set up at once, before a service says where it listens: a signal
//! that comes while it is still opening its journal or database then stops it cleanly too,
//! instead of killing it (or, for SIGINT ignored from birth, being lost).

/// Both signals, listened for from [`StopSignal::listen`] on.
#[derive(Debug)]
pub struct StopSignal {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignal {
    /// Starts listening; inside the runtime.
    pub fn listen() -> anyhow::Result<StopSignal> {
        #[cfg(unix)]
        {
            use anyhow::Context as _;
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignal {
                interrupt: signal(SignalKind::interrupt())
                    .context("could not listen for SIGINT")?,
                terminate: signal(SignalKind::terminate())
                    .context("could not listen for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignal {})
    }

    /// Resolves at the first SIGINT or SIGTERM since [`StopSignal::listen`].
    pub async fn requested(self) {
        #[cfg(unix)]
        {
            let StopSignal {
                mut interrupt,
                mut terminate,
            } = self;
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let StopSignal {} = self;
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
