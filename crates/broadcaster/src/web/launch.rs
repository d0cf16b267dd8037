//! Launch codes: how a player's token reaches the page, the way an operator's lobby hands
//! a player over to a game.
//!
//! The operator's back end (or `banco launch`, or the demo) asks for a code with its
//! `service` token: `POST /launch` with `{"player_token": "…"}`. The player's token is
//! checked then (a bad one is refused, naming why), and a random one-time code is
//! returned with the page's path, `/?code=…`, which the lobby opens. The page exchanges the
//! code once, `POST /launch/exchange` with `{"code": "…"}` from its own origin, keeps the
//! token in memory only, and takes the code out of its address. A code is good once and
//! for a few minutes: a link that leaks later (history, a shared screen) opens nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use banco_auth::{AuthInterceptor, Role, Verifier};
use base64::Engine as _;
use http::StatusCode;
use http_body_util::BodyExt as _;
use tonic::body::Body;
use tonic::metadata::{MetadataMap, MetadataValue};

use super::response::{json, json_error};

pub(super) const CREATE: &str = "/launch";
pub(super) const EXCHANGE: &str = "/launch/exchange";

/// How long a code waits by default: long enough to open a link, short enough that an
/// old one is worthless.
pub(super) const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// Codes waiting at once; beyond, new ones are refused until some are used or expire.
const MAX_PENDING: usize = 10_000;

/// Largest request body taken (a token is under a kilobyte).
const MAX_BODY: usize = 16 << 10;

/// Random bytes in a code: 128 bits, as a token's own id has.
const CODE_BYTES: usize = 16;

struct Pending {
    token: String,
    player: String,
    expires_at_unix: u64,
    until: Instant,
}

/// The codes not yet exchanged.
pub(super) struct Launch {
    services: AuthInterceptor,
    /// Checks the player token handed over; not the player's rate budget, which the
    /// operator asking for a code must not spend.
    players: AuthInterceptor,
    ttl: Duration,
    pending: Mutex<HashMap<String, Pending>>,
}

impl Launch {
    pub(super) fn new(verifier: &Arc<Verifier>, ttl: Duration) -> Launch {
        Launch {
            services: AuthInterceptor::new(Arc::clone(verifier), &[Role::Service]),
            players: AuthInterceptor::new(Arc::clone(verifier), &[Role::Player]),
            ttl,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// A map of codes is plain data: a panic elsewhere leaves it whole.
    fn pending(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `POST /launch`: a code for the player token in the body, asked by a service.
    pub(super) async fn create(&self, request: http::Request<Body>) -> http::Response<Body> {
        let (parts, body) = request.into_parts();
        let asked = tonic::Request::from_parts(
            MetadataMap::from_headers(parts.headers),
            http::Extensions::default(),
            (),
        );
        if let Err(status) = self.services.authenticate(&asked) {
            let code = match status.code() {
                tonic::Code::PermissionDenied => StatusCode::FORBIDDEN,
                _ => StatusCode::UNAUTHORIZED,
            };
            return json_error(
                code,
                &format!("{CREATE} needs a service token: {}", status.message()),
            );
        }
        let field = match read_field(body, "player_token").await {
            Ok(token) => token,
            Err((status, why)) => return json_error(status, &why),
        };
        let Ok(bearer) = MetadataValue::try_from(format!("Bearer {field}")) else {
            return json_error(
                StatusCode::BAD_REQUEST,
                "player_token: not a token (it holds characters no token has)",
            );
        };
        let mut metadata = MetadataMap::new();
        metadata.insert("authorization", bearer);
        let player = tonic::Request::from_parts(metadata, http::Extensions::default(), ());
        // Checked now, so the operator hears of a bad token, not the player.
        let claims = match self.players.authenticate(&player) {
            Ok(claims) => claims,
            Err(status) => {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    &format!("player_token: {}", status.message()),
                );
            }
        };
        let code = match fresh_code() {
            Ok(code) => code,
            Err(error) => {
                return json_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("no random code could be made: {error}"),
                );
            }
        };
        let now = Instant::now();
        let mut pending = self.pending();
        pending.retain(|_, p| p.until > now);
        if pending.len() >= MAX_PENDING {
            return json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "{MAX_PENDING} launch codes are waiting to be used: try again once some are \
                     used or have expired ({} s)",
                    self.ttl.as_secs()
                ),
            );
        }
        pending.insert(
            code.clone(),
            Pending {
                token: field,
                player: claims.sub.clone(),
                expires_at_unix: claims.exp,
                until: now + self.ttl,
            },
        );
        drop(pending);
        tracing::info!(player = %claims.sub, "launch code created");
        json(
            StatusCode::CREATED,
            &serde_json::json!({
                "code": code,
                "path": format!("/?code={code}"),
                "player": claims.sub,
                "expires_in_seconds": self.ttl.as_secs(),
            }),
        )
    }

    /// `POST /launch/exchange`: the token a code stands for, once.
    pub(super) async fn exchange(&self, request: http::Request<Body>) -> http::Response<Body> {
        let code = match read_field(request.into_body(), "code").await {
            Ok(code) => code,
            Err((status, why)) => return json_error(status, &why),
        };
        let taken = self.pending().remove(&code);
        match taken {
            Some(p) if p.until > Instant::now() => json(
                StatusCode::OK,
                &serde_json::json!({
                    "token": p.token,
                    "player": p.player,
                    "expires_at_unix": p.expires_at_unix,
                }),
            ),
            _ => json_error(
                StatusCode::NOT_FOUND,
                "this launch code is unknown, used already or expired: open the table again \
                 from the casino's lobby",
            ),
        }
    }
}

/// The string field `name` of a JSON object body, or the status and why not.
async fn read_field(body: Body, name: &str) -> Result<String, (StatusCode, String)> {
    let Ok(collected) = http_body_util::Limited::new(body, MAX_BODY).collect().await else {
        return Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is over {MAX_BODY} bytes, or could not be read"),
        ));
    };
    let value: serde_json::Value = serde_json::from_slice(&collected.to_bytes()).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("the body is not JSON: {e}; send {{\"{name}\": \"…\"}}"),
        )
    })?;
    match value.get(name) {
        Some(serde_json::Value::String(text)) if !text.trim().is_empty() => {
            Ok(text.trim().to_owned())
        }
        Some(_) => Err((
            StatusCode::BAD_REQUEST,
            format!("{name}: must be a non-empty string"),
        )),
        None => Err((
            StatusCode::BAD_REQUEST,
            format!("{name}: missing; send {{\"{name}\": \"…\"}}"),
        )),
    }
}

fn fresh_code() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; CODE_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}
