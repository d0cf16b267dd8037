//! Betting: opening and closing it, bet requests (PlaceBets, Rebet) and their idempotent
//! retries, the wallet's answers to their debits, and clearing bets.

use std::collections::{BTreeMap, BTreeSet};

use banco_rules::shoe::ShoeState;
use banco_rules::{BetKind, Coup};

use crate::book::{self, Book, PlayerContext};
use crate::command::{DebitAnswer, DebitOutcome};
use crate::event::{BalanceReason, BetRefusal, Event, Placement};
use crate::ledger::{Account, EntryKind};
use crate::phase::Phase;
use crate::policy::Pacing;
use crate::refusal::Refusal;
use crate::round_id::RoundId;
use crate::wallet_book::{self, DebitNumbering, OwedOp, PendingRequest, RequestNumber};

use super::settling::owe_all;
use super::{Answered, Handled, Round, Table, key_digest, required, round_entry};

/// How many answered requests (PlaceBets, ClearBets, Rebet) are remembered per player for
/// idempotency. A retry is recognised as long as the player has made fewer than this many
/// newer requests; after that the key may be reused. Refused requests are not remembered
/// (a refusal changes nothing), so a retry of one is judged afresh.
pub const REMEMBERED_REQUESTS: usize = 64;

/// What a PlaceBets or a Rebet asks for.
struct BetRequest<'a> {
    /// The round the request names (a Rebet names none: it is for the open round).
    round: Option<&'a RoundId>,
    bets: Vec<(BetKind, i64)>,
}

impl Table {
    pub(super) fn open_betting(&mut self, by: &str, now: u64) -> Handled {
        required("by", by)?;
        let action = "open betting";
        let run = self.shoe.as_mut().ok_or(Refusal::NoShoe { action })?;
        if !matches!(self.phase, Phase::Idle | Phase::Settled | Phase::Voided) {
            return Err(Refusal::NotNow {
                action,
                phase: self.phase,
            });
        }
        match run.shoe.state() {
            ShoeState::AwaitingBurn => {
                return Err(Refusal::BurnPending {
                    action,
                    shoe: run.number,
                });
            }
            ShoeState::Ended => {
                return Err(Refusal::ShoeEnded {
                    action,
                    shoe: run.number,
                });
            }
            ShoeState::InPlay | ShoeState::CutCardOut | ShoeState::LastHand => {}
        }
        run.hands += 1;
        let id = RoundId::new(&self.config.table_id, run.number, run.hands);
        let policy = &self.config.policy;
        let closes_at = match self.config.pacing {
            Pacing::Live => policy.live_betting_ms.map(|d| now.saturating_add(d)),
            Pacing::AutomatedMultiplayer => Some(now.saturating_add(policy.automated_betting_ms)),
            Pacing::SinglePlayer => None,
        };
        let last_hand = run.shoe.state() == ShoeState::LastHand;
        self.round = Some(Round {
            id: id.clone(),
            shoe: run.number,
            hand: run.hands,
            opened_at: now,
            closed_at: None,
            draw_at: None,
            coup: Coup::new(),
            cards: Vec::new(),
            corrections: Vec::new(),
            book: Book::default(),
            passed: BTreeSet::new(),
            requests: BTreeMap::new(),
            numbered: 0,
            clears: BTreeMap::new(),
            debits: BTreeMap::new(),
            placements: BTreeMap::new(),
            opened_by: by.to_owned(),
            cut_card: false,
            shoe_opening: (run.hands == 1).then(|| run.opening.clone()),
            totals: None,
        });
        // The previous round's entries are in its FinishedRound.
        self.ledger.start_round();
        self.phase = Phase::BettingOpen {
            opened_at: now,
            closes_at,
        };
        Ok(vec![Event::BettingOpened {
            round_id: id,
            opened_at: now,
            closes_at,
            last_hand,
        }])
    }

    /// Closes betting at `closed_at`. The phase must be `BettingOpen` and a round exists.
    pub(super) fn close_betting(&mut self, closed_at: u64) -> Vec<Event> {
        let draw_at = match self.config.pacing {
            Pacing::AutomatedMultiplayer => {
                Some(closed_at.saturating_add(self.config.policy.automated_draw_delay_ms))
            }
            Pacing::Live | Pacing::SinglePlayer => None,
        };
        self.phase = Phase::BettingClosed { closed_at, draw_at };
        let Some(round) = self.round.as_mut() else {
            return Vec::new();
        };
        round.closed_at = Some(closed_at);
        round.draw_at = draw_at;
        vec![Event::BettingClosed {
            round_id: round.id.clone(),
            closed_at,
            draw_at,
        }]
    }

    /// The croupier closes betting before its time.
    pub(super) fn croupier_close_betting(&mut self, by: &str, now: u64) -> Handled {
        required("by", by)?;
        match self.phase {
            Phase::BettingOpen { .. } => Ok(self.close_betting(now)),
            phase => Err(Refusal::NotNow {
                action: "close betting",
                phase,
            }),
        }
    }

    pub(super) fn place_bets(
        &mut self,
        player: &str,
        round_id: &RoundId,
        bets: &[(BetKind, i64)],
        key: &str,
        now: u64,
    ) -> Handled {
        let fingerprint = format!("place {round_id} {bets:?}");
        let request = Ok(BetRequest {
            round: Some(round_id),
            bets: bets.to_vec(),
        });
        self.bet_request(player, key, fingerprint, now, request)
    }

    /// The player's stakes of their last settled round with bets, again.
    pub(super) fn rebet(
        &mut self,
        player: &str,
        round_id: Option<&RoundId>,
        key: &str,
        now: u64,
    ) -> Handled {
        let request = self
            .players
            .get(player)
            .map(|p| &p.last_bets)
            .filter(|b| !b.is_empty())
            .map(|last| BetRequest {
                round: round_id,
                bets: last.iter().map(|(&k, &a)| (k, a)).collect(),
            })
            .ok_or_else(|| Refusal::NoPreviousBets {
                player: player.to_owned(),
            });
        let fingerprint = match round_id {
            Some(round_id) => format!("rebet {round_id}"),
            None => "rebet".to_owned(),
        };
        self.bet_request(player, key, fingerprint, now, request)
    }

    /// The original answer to a retried request, or `None` for a new key.
    fn answered(
        &self,
        player: &str,
        key: &str,
        fingerprint: &str,
    ) -> Result<Option<Vec<Event>>, Refusal> {
        // Still at the wallet: the retry waits for the same answer.
        if let Some(pending) = self.wallet.pending(player, key) {
            if pending.fingerprint != fingerprint {
                return Err(Refusal::KeyReused {
                    player: player.to_owned(),
                    key: key.to_owned(),
                });
            }
            return Ok(Some(vec![Event::Replayed {
                player: player.to_owned(),
                key: key.to_owned(),
                original: vec![Event::BetsPending {
                    request: pending.clone(),
                }],
            }]));
        }
        let digest = key_digest(key);
        let Some(earlier) = self.players.get(player).and_then(|p| {
            p.answered
                .iter()
                .find(|a| a.digest == digest && a.key == key)
        }) else {
            return Ok(None);
        };
        if earlier.fingerprint != fingerprint {
            return Err(Refusal::KeyReused {
                player: player.to_owned(),
                key: key.to_owned(),
            });
        }
        Ok(Some(vec![Event::Replayed {
            player: player.to_owned(),
            key: key.to_owned(),
            original: earlier.events.clone(),
        }]))
    }

    fn remember(&mut self, player: &str, key: &str, fingerprint: String, events: &[Event]) {
        let state = self.players.entry(player.to_owned()).or_default();
        if state.answered.len() >= REMEMBERED_REQUESTS {
            state.answered.pop_front();
        }
        state.answered.push_back(Answered {
            digest: key_digest(key),
            key: key.to_owned(),
            fingerprint,
            events: events.to_vec(),
        });
    }

    /// The open round, if bets are taken at `now` (judged by the server clock, whether or
    /// not a `Tick` has closed betting yet).
    pub(super) fn open_round(&self, now: u64) -> Result<&Round, Refusal> {
        let Phase::BettingOpen { closes_at, .. } = self.phase else {
            return Err(Refusal::BettingNotOpen { phase: self.phase });
        };
        if let Some(closes_at) = closes_at
            && now >= closes_at
        {
            return Err(Refusal::BettingClosedAt {
                closes_at,
                now_ms: now,
            });
        }
        self.round
            .as_ref()
            .ok_or(Refusal::BettingNotOpen { phase: self.phase })
    }

    /// PlaceBets and Rebet: `request` is the round the request names (if any) and the
    /// positions to add, or why there are none (judged after the retry and timing checks).
    fn bet_request(
        &mut self,
        player: &str,
        key: &str,
        fingerprint: String,
        now: u64,
        request: Result<BetRequest<'_>, Refusal>,
    ) -> Handled {
        required("player", player)?;
        required("key", key)?;
        if let Some(events) = self.answered(player, key, &fingerprint)? {
            return Ok(events);
        }
        let round = self.open_round(now)?;
        let BetRequest {
            round: asked_round,
            bets: request,
        } = request?;
        check_asked_round("place bets", asked_round, &round.id)?;
        self.check_may_bet(player, round)?;
        if request.is_empty() {
            return Err(Refusal::NoBetsGiven);
        }
        let state = self.players.get(player);
        let cap_on = self.config.policy.progression_cap_on(self.config.pacing);
        let capped_previous = [0, 1].map(|i| {
            let s = state.map(|p| p.streaks[i]).unwrap_or_default();
            (cap_on && s.last_round == self.settled_rounds && s.last_round > 0 && s.count >= 3)
                .then_some(s.stake)
        });
        // What the player has on the round, taken or still at the wallet: the limits hold
        // for the sum, however many requests are in flight.
        let mut existing = round.book.of(player).cloned().unwrap_or_default();
        for (kind, amount) in self.wallet.pending_stakes(player, &round.id) {
            *existing.entry(kind).or_insert(0) += amount;
        }
        let context = PlayerContext {
            existing: Some(&existing),
            self_limit: None,
            capped_previous,
        };
        let accepted =
            book::check_bets(&self.config.policy, &request, context).map_err(|reasons| {
                Refusal::Bets {
                    player: player.to_owned(),
                    reasons,
                }
            })?;
        // The last check; nothing has changed yet.
        let round_id = round.id.clone();
        let of_player = round.requests.get(player).copied().unwrap_or(0) + 1;
        let of_round = round.numbered + 1;
        let n = match self.numbering {
            DebitNumbering::ByPlayer => RequestNumber::OfPlayer(of_player),
            DebitNumbering::InRound => RequestNumber::OfRound(of_round),
        };
        let (table, currency) = (&self.config.table_id, self.config.policy.currency.as_str());
        let debits = accepted
            .bets
            .iter()
            .map(|&(kind, amount)| {
                let total = existing.get(&kind).copied().unwrap_or(0) + amount;
                wallet_book::debit(table, currency, &round_id, player, n, kind, amount, total)
            })
            .collect();
        let request = PendingRequest {
            player: player.to_owned(),
            key: key.to_owned(),
            round_id,
            bets: accepted.bets,
            raised: accepted.raised,
            debits,
            fingerprint,
            at: now,
        };
        if let Some(round) = self.round.as_mut() {
            round.requests.insert(player.to_owned(), of_player);
            round.numbered = of_round;
        }
        self.wallet.add_pending(request.clone());
        Ok(vec![Event::BetsPending { request }])
    }

    /// The wallet answered the debits of a pending bet request: the bets are taken if it
    /// took them all and betting is still open on their round; otherwise the request is
    /// refused and every debit of it cancelled.
    pub(super) fn wallet_debited(
        &mut self,
        player: &str,
        key: &str,
        outcome: &DebitOutcome,
        now: u64,
    ) -> Handled {
        // Taken out rather than copied (a request's debits are many strings); put back on
        // any refusal below, which changes nothing.
        let Some(request) = self.wallet.take_pending(player, key) else {
            return Err(Refusal::NotPending {
                player: player.to_owned(),
                key: key.to_owned(),
            });
        };
        let open = self
            .open_round(now)
            .is_ok_and(|round| round.id == request.round_id);
        let taken = match *outcome {
            DebitOutcome::Taken { balance, version } if open => Ok((balance, version)),
            DebitOutcome::Taken { .. } => Err(BetRefusal::BettingClosed {
                round_id: request.round_id.clone(),
            }),
            DebitOutcome::Refused { ref error } => Err(BetRefusal::Wallet {
                error: error.clone(),
            }),
        };
        let (balance, version) = match taken {
            Ok(taken) => taken,
            Err(why) => {
                let owed = request
                    .debits
                    .iter()
                    .map(|d| self.wallet.owe(OwedOp::Cancel(wallet_book::cancel(d))))
                    .collect();
                return Ok(vec![
                    Event::BetsRefused {
                        player: player.to_owned(),
                        round_id: request.round_id,
                        key: key.to_owned(),
                        bets: request.bets,
                        why,
                    },
                    Event::WalletOwed { owed },
                ]);
            }
        };
        let round_id = request.round_id.clone();
        let entries = request
            .debits
            .iter()
            .map(|debit| {
                round_entry(
                    format!("stake:{}", debit.tx),
                    EntryKind::Stake,
                    (Account::Player(player.to_owned()), Account::InPlay),
                    debit.amount,
                    &round_id,
                    Some(debit.tx.clone()),
                )
            })
            .collect();
        let Some(round) = self.round.as_mut() else {
            self.wallet.add_pending(request);
            return Err(Refusal::BettingNotOpen { phase: self.phase });
        };
        // The last check, and the first change.
        if let Err(e) = self.ledger.post_all(entries) {
            self.wallet.add_pending(request);
            return Err(e.into());
        }
        // A payout acknowledged after these debits were answered may have been applied
        // first: the newest balance is the one to show.
        let balance = self.wallet.set_balance(player, balance, version);
        round.book.add(player, &request.bets);
        for (debit, &(kind, _)) in request.debits.iter().zip(&request.bets) {
            round
                .debits
                .entry((player.to_owned(), kind))
                .or_default()
                .push(debit.tx.clone());
        }
        round
            .placements
            .entry(player.to_owned())
            .or_default()
            .extend(request.bets.iter().map(|&(kind, amount)| Placement {
                kind,
                amount,
                key: key.to_owned(),
                at: request.at,
            }));
        let stakes = round.book.of(player).cloned().unwrap_or_default();
        let totals = round.book.totals();
        let staked: i64 = request.bets.iter().map(|(_, a)| a).sum();
        let state = self.players.entry(player.to_owned()).or_default();
        state.history.staked(&round_id, &stakes, now);
        let mut events = vec![
            Event::BetsAccepted {
                player: player.to_owned(),
                round_id: round_id.clone(),
                key: key.to_owned(),
                bets: request.bets,
                raised: request.raised,
                stakes,
            },
            self.balance_event(player, balance, -staked, BalanceReason::Bet),
            Event::BetTotals { round_id, totals },
        ];
        events.extend(self.close_if_all_seats_decided(now));
        self.remember(player, key, request.fingerprint, &events);
        Ok(events)
    }

    /// Each answer decided as [`Table::wallet_debited`] decides it, in order: the events
    /// of all of them, each answer's starting with its `BetsAccepted` or `BetsRefused`. An
    /// answer refused (its request no longer pending: a bug, since only the wallet task
    /// answers, once) changed nothing and is left out, the others stand.
    pub(super) fn wallet_debited_many(&mut self, answers: &[DebitAnswer], now: u64) -> Vec<Event> {
        let mut events = Vec::new();
        for answer in answers {
            match self.wallet_debited(&answer.player, &answer.key, &answer.outcome, now) {
                Ok(decided) => events.extend(decided),
                Err(refusal) => {
                    tracing::warn!(%refusal, "a wallet's answer changed nothing");
                }
            }
        }
        events
    }

    pub(super) fn clear_bets(
        &mut self,
        player: &str,
        asked: Option<&RoundId>,
        key: &str,
        now: u64,
    ) -> Handled {
        required("player", player)?;
        required("key", key)?;
        let fingerprint = match asked {
            Some(round_id) => format!("clear {round_id}"),
            None => "clear".to_owned(),
        };
        if let Some(events) = self.answered(player, key, &fingerprint)? {
            return Ok(events);
        }
        let round = self.open_round(now)?;
        check_asked_round("clear bets", asked, &round.id)?;
        let refunded = round
            .book
            .of(player)
            .cloned()
            .ok_or_else(|| Refusal::NoBets {
                player: player.to_owned(),
            })?;
        let round_id = round.id.clone();
        let n = round.clears.get(player).copied().unwrap_or(0) + 1;
        let id = |kind| wallet_book::clear_refund_id(&round_id, player, n, kind);
        let (entries, credits) = self.refunds(round, player, &refunded, "clear", id);
        let round = self
            .round
            .as_mut()
            .ok_or(Refusal::BettingNotOpen { phase: self.phase })?;
        // The last check, and the first change.
        self.ledger.post_all(entries)?;
        round.book.clear(player);
        round.clears.insert(player.to_owned(), n);
        for kind in refunded.keys() {
            round.debits.remove(&(player.to_owned(), *kind));
        }
        round.placements.remove(player);
        let totals = round.book.totals();
        if let Some(state) = self.players.get_mut(player) {
            state.history.cleared(&round_id);
        }
        let owed = owe_all(&mut self.wallet, credits);
        let mut pending = self.pending_events(&owed, BalanceReason::Clear);
        let mut events = vec![
            Event::BetsCleared {
                player: player.to_owned(),
                round_id: round_id.clone(),
                key: key.to_owned(),
                refunded,
            },
            Event::WalletOwed { owed },
            Event::BetTotals { round_id, totals },
        ];
        events.append(&mut pending);
        self.remember(player, key, fingerprint, &events);
        Ok(events)
    }
}

/// Refuses a player's request naming another round than the open one (a request naming
/// none is for the open round).
fn check_asked_round(
    action: &'static str,
    asked: Option<&RoundId>,
    open: &RoundId,
) -> Result<(), Refusal> {
    match asked {
        Some(asked) if asked != open => Err(Refusal::WrongRound {
            action,
            asked: asked.clone(),
            current: Some(open.clone()),
        }),
        _ => Ok(()),
    }
}
