//! The page's files, built into the binary: each with its content type, a validator
//! (ETag), and a caching rule: `index.html` is checked again on every load, the files it
//! names (under `/assets/`, their names carry a hash of their content) are kept for a
//! year. HTML goes with a content security policy that lets the page load only its own
//! scripts and styles and talk only to this origin.

use std::collections::HashMap;
use std::sync::OnceLock;

use banco_records::hex::to_hex;
use http::{HeaderValue, Method, StatusCode, header};
use sha2::{Digest as _, Sha256};
use tonic::body::Body;

use super::cors::Origins;
use super::response;

include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// Where content-hashed files live.
const HASHED: &str = "/assets/";

/// Each file's ETag, computed once.
fn etags() -> &'static HashMap<&'static str, String> {
    static ETAGS: OnceLock<HashMap<&'static str, String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        FILES
            .iter()
            .map(|(path, bytes)| {
                let digest = Sha256::digest(bytes);
                let hex = to_hex(&digest[..12]);
                (*path, format!("\"{hex}\""))
            })
            .collect()
    })
}

/// Whether the page was built into this binary.
pub(super) fn built() -> bool {
    FILES.iter().any(|(path, _)| *path == "/index.html")
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The content security policy of the page.
fn policy(origins: &Origins) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors {}",
        origins.frame_ancestors()
    )
}

/// Answers a GET or HEAD for one of the page's files.
pub(super) fn serve(request: &http::Request<Body>, origins: &Origins) -> http::Response<Body> {
    let path = match request.uri().path() {
        "/" => "/index.html",
        path => path,
    };
    let Some((path, bytes)) = FILES.iter().find(|(p, _)| *p == path) else {
        if !built() {
            return response::text(
                StatusCode::SERVICE_UNAVAILABLE,
                "The player page is not built into this broadcaster. Build it with `cargo xtask \
                 web` (it needs Node 20 and npm), then build the broadcaster again; `cargo xtask \
                 demo` and `cargo xtask test` do both.",
            );
        }
        return response::text(
            StatusCode::NOT_FOUND,
            &format!(
                "no such file: {}",
                path.chars().take(100).collect::<String>()
            ),
        );
    };
    let etag = etags().get(path).map(String::as_str).unwrap_or("\"\"");
    let fresh = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|given| given.as_bytes() == etag.as_bytes());
    let mut response = if fresh {
        response::empty(StatusCode::NOT_MODIFIED)
    } else if request.method() == Method::HEAD {
        response::empty(StatusCode::OK)
    } else {
        let mut ok = http::Response::new(response::full(*bytes));
        *ok.status_mut() = StatusCode::OK;
        ok
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    if let Ok(etag) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if path.starts_with(HASHED) {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The launch code is in the page's address: no request may carry it elsewhere.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if path.ends_with(".html") {
        if let Ok(csp) = HeaderValue::from_str(&policy(origins)) {
            headers.insert(header::CONTENT_SECURITY_POLICY, csp);
        }
        headers.insert(
            "cross-origin-opener-policy",
            HeaderValue::from_static("same-origin"),
        );
    }
    response
}
