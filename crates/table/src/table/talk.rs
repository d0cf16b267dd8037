//! Table chat and mutes. Both are commands, journaled like any other, because regulators
//! keep chat logs and a mute must survive a restart.

use crate::chat::{check_text, mask, rate_limited_until};
use crate::event::Event;
use crate::refusal::Refusal;

use super::{Handled, Mute, Table, required};

/// One minute in milliseconds (mutes are given in minutes).
const MINUTE_MS: u64 = 60_000;

impl Table {
    /// Until when the player is muted, if they are at `now`.
    pub fn muted_until(&self, player: &str, now: u64) -> Option<u64> {
        self.players
            .get(player)
            .and_then(|p| p.mute.as_ref())
            .map(|m| m.until)
            .filter(|&until| until > now)
    }

    /// Whether `player` has been at this table as far as its journal knows: chatted, bet,
    /// sat, set a self-limit or held money here. Being subscribed is not journaled, so a
    /// replay could not decide on it.
    fn has_seen(&self, player: &str) -> bool {
        self.players.contains_key(player)
            || self.ledger.nets().contains_key(player)
            || self.wallet.balance(player).is_some()
            || self.seats.iter().flatten().any(|p| p == player)
    }

    pub(super) fn chat(&mut self, player: &str, text: &str, now: u64) -> Handled {
        required("player", player)?;
        let policy = &self.config.policy.chat;
        let state = self.players.get(player);
        if let Some(mute) = state
            .and_then(|p| p.mute.as_ref())
            .filter(|m| m.until > now)
        {
            return Err(Refusal::Muted {
                player: player.to_owned(),
                until: mute.until,
                reason: mute.reason.clone(),
            });
        }
        let text = check_text(text, policy.max_chars).map_err(|problem| Refusal::ChatText {
            player: player.to_owned(),
            problem,
        })?;
        if let Some(retry_at) = state
            .and_then(|p| rate_limited_until(&p.chat_times, policy.burst, policy.window_ms, now))
        {
            return Err(Refusal::ChatRateLimited {
                player: player.to_owned(),
                burst: policy.burst,
                window_ms: policy.window_ms,
                retry_at,
                now_ms: now,
            });
        }
        let shown = mask(text, &self.blocked_words);
        let burst = usize::try_from(policy.burst).unwrap_or(usize::MAX);
        let times = &mut self
            .players
            .entry(player.to_owned())
            .or_default()
            .chat_times;
        times.push_back(now);
        while times.len() > burst {
            times.pop_front();
        }
        Ok(vec![Event::Chat {
            player: player.to_owned(),
            text: shown,
            at: now,
        }])
    }

    pub(super) fn mute(
        &mut self,
        player: &str,
        minutes: u32,
        reason: &str,
        by: &str,
        now: u64,
    ) -> Handled {
        required("player", player)?;
        required("by", by)?;
        if !self.has_seen(player) {
            return Err(Refusal::UnknownPlayer {
                player: player.to_owned(),
            });
        }
        if minutes == 0 {
            if self.muted_until(player, now).is_none() {
                return Err(Refusal::NotMuted {
                    player: player.to_owned(),
                });
            }
            if let Some(state) = self.players.get_mut(player) {
                state.mute = None;
            }
            return Ok(vec![Event::PlayerMuted {
                player: player.to_owned(),
                until: None,
                reason: reason.trim().to_owned(),
                by: by.to_owned(),
            }]);
        }
        required("reason", reason)?;
        let until = now.saturating_add(u64::from(minutes) * MINUTE_MS);
        let reason = reason.trim().to_owned();
        self.players.entry(player.to_owned()).or_default().mute = Some(Mute {
            until,
            reason: reason.clone(),
        });
        Ok(vec![Event::PlayerMuted {
            player: player.to_owned(),
            until: Some(until),
            reason,
            by: by.to_owned(),
        }])
    }
}
