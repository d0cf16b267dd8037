//! The main loop: draw, wait for the next action, `update`, carry out the effects. Generic
//! over the ratatui backend, so a test can run it on `TestBackend`.

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::action::{Action, Effect};
use crate::command::Pending;
use crate::model::Model;
use crate::update::update;
use crate::view;

/// How often the screen is redrawn with nothing happening (the countdown, retries).
pub const TICK: Duration = Duration::from_millis(250);

/// Runs until the croupier quits or every action source is gone. `bell` rings the
/// terminal bell.
pub async fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    model: &mut Model,
    mut actions: UnboundedReceiver<Action>,
    commands: UnboundedSender<Pending>,
    mut bell: impl FnMut(),
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let start = Instant::now();
    let clock = || u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut tick = tokio::time::interval(TICK);
    loop {
        terminal.draw(|frame| view::draw(frame, model))?;
        let action = tokio::select! {
            action = actions.recv() => match action {
                Some(action) => action,
                None => return Ok(()),
            },
            _ = tick.tick() => Action::Tick { now_ms: clock() },
        };
        let mut effects = update(model, Action::Tick { now_ms: clock() });
        effects.extend(update(model, action));
        for effect in effects {
            match effect {
                Effect::Send(pending) => {
                    if commands.send(pending).is_err() {
                        anyhow::bail!("the connection task stopped");
                    }
                }
                Effect::Bell => bell(),
                Effect::Quit => return Ok(()),
            }
        }
    }
}
