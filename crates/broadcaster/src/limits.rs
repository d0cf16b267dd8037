//! Limits on what one caller may ask of the broadcaster: the size of a request, and how
//! many requests a player makes per second (bets apart from everything else). Enforced
//! before a request reaches a table's actor, so a flood from one player costs the actor
//! nothing and never delays another player; the actor stays the only owner of table state.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use banco_auth::{AuthInterceptor, Caller};
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// A sustained rate with a burst allowance: a token bucket of `burst` tokens refilled at
/// `per_second`. `per_second == 0` means no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub per_second: u32,
    pub burst: u32,
}

impl Rate {
    /// No limit.
    pub const UNLIMITED: Rate = Rate {
        per_second: 0,
        burst: 0,
    };

    fn is_limited(self) -> bool {
        self.per_second > 0
    }
}

/// What the broadcaster takes from a caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest PlayerService or TableService request, encoded: every one of them is a few
    /// ids, cards or bets, well under a kilobyte.
    pub max_request_bytes: usize,
    /// Largest video unit a camera may publish (a keyframe of a high-bitrate stream).
    pub max_video_unit_bytes: usize,
    /// PlayerService calls per player other than bets (Subscribe, balance, chat, …).
    pub player_calls: Rate,
    /// PlaceBets, ClearBets and Rebet per player.
    pub player_bets: Rate,
}

impl RequestLimits {
    /// No rate limit, and the default sizes (benchmarks that play thousands of bets a
    /// second as one player).
    pub fn without_rates() -> RequestLimits {
        RequestLimits {
            player_calls: Rate::UNLIMITED,
            player_bets: Rate::UNLIMITED,
            ..RequestLimits::default()
        }
    }
}

impl Default for RequestLimits {
    /// 64 KiB requests, 4 MiB video units; 100 calls and 50 bets a second per player,
    /// bursts of 200 and 100: far above what a person or a client app does, low enough
    /// that no one player can take a table's actor for themselves.
    fn default() -> RequestLimits {
        RequestLimits {
            max_request_bytes: 64 << 10,
            max_video_unit_bytes: 4 << 20,
            player_calls: Rate {
                per_second: 100,
                burst: 200,
            },
            player_bets: Rate {
                per_second: 50,
                burst: 100,
            },
        }
    }
}

/// Which budget a PlayerService call draws on, set by the router from the call's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallClass {
    Bets,
    Other,
}

impl CallClass {
    pub(crate) fn of_path(path: &str) -> CallClass {
        match path {
            "/banco.v1.PlayerService/PlaceBets"
            | "/banco.v1.PlayerService/ClearBets"
            | "/banco.v1.PlayerService/Rebet" => CallClass::Bets,
            _ => CallClass::Other,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            CallClass::Bets => "bet requests",
            CallClass::Other => "calls",
        }
    }
}

/// Subjects tracked before idle ones (whose bucket is full again) are forgotten.
const TRACKED_SUBJECTS: usize = 100_000;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A token bucket per subject.
pub(crate) struct SubjectLimiter {
    rate: Rate,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl fmt::Debug for SubjectLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubjectLimiter")
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

impl SubjectLimiter {
    pub(crate) fn new(rate: Rate) -> SubjectLimiter {
        SubjectLimiter {
            rate,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token of `subject`'s bucket at `now`; when there is none, how long until
    /// there is.
    pub(crate) fn take(&self, subject: &str, now: Instant) -> Result<(), Duration> {
        if !self.rate.is_limited() {
            return Ok(());
        }
        let per_second = f64::from(self.rate.per_second);
        let burst = f64::from(self.rate.burst.max(1));
        let refill = |b: &Bucket| {
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            (b.tokens + elapsed * per_second).min(burst)
        };
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= TRACKED_SUBJECTS && !buckets.contains_key(subject) {
            // A full bucket is the same as none.
            buckets.retain(|_, b| refill(b) < burst);
        }
        let bucket = buckets.entry(subject.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let tokens = refill(bucket);
        if tokens >= 1.0 {
            *bucket = Bucket {
                tokens: tokens - 1.0,
                at: now,
            };
            Ok(())
        } else {
            *bucket = Bucket { tokens, at: now };
            Err(Duration::from_secs_f64((1.0 - tokens) / per_second))
        }
    }
}

/// PlayerService's interceptor: the caller's token and role, then their rate.
#[derive(Clone, Debug)]
pub(crate) struct PlayerGuard {
    auth: AuthInterceptor,
    calls: Arc<SubjectLimiter>,
    bets: Arc<SubjectLimiter>,
    /// Hands the handler the caller's `authorization` ([`CallerToken`]).
    keep_token: bool,
}

/// The caller's own `authorization`, for a handler that makes the call again upstream in
/// the caller's name (an edge).
#[derive(Clone, Debug)]
pub(crate) struct CallerToken(pub(crate) tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl PlayerGuard {
    pub(crate) fn new(auth: AuthInterceptor, limits: &RequestLimits) -> PlayerGuard {
        PlayerGuard {
            auth,
            calls: Arc::new(SubjectLimiter::new(limits.player_calls)),
            bets: Arc::new(SubjectLimiter::new(limits.player_bets)),
            keep_token: false,
        }
    }

    /// The same budgets, with another check of the token (other roles).
    pub(crate) fn with_auth(&self, auth: AuthInterceptor) -> PlayerGuard {
        PlayerGuard {
            auth,
            ..self.clone()
        }
    }

    /// Hands each handler the caller's `authorization` as a [`CallerToken`].
    pub(crate) fn keeping_token(self) -> PlayerGuard {
        PlayerGuard {
            keep_token: true,
            ..self
        }
    }

    /// The verified caller, if their token is good and they are within their rate.
    pub(crate) fn admit<T>(
        &self,
        request: &Request<T>,
        class: CallClass,
    ) -> Result<Caller, Status> {
        let caller = self.auth.authenticate(request)?;
        let limiter = match class {
            CallClass::Bets => &self.bets,
            CallClass::Other => &self.calls,
        };
        limiter
            .take(&caller.sub, Instant::now())
            .map_err(|wait| refusal(&caller.sub, class, limiter.rate, wait))?;
        Ok(caller)
    }
}

fn refusal(subject: &str, class: CallClass, rate: Rate, wait: Duration) -> Status {
    Status::resource_exhausted(format!(
        "rate limit: player `{subject}` may make {} {} per second (bursts of {}); retry in {} ms",
        rate.per_second,
        class.noun(),
        rate.burst.max(1),
        wait.as_millis().max(1)
    ))
}

impl Interceptor for PlayerGuard {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let class = request
            .extensions()
            .get::<CallClass>()
            .copied()
            .unwrap_or(CallClass::Other);
        let caller = self.admit(&request, class)?;
        // As AuthInterceptor does: handlers never see the token, and find the caller.
        let token = request.metadata_mut().remove("authorization");
        if self.keep_token
            && let Some(token) = token
        {
            request.extensions_mut().insert(CallerToken(token));
        }
        request.extensions_mut().insert(caller);
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let limiter = SubjectLimiter::new(Rate {
            per_second: 10,
            burst: 3,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.take("a", t0), Ok(()));
        }
        let wait = limiter.take("a", t0).err().map(|w| w.as_millis());
        assert_eq!(wait, Some(100));
        // Another subject has its own bucket.
        assert_eq!(limiter.take("b", t0), Ok(()));
        // A tenth of a second later, one more.
        let t1 = t0 + Duration::from_millis(100);
        assert_eq!(limiter.take("a", t1), Ok(()));
        assert!(limiter.take("a", t1).is_err());
        // Idle for long, never more than the burst.
        let t2 = t1 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(limiter.take("a", t2), Ok(()));
        }
        assert!(limiter.take("a", t2).is_err());
    }

    #[test]
    fn unlimited_never_refuses() {
        let limiter = SubjectLimiter::new(Rate::UNLIMITED);
        let now = Instant::now();
        for _ in 0..10_000 {
            assert_eq!(limiter.take("a", now), Ok(()));
        }
    }

    #[test]
    fn bets_and_other_calls_are_told_apart() {
        assert_eq!(
            CallClass::of_path("/banco.v1.PlayerService/PlaceBets"),
            CallClass::Bets
        );
        assert_eq!(
            CallClass::of_path("/banco.v1.PlayerService/Rebet"),
            CallClass::Bets
        );
        assert_eq!(
            CallClass::of_path("/banco.v1.PlayerService/SendChat"),
            CallClass::Other
        );
    }
}
