//! What the bots did, shared by all of them: rounds seen, bets placed and refused, money
//! staked and won, and when to print a summary or stop.

use std::collections::BTreeSet;
use std::sync::Mutex;

use tokio::sync::watch;

/// How long the last round's private events get after its result before the bots stop.
const SETTLEMENT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

use banco_rules::amount::{money, signed_money};

#[derive(Debug, Default)]
struct Counts {
    /// Rounds whose result (or void) some bot saw.
    rounds: BTreeSet<String>,
    placed: u64,
    refused: u64,
    errors: u64,
    staked: i64,
    net: i64,
}

#[derive(Debug)]
pub(crate) struct Stats {
    counts: Mutex<Counts>,
    report_every: u64,
    target: Option<u64>,
    /// Held from the start, so that a stop asked before any bot has run reaches them all.
    stop: watch::Sender<bool>,
}

impl Stats {
    /// `stop` is what every bot watches.
    pub(crate) fn new(report_every: u64, target: Option<u64>, stop: watch::Sender<bool>) -> Stats {
        Stats {
            counts: Mutex::new(Counts::default()),
            report_every,
            target,
            stop,
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Tells every bot to stop.
    pub(crate) fn stop_all(&self) {
        self.stop.send_replace(true);
    }

    /// Stops every bot after a short grace, so that the last round's settlements (which
    /// follow its result) are counted in the final summary.
    fn stop_soon(&self) {
        let stop = self.stop.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(SETTLEMENT_GRACE).await;
                    stop.send_replace(true);
                });
            }
            Err(_) => {
                stop.send_replace(true);
            }
        }
    }

    /// A round ended (every bot reports it; it counts once).
    pub(crate) fn round_done(&self, round: &str) {
        let (line, done) = {
            let mut c = self.counts();
            if !c.rounds.insert(round.to_owned()) {
                return;
            }
            let n = c.rounds.len() as u64;
            let line = n.is_multiple_of(self.report_every).then(|| summary(&c));
            (line, self.target.is_some_and(|t| n >= t))
        };
        if let Some(line) = line {
            println!("{line}");
        }
        if done {
            self.stop_soon();
        }
    }

    pub(crate) fn bets(&self, placed: u64, refused: u64, staked: i64) {
        let mut c = self.counts();
        c.placed += placed;
        c.refused += refused;
        c.staked = c.staked.saturating_add(staked);
    }

    pub(crate) fn settled(&self, net: i64) {
        let mut c = self.counts();
        c.net = c.net.saturating_add(net);
    }

    pub(crate) fn error(&self) {
        self.counts().errors += 1;
    }

    pub(crate) fn reached_target(&self) -> bool {
        self.target
            .is_some_and(|t| self.counts().rounds.len() as u64 >= t)
    }

    pub(crate) fn summary(&self) -> String {
        summary(&self.counts())
    }
}

fn summary(c: &Counts) -> String {
    let mut line = format!(
        "rounds {}  bets placed {}  refused {}  staked {}  net {}",
        c.rounds.len(),
        c.placed,
        c.refused,
        money(c.staked),
        signed_money(c.net)
    );
    if c.errors > 0 {
        line.push_str(&format!("  errors {}", c.errors));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_count_once_and_the_target_stops_everyone() {
        let (tx, rx) = watch::channel(false);
        let stats = Stats::new(2, Some(3), tx);
        stats.round_done("T01-S0001-H001");
        stats.round_done("T01-S0001-H001");
        stats.bets(2, 1, 3_000);
        stats.settled(-500);
        stats.round_done("T01-S0001-H002");
        assert!(!*rx.borrow());
        assert!(!stats.reached_target());
        stats.round_done("T01-S0001-H003");
        assert!(*rx.borrow());
        assert!(stats.reached_target());
        assert_eq!(
            stats.summary(),
            "rounds 3  bets placed 2  refused 1  staked 30.00  net -5.00"
        );
    }
}
