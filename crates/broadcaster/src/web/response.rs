//! The web side's plain answers: text for people, JSON for the page and operators.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use tonic::body::Body;

/// A body of `bytes` in one piece.
pub(super) fn full(bytes: impl Into<Bytes>) -> Body {
    Body::new(http_body_util::Full::new(bytes.into()))
}

fn with(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> http::Response<Body> {
    let mut response = http::Response::new(full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// `message` as plain text.
pub(super) fn text(status: StatusCode, message: &str) -> http::Response<Body> {
    with(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

/// `value` as JSON, never cached (it may carry a token).
pub(super) fn json(status: StatusCode, value: &serde_json::Value) -> http::Response<Body> {
    with(status, "application/json", value.to_string())
}

/// `{"error": message}`.
pub(super) fn json_error(status: StatusCode, message: &str) -> http::Response<Body> {
    json(status, &serde_json::json!({ "error": message }))
}

/// No body.
pub(super) fn empty(status: StatusCode) -> http::Response<Body> {
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = status;
    response
}
