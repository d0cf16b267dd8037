//! The tonic side: a server interceptor that admits callers by role, the handler helper that
//! returns the verified caller, and a client interceptor that attaches a token.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::claims::Claims;
use crate::error::TokenError;
use crate::role::Role;
use crate::token::{MAX_TOKEN_LEN, Verifier};

/// The metadata key that carries `Bearer <token>`.
const AUTHORIZATION: &str = "authorization";

/// The verified claims of the caller, as handlers see them.
pub type Caller = Claims;

/// A clock the interceptor reads; injectable so tests control time.
type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Server interceptor: verifies `authorization: Bearer <token>`, admits only the roles given
/// at construction, removes the header (so handlers cannot log it) and stores the [`Caller`]
/// in the request extensions.
///
/// Refusals: `UNAUTHENTICATED` for a missing, malformed, forged, expired or foreign token;
/// `PERMISSION_DENIED` for a valid token whose role this service does not admit.
#[derive(Clone)]
pub struct AuthInterceptor {
    verifier: Arc<Verifier>,
    allowed: Arc<[Role]>,
    clock: Clock,
}

impl fmt::Debug for AuthInterceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthInterceptor")
            .field("verifier", &self.verifier)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl AuthInterceptor {
    /// Admits tokens `verifier` accepts whose role is in `allowed`, using the system clock.
    pub fn new(verifier: Arc<Verifier>, allowed: &[Role]) -> Self {
        Self {
            verifier,
            allowed: allowed.into(),
            clock: Arc::new(SystemTime::now),
        }
    }

    /// Replaces the clock (tests, simulations).
    pub fn with_clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The roles this interceptor admits.
    pub fn allowed(&self) -> &[Role] {
        &self.allowed
    }

    /// Checks the request's credentials and returns the caller, without touching the request.
    pub fn authenticate<T>(&self, request: &Request<T>) -> Result<Caller, Status> {
        let token = bearer_token(request)?;
        let claims = self
            .verifier
            .verify(token, (self.clock)())
            .map_err(token_status)?;
        if !self.allowed.contains(&claims.role) {
            let allowed: Vec<&str> = self.allowed.iter().map(|r| r.as_str()).collect();
            return Err(Status::permission_denied(format!(
                "role {} may not call this service (allowed: {})",
                claims.role,
                if allowed.is_empty() {
                    "none".to_owned()
                } else {
                    allowed.join(", ")
                }
            )));
        }
        Ok(claims)
    }
}

impl Interceptor for AuthInterceptor {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let caller = self.authenticate(&request)?;
        request.metadata_mut().remove(AUTHORIZATION);
        request.extensions_mut().insert(caller);
        Ok(request)
    }
}

/// The verified caller of a request that passed an [`AuthInterceptor`].
///
/// Fails with `INTERNAL` if there is none: that means the service was mounted without the
/// interceptor, a server bug, and the request must not proceed.
pub fn caller<T>(request: &Request<T>) -> Result<&Caller, Status> {
    request.extensions().get::<Caller>().ok_or_else(|| {
        Status::internal(
            "no authenticated caller on this request: AuthInterceptor is not installed",
        )
    })
}

/// Extracts the token from exactly one `authorization: Bearer <token>` entry.
fn bearer_token<T>(request: &Request<T>) -> Result<&str, Status> {
    let mut values = request.metadata().get_all(AUTHORIZATION).iter();
    let value = values.next().ok_or_else(|| {
        Status::unauthenticated("missing `authorization: Bearer <token>` metadata")
    })?;
    if values.next().is_some() {
        return Err(Status::unauthenticated(
            "more than one `authorization` metadata entry",
        ));
    }
    let value = value
        .to_str()
        .map_err(|_| Status::unauthenticated("`authorization` metadata is not visible ASCII"))?;
    let (scheme, token) = value.split_once(' ').ok_or_else(|| {
        Status::unauthenticated("`authorization` metadata must be `Bearer <token>`")
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Status::unauthenticated(
            "`authorization` scheme must be Bearer",
        ));
    }
    Ok(token)
}

/// Maps a refusal to a gRPC status. The message is the error's, which never holds the token.
fn token_status(error: TokenError) -> Status {
    match error {
        TokenError::Clock(_) | TokenError::Random(_) => {
            Status::internal(format!("cannot check token: {error}"))
        }
        _ => Status::unauthenticated(format!("invalid token: {error}")),
    }
}

/// Client interceptor that adds `authorization: Bearer <token>` to every outgoing request.
/// The value is marked sensitive so HTTP/2 never indexes it.
#[derive(Clone)]
pub struct BearerToken {
    value: AsciiMetadataValue,
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// Wraps `token`; refuses one that is too long or not a single run of visible ASCII
    /// without spaces (it would not survive the header, or is not a token).
    pub fn new(token: &str) -> Result<Self, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong {
                len: token.len(),
                max: MAX_TOKEN_LEN,
            });
        }
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::Malformed(
                "token must be non-empty visible ASCII without spaces".to_owned(),
            ));
        }
        let mut value: AsciiMetadataValue = MetadataValue::try_from(format!("Bearer {token}"))
            .map_err(|_| TokenError::Malformed("token is not a valid header value".to_owned()))?;
        value.set_sensitive(true);
        Ok(Self { value })
    }
}

impl Interceptor for BearerToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert(AUTHORIZATION, self.value.clone());
        Ok(request)
    }
}
