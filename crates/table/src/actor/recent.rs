//! The croupier's recent command ids and the replies they got, so that a command resent
//! after a lost reply is answered, not applied twice. Constant time per command.

use std::collections::{HashMap, VecDeque};

use super::Applied;
use crate::command::Command;

#[derive(Debug)]
pub(crate) struct RecentCommands {
    /// Each id's command (stamped with 0, so a resend at another time matches) and reply.
    replies: HashMap<String, (Command, Applied)>,
    /// Ids, oldest first.
    order: VecDeque<String>,
    capacity: usize,
}

impl RecentCommands {
    pub(crate) fn new(capacity: usize) -> RecentCommands {
        RecentCommands {
            replies: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&(Command, Applied)> {
        self.replies.get(id)
    }

    pub(crate) fn insert(&mut self, id: String, mut command: Command, applied: Applied) {
        command.stamp(0);
        if self
            .replies
            .insert(id.clone(), (command, applied))
            .is_none()
        {
            self.order.push_back(id);
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.replies.remove(&old);
            }
        }
    }
}
