//! Which pages may call the broadcaster from a browser: the player page's own origin,
//! and the origins the operator allows (`--web-origin`), none by default. A request from
//! any other origin is refused before it reaches a service; an allowed one is answered
//! with the CORS headers its browser needs (and its preflight too).
//!
//! Bearer tokens are never sent by a browser on its own, so refusing foreign origins is
//! not what keeps a player's money safe; it keeps other sites from using the page's
//! endpoints at all (the launch exchange, the player's calls) with whatever they hold.

use std::fmt;

use http::{HeaderMap, HeaderValue, header};
use tonic::body::Body;

use super::response;

/// A web origin, `scheme://host[:port]`, as browsers send it (lower case, the default
/// port left out).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Origin(String);

/// Why an origin given by the operator cannot be one.
#[derive(Debug, thiserror::Error)]
#[error("web origin `{given}`: {why}")]
pub struct OriginError {
    given: String,
    why: &'static str,
}

impl Origin {
    /// Reads `http://host[:port]` or `https://host[:port]`, with nothing after.
    pub fn parse(given: &str) -> Result<Origin, OriginError> {
        let refuse = |why| OriginError {
            given: given.chars().take(200).collect(),
            why,
        };
        let uri: http::Uri = given
            .parse()
            .map_err(|_| refuse("not a URL such as https://casino.example"))?;
        let scheme = match uri.scheme_str() {
            Some("http") => "http",
            Some("https") => "https",
            _ => return Err(refuse("the scheme must be http:// or https://")),
        };
        let Some(authority) = uri.authority() else {
            return Err(refuse("no host"));
        };
        if authority.as_str().contains('@') {
            return Err(refuse("an origin has no user name or password"));
        }
        if given.trim_end_matches('/').len() != given.len()
            || !matches!(uri.path(), "" | "/")
            || uri.query().is_some()
        {
            return Err(refuse(
                "an origin is a scheme and a host (and port) alone, with no path: https://casino.example",
            ));
        }
        Ok(Origin::of(scheme, authority.as_str()))
    }

    /// The origin of `scheme` and `host` (a Host header or an URL's authority).
    fn of(scheme: &str, host: &str) -> Origin {
        let host = host.to_ascii_lowercase();
        let default = if scheme == "https" { ":443" } else { ":80" };
        let host = host.strip_suffix(default).unwrap_or(&host);
        Origin(format!("{scheme}://{host}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The origin of the page this broadcaster serves, as the request reached it.
pub(super) fn own_origin<B>(request: &http::Request<B>, secure: bool) -> Option<String> {
    let host = match request.uri().authority() {
        Some(authority) => authority.as_str().to_owned(),
        None => request
            .headers()
            .get(header::HOST)?
            .to_str()
            .ok()?
            .to_owned(),
    };
    let scheme = if secure { "https" } else { "http" };
    Some(Origin::of(scheme, &host).0)
}

/// Where a request came from, as far as the origin rules go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum From {
    /// No Origin header: not a browser's cross-site request (a page navigation, a
    /// script's same-origin GET, or a program).
    Unstated,
    /// The page's own origin.
    Own,
    /// An origin the operator allows.
    Allowed(HeaderValue),
}

impl From {
    /// Whether the caller is another site (one the operator allows).
    pub(super) fn is_cross_site(&self) -> bool {
        matches!(self, From::Allowed(_))
    }

    /// Adds the CORS headers an allowed origin's browser needs to read `response`.
    pub(super) fn allow(&self, headers: &mut HeaderMap) {
        headers.append(header::VARY, HeaderValue::from_static("origin"));
        if let From::Allowed(origin) = self {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
            headers.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(EXPOSED),
            );
        }
    }
}

/// The response headers a gRPC-Web client reads.
const EXPOSED: &str = "grpc-status, grpc-message, grpc-status-details-bin";
/// The request headers gRPC-Web clients send.
const REQUEST_HEADERS: &str =
    "authorization, content-type, x-grpc-web, x-user-agent, grpc-timeout, grpc-accept-encoding";
/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: &str = "600";

/// The origins allowed besides the page's own.
#[derive(Debug)]
pub(super) struct Origins {
    allowed: Vec<Origin>,
}

impl Origins {
    pub(super) fn new(allowed: Vec<Origin>) -> Origins {
        Origins { allowed }
    }

    /// Where `request` came from, or why a foreign origin is refused.
    pub(super) fn check<B>(
        &self,
        request: &http::Request<B>,
        own: Option<&str>,
    ) -> Result<From, String> {
        let Some(origin) = request.headers().get(header::ORIGIN) else {
            return Ok(From::Unstated);
        };
        let text = origin.to_str().unwrap_or("");
        if own.is_some_and(|own| own.eq_ignore_ascii_case(text)) {
            return Ok(From::Own);
        }
        if self.allowed.iter().any(|o| o.0.eq_ignore_ascii_case(text)) {
            return Ok(From::Allowed(origin.clone()));
        }
        let shown: String = text.chars().take(100).collect();
        Err(format!(
            "origin `{shown}` may not call this broadcaster: only the player page's own \
             origin and those its operator allows may"
        ))
    }

    /// The answer to a CORS preflight (`OPTIONS`) from `from`.
    pub(super) fn preflight<B>(
        &self,
        _request: &http::Request<B>,
        from: &From,
    ) -> http::Response<Body> {
        let mut response = response::empty(http::StatusCode::NO_CONTENT);
        let headers = response.headers_mut();
        from.allow(headers);
        if from.is_cross_site() {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("POST, GET"),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(REQUEST_HEADERS),
            );
            headers.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static(PREFLIGHT_MAX_AGE),
            );
        }
        response
    }

    /// The content security policy's `frame-ancestors`: the page's own origin and the
    /// allowed ones (an operator's lobby may frame the page).
    pub(super) fn frame_ancestors(&self) -> String {
        let mut ancestors = String::from("'self'");
        for origin in &self.allowed {
            ancestors.push(' ');
            ancestors.push_str(&origin.0);
        }
        ancestors
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn origins_are_read_as_browsers_send_them() {
        for (given, want) in [
            ("https://casino.example", "https://casino.example"),
            ("https://Casino.Example:443", "https://casino.example"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("http://lobby.example:80", "http://lobby.example"),
        ] {
            assert_eq!(Origin::parse(given).unwrap().as_str(), want, "{given}");
        }
        for (given, why) in [
            ("casino.example", "scheme"),
            ("ftp://casino.example", "scheme"),
            ("https://casino.example/lobby", "no path"),
            ("https://casino.example/", "no path"),
            ("https://casino.example?x=1", "no path"),
            ("https://user@casino.example", "user name"),
            ("", "not a URL"),
        ] {
            let refused = Origin::parse(given).unwrap_err().to_string();
            assert!(refused.contains(why), "{given}: {refused}");
            assert!(
                refused.starts_with(&format!("web origin `{given}`")),
                "{refused}"
            );
        }
    }

    fn request(origin: Option<&str>) -> http::Request<()> {
        let mut request = http::Request::post("/banco.v1.PlayerService/ListTables")
            .header(header::HOST, "127.0.0.1:7102");
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        request.body(()).unwrap()
    }

    #[test]
    fn the_own_origin_and_the_allowed_ones_pass_and_any_other_is_refused() {
        let origins = Origins::new(vec![Origin::parse("https://lobby.example").unwrap()]);
        let own = own_origin(&request(None), false);
        assert_eq!(own.as_deref(), Some("http://127.0.0.1:7102"));
        let check = |origin| origins.check(&request(origin), own.as_deref());
        assert_eq!(check(None).unwrap(), From::Unstated);
        assert_eq!(check(Some("http://127.0.0.1:7102")).unwrap(), From::Own);
        assert!(
            check(Some("https://lobby.example"))
                .unwrap()
                .is_cross_site()
        );
        for foreign in ["https://evil.example", "null", "https://127.0.0.1:7102"] {
            let refused = check(Some(foreign)).unwrap_err();
            assert!(refused.contains(foreign), "{refused}");
        }
        assert_eq!(origins.frame_ancestors(), "'self' https://lobby.example");
    }
}
