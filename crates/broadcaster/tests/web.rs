//! Players in a browser: PlayerService over gRPC-Web on the broadcaster's own listener,
//! over HTTP/1.1 and HTTP/2 (prior knowledge, as over TLS a browser would), unary calls
//! and Subscribe streaming; the origin rules; launch codes; and the page's files.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use banco_broadcaster::{Origin, WebOptions};
use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use common::*;
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use pb::table_event::Event as E;

const LOBBY: &str = "https://lobby.example";

async fn harness() -> Harness {
    Harness::start_web(WebOptions {
        allowed_origins: vec![Origin::parse(LOBBY).unwrap()],
        ..WebOptions::default()
    })
    .await
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Version {
    Http1,
    Http2,
}

/// A response whose body is read as it comes.
struct Response {
    status: http::StatusCode,
    headers: http::HeaderMap,
    body: Body,
}

enum Body {
    Http1(hyper::body::Incoming),
    Http2(h2::RecvStream),
}

impl Response {
    /// The next piece of the body; `None` at its end.
    async fn chunk(&mut self) -> Option<Bytes> {
        let read = async {
            match &mut self.body {
                Body::Http1(body) => loop {
                    match body.frame().await {
                        None => return None,
                        Some(frame) => {
                            if let Ok(data) = frame.unwrap().into_data() {
                                return Some(data);
                            }
                        }
                    }
                },
                Body::Http2(body) => {
                    let data = body.data().await?.unwrap();
                    let _ = body.flow_control().release_capacity(data.len());
                    Some(data)
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("the body goes on within 10 s")
    }

    async fn text(mut self) -> String {
        let mut all = Vec::new();
        while let Some(chunk) = self.chunk().await {
            all.extend_from_slice(&chunk);
        }
        String::from_utf8(all).unwrap()
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }
}

/// One HTTP request on a fresh connection of `version` to the harness.
async fn send(h: &Harness, version: Version, request: http::Request<Bytes>) -> Response {
    let tcp = tokio::net::TcpStream::connect(h.address()).await.unwrap();
    match version {
        Version::Http1 => {
            let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .unwrap();
            tokio::spawn(connection);
            let request = request.map(http_body_util::Full::new);
            let response = sender.send_request(request).await.unwrap();
            let (parts, body) = response.into_parts();
            Response {
                status: parts.status,
                headers: parts.headers,
                body: Body::Http1(body),
            }
        }
        Version::Http2 => {
            let (client, connection) = h2::client::handshake(tcp).await.unwrap();
            tokio::spawn(connection);
            let mut client = client.ready().await.unwrap();
            let (parts, body) = request.into_parts();
            let mut request = http::Request::from_parts(parts, ());
            // HTTP/2 carries the host as the URI's authority.
            let host = format!("127.0.0.1:{}", h.address().port());
            *request.uri_mut() =
                format!("http://{host}{}", request.uri().path_and_query().unwrap())
                    .parse()
                    .unwrap();
            request.headers_mut().remove(http::header::HOST);
            let (response, mut send) = client.send_request(request, body.is_empty()).unwrap();
            if !body.is_empty() {
                send.send_data(body, true).unwrap();
            }
            let response = response.await.unwrap();
            let (parts, body) = response.into_parts();
            Response {
                status: parts.status,
                headers: parts.headers,
                body: Body::Http2(body),
            }
        }
    }
}

fn host(h: &Harness) -> String {
    format!("127.0.0.1:{}", h.address().port())
}

/// A gRPC-Web call of PlayerService's `method` with `message`, by `player`.
fn grpc_web(
    h: &Harness,
    method: &str,
    message: &impl prost::Message,
    player: Option<&str>,
) -> http::request::Builder {
    let _ = message;
    let mut request = http::Request::post(format!("/banco.v1.PlayerService/{method}"))
        .header(http::header::HOST, host(h))
        .header(http::header::CONTENT_TYPE, "application/grpc-web+proto")
        .header("x-grpc-web", "1");
    if let Some(player) = player {
        let token = h
            .issuer
            .issue(
                player,
                Role::Player,
                Duration::from_secs(600),
                SystemTime::now(),
            )
            .unwrap();
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    request
}

fn framed(message: &impl prost::Message) -> Bytes {
    let mut body = BytesMut::new();
    body.put_u8(0);
    body.put_u32(u32::try_from(message.encoded_len()).unwrap());
    message.encode(&mut body).unwrap();
    body.freeze()
}

/// A gRPC-Web body read frame by frame: messages, then the trailers frame.
struct Frames {
    response: Response,
    buffer: BytesMut,
}

enum Frame {
    Message(Bytes),
    /// The trailers, as `name: value` lines.
    Trailers(String),
}

impl Frames {
    fn new(response: Response) -> Frames {
        Frames {
            response,
            buffer: BytesMut::new(),
        }
    }

    async fn next(&mut self) -> Option<Frame> {
        loop {
            if self.buffer.len() >= 5 {
                let flag = self.buffer[0];
                let len = u32::from_be_bytes(self.buffer[1..5].try_into().unwrap()) as usize;
                if self.buffer.len() >= 5 + len {
                    self.buffer.advance(5);
                    let payload = self.buffer.split_to(len).freeze();
                    return Some(if flag & 0x80 != 0 {
                        Frame::Trailers(String::from_utf8(payload.to_vec()).unwrap())
                    } else {
                        Frame::Message(payload)
                    });
                }
            }
            let chunk = self.response.chunk().await?;
            self.buffer.extend_from_slice(&chunk);
        }
    }

    async fn message<M: prost::Message + Default>(&mut self) -> M {
        match self.next().await {
            Some(Frame::Message(bytes)) => M::decode(bytes).unwrap(),
            Some(Frame::Trailers(trailers)) => panic!("the stream ended: {trailers}"),
            None => panic!("the body ended with no trailers"),
        }
    }

    async fn trailers(&mut self) -> String {
        loop {
            match self.next().await {
                Some(Frame::Trailers(trailers)) => return trailers.to_ascii_lowercase(),
                Some(Frame::Message(_)) => {}
                None => panic!("the body ended with no trailers"),
            }
        }
    }

    async fn until(&mut self, kind: impl Fn(&E) -> bool) -> pb::TableEvent {
        loop {
            let event: pb::TableEvent = self.message().await;
            if event.event.as_ref().is_some_and(&kind) {
                return event;
            }
        }
    }
}

/// The grpc-status a gRPC-Web response ends with: in its headers when it carries no
/// message, otherwise in its trailers frame.
async fn status(response: Response) -> (String, String) {
    let in_headers = response.header("grpc-status").to_owned();
    if !in_headers.is_empty() {
        let message = response.header("grpc-message").to_owned();
        return (in_headers, message);
    }
    let trailers = Frames::new(response).trailers().await;
    let field = |name: &str| {
        trailers
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    (field("grpc-status"), field("grpc-message"))
}

async fn unary_and_subscribe(version: Version) {
    let mut h = harness().await;
    let mut c = h.croupier();

    let request = grpc_web(&h, "ListTables", &pb::ListTablesRequest {}, Some("pia"))
        .body(framed(&pb::ListTablesRequest {}))
        .unwrap();
    let response = send(&h, version, request).await;
    assert_eq!(response.status, http::StatusCode::OK);
    assert_eq!(
        response.header("content-type"),
        "application/grpc-web+proto"
    );
    let mut frames = Frames::new(response);
    let tables: pb::ListTablesResponse = frames.message().await;
    assert_eq!(tables.tables[0].table_id, "T01");
    assert!(frames.trailers().await.contains("grpc-status:0"));

    // Subscribe: the snapshot, then events as they happen, on one streamed response.
    let subscribe = pb::SubscribeRequest {
        table_id: t01(),
        resume_from_seq: 0,
    };
    let request = grpc_web(&h, "Subscribe", &subscribe, Some("pia"))
        .body(framed(&subscribe))
        .unwrap();
    let mut events = Frames::new(send(&h, version, request).await);
    let first: pb::TableEvent = events.message().await;
    assert!(matches!(first.event, Some(E::Snapshot(_))), "{first:?}");
    let round = to_betting(&mut c).await;
    let opened = events.until(|e| matches!(e, E::BettingOpened(_))).await;
    assert_eq!(opened.round_id, round);

    // A bet over gRPC-Web, and its acceptance on the stream.
    let bets = pb::PlaceBetsRequest {
        table_id: t01(),
        round_id: round.clone(),
        bets: vec![bet(pb::BetKind::Banker, 2_500)],
        idempotency_key: format!("web-{version:?}"),
    };
    let request = grpc_web(&h, "PlaceBets", &bets, Some("pia"))
        .body(framed(&bets))
        .unwrap();
    let mut placed = Frames::new(send(&h, version, request).await);
    let placed: pb::PlaceBetsResponse = placed.message().await;
    assert_eq!(placed.balance.unwrap().available_minor, WELCOME - 2_500);
    let accepted = events.until(|e| matches!(e, E::BetAccepted(_))).await;
    let Some(E::BetAccepted(accepted)) = accepted.event else {
        unreachable!()
    };
    assert_eq!(accepted.bets[0].accepted_minor, 2_500);

    // Stopping ends the stream with UNAVAILABLE, saying to resume.
    h.stop_serving();
    let trailers = events.trailers().await;
    assert!(trailers.contains("grpc-status:14"), "{trailers}");
    assert!(trailers.contains("resume_from_seq"), "{trailers}");
    h.stop().await;
}

#[tokio::test]
async fn grpc_web_over_http1_answers_calls_and_streams_subscribe() {
    unary_and_subscribe(Version::Http1).await;
}

#[tokio::test]
async fn grpc_web_over_http2_answers_calls_and_streams_subscribe() {
    unary_and_subscribe(Version::Http2).await;
}

#[tokio::test]
async fn grpc_web_calls_keep_their_authentication_and_services() {
    let h = harness().await;
    for version in [Version::Http1, Version::Http2] {
        // No token.
        let request = grpc_web(&h, "GetBalance", &pb::GetBalanceRequest {}, None)
            .body(framed(&pb::GetBalanceRequest {}))
            .unwrap();
        let (code, message) = status(send(&h, version, request).await).await;
        assert_eq!(
            code,
            (Code::Unauthenticated as i32).to_string(),
            "{version:?}: {message}"
        );
        // A croupier's token is not a player's.
        let token = h
            .issuer
            .issue(
                "anna",
                Role::Croupier,
                Duration::from_secs(600),
                SystemTime::now(),
            )
            .unwrap();
        let request = grpc_web(&h, "GetBalance", &pb::GetBalanceRequest {}, None)
            .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(framed(&pb::GetBalanceRequest {}))
            .unwrap();
        let (code, _) = status(send(&h, version, request).await).await;
        assert_eq!(
            code,
            (Code::PermissionDenied as i32).to_string(),
            "{version:?}"
        );
        // Only PlayerService is served over gRPC-Web.
        let request = http::Request::post("/banco.v1.TableService/GetState")
            .header(http::header::HOST, host(&h))
            .header(http::header::CONTENT_TYPE, "application/grpc-web+proto")
            .body(framed(&pb::GetBalanceRequest {}))
            .unwrap();
        let (code, message) = status(send(&h, version, request).await).await;
        assert_eq!(
            code,
            (Code::Unimplemented as i32).to_string(),
            "{version:?}"
        );
        assert!(message.contains("PlayerService"), "{message}");
        // A malformed deadline is named.
        let request = grpc_web(&h, "GetBalance", &pb::GetBalanceRequest {}, Some("pia"))
            .header("grpc-timeout", "soon")
            .body(framed(&pb::GetBalanceRequest {}))
            .unwrap();
        let (code, message) = status(send(&h, version, request).await).await;
        assert_eq!(
            code,
            (Code::InvalidArgument as i32).to_string(),
            "{version:?}"
        );
        assert!(message.contains("grpc-timeout"), "{message}");
    }
    h.stop().await;
}

#[tokio::test]
async fn only_the_pages_own_origin_and_the_allowed_ones_may_call() {
    let h = harness().await;
    let own = format!("http://{}", host(&h));
    for version in [Version::Http1, Version::Http2] {
        let call = |origin: Option<&str>| {
            let mut request = grpc_web(&h, "GetBalance", &pb::GetBalanceRequest {}, Some("pia"));
            if let Some(origin) = origin {
                request = request.header(http::header::ORIGIN, origin);
            }
            request.body(framed(&pb::GetBalanceRequest {})).unwrap()
        };
        // The page's own origin, and a program with none: answered, no CORS headers.
        for origin in [Some(own.as_str()), None] {
            let response = send(&h, version, call(origin)).await;
            assert_eq!(
                response.status,
                http::StatusCode::OK,
                "{version:?} {origin:?}"
            );
            assert_eq!(response.header("access-control-allow-origin"), "");
            let balance: pb::Balance = Frames::new(response).message().await;
            assert_eq!(balance.currency, "EUR");
        }
        // The operator's lobby: answered, and its browser may read the answer.
        let response = send(&h, version, call(Some(LOBBY))).await;
        assert_eq!(response.status, http::StatusCode::OK);
        assert_eq!(response.header("access-control-allow-origin"), LOBBY);
        assert!(
            response
                .header("access-control-expose-headers")
                .contains("grpc-status")
        );
        // Any other site: refused before any service sees it, saying why.
        let response = send(&h, version, call(Some("https://evil.example"))).await;
        assert_eq!(response.status, http::StatusCode::FORBIDDEN, "{version:?}");
        assert_eq!(response.header("access-control-allow-origin"), "");
        let text = response.text().await;
        assert!(
            text.contains("https://evil.example") && text.contains("operator allows"),
            "{text}"
        );

        // Preflights: the lobby's is answered with what it may send; another's refused.
        let preflight = |origin: &str| {
            http::Request::options("/banco.v1.PlayerService/PlaceBets")
                .header(http::header::HOST, host(&h))
                .header(http::header::ORIGIN, origin)
                .header("access-control-request-method", "POST")
                .header(
                    "access-control-request-headers",
                    "authorization,content-type,x-grpc-web",
                )
                .body(Bytes::new())
                .unwrap()
        };
        let response = send(&h, version, preflight(LOBBY)).await;
        assert_eq!(response.status, http::StatusCode::NO_CONTENT);
        assert_eq!(response.header("access-control-allow-origin"), LOBBY);
        assert!(
            response
                .header("access-control-allow-methods")
                .contains("POST")
        );
        let allowed = response.header("access-control-allow-headers");
        for needed in [
            "authorization",
            "content-type",
            "x-grpc-web",
            "grpc-timeout",
        ] {
            assert!(allowed.contains(needed), "{needed}: {allowed}");
        }
        let response = send(&h, version, preflight("https://evil.example")).await;
        assert_eq!(response.status, http::StatusCode::FORBIDDEN);
    }
    h.stop().await;
}

/// `POST path` with a JSON body and headers.
fn post_json(
    h: &Harness,
    path: &str,
    body: &serde_json::Value,
    headers: &[(&str, &str)],
) -> http::Request<Bytes> {
    let mut request = http::Request::post(path)
        .header(http::header::HOST, host(h))
        .header(http::header::CONTENT_TYPE, "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Bytes::from(body.to_string())).unwrap()
}

async fn json(response: Response) -> (http::StatusCode, serde_json::Value) {
    let status = response.status;
    assert_eq!(response.header("cache-control"), "no-store");
    (
        status,
        serde_json::from_str(&response.text().await).unwrap(),
    )
}

#[tokio::test]
async fn a_launch_code_is_exchanged_once_for_its_players_token() {
    let h = harness().await;
    let issue = |sub: &str, role: Role| {
        h.issuer
            .issue(sub, role, Duration::from_secs(600), SystemTime::now())
            .unwrap()
    };
    let service = format!("Bearer {}", issue("lobby", Role::Service));
    let player = issue("pia", Role::Player);
    let create = |token: &str, auth: &str| {
        post_json(
            &h,
            "/launch",
            &serde_json::json!({ "player_token": token }),
            &[("authorization", auth)],
        )
    };

    // Refused, naming why, and no code made: no service token, a player's token as the
    // service's, a player token that is not one.
    for (auth, token, status, says) in [
        (
            "",
            player.as_str(),
            http::StatusCode::UNAUTHORIZED,
            "service token",
        ),
        (
            &*format!("Bearer {player}"),
            player.as_str(),
            http::StatusCode::FORBIDDEN,
            "service token",
        ),
        (
            service.as_str(),
            "not-a-token",
            http::StatusCode::BAD_REQUEST,
            "player_token",
        ),
        (
            service.as_str(),
            &*issue("anna", Role::Croupier),
            http::StatusCode::BAD_REQUEST,
            "player_token",
        ),
    ] {
        let (got, body) = json(send(&h, Version::Http1, create(token, auth)).await).await;
        assert_eq!(got, status, "{body}");
        assert!(body["error"].as_str().unwrap().contains(says), "{body}");
    }
    let (got, body) = json(
        send(
            &h,
            Version::Http1,
            post_json(
                &h,
                "/launch",
                &serde_json::json!({"token": player}),
                &[("authorization", &service)],
            ),
        )
        .await,
    )
    .await;
    assert_eq!(got, http::StatusCode::BAD_REQUEST);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("player_token: missing"),
        "{body}"
    );

    let (got, made) = json(send(&h, Version::Http2, create(&player, &service)).await).await;
    assert_eq!(got, http::StatusCode::CREATED, "{made}");
    let code = made["code"].as_str().unwrap().to_owned();
    assert!(code.len() >= 22, "{code}");
    assert_eq!(made["path"], format!("/?code={code}"));
    assert_eq!(made["player"], "pia");

    let exchange = |origin: Option<&str>| {
        let mut headers = Vec::new();
        if let Some(origin) = origin {
            headers.push(("origin", origin));
        }
        post_json(
            &h,
            "/launch/exchange",
            &serde_json::json!({ "code": code }),
            &headers,
        )
    };
    // Another site, even an allowed one, never gets the token (and the code survives).
    let (got, body) = json(send(&h, Version::Http1, exchange(Some(LOBBY))).await).await;
    assert_eq!(got, http::StatusCode::FORBIDDEN, "{body}");
    let own = format!("http://{}", host(&h));
    let (got, body) = json(send(&h, Version::Http1, exchange(Some(&own))).await).await;
    assert_eq!(got, http::StatusCode::OK, "{body}");
    assert_eq!(body["token"], player);
    assert_eq!(body["player"], "pia");
    // Once only.
    let (got, body) = json(send(&h, Version::Http1, exchange(Some(&own))).await).await;
    assert_eq!(got, http::StatusCode::NOT_FOUND);
    assert!(
        body["error"].as_str().unwrap().contains("used already"),
        "{body}"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_page_is_served_at_the_root_with_its_policy_or_a_notice_to_build_it() {
    let h = harness().await;
    // What build.rs built into the binary: the page when `web/dist` holds it.
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../web/dist/index.html")
        .is_file();
    for version in [Version::Http1, Version::Http2] {
        let request = http::Request::get("/?code=abc")
            .header(http::header::HOST, host(&h))
            .body(Bytes::new())
            .unwrap();
        let response = send(&h, version, request).await;
        if built {
            assert_eq!(response.status, http::StatusCode::OK);
            assert_eq!(response.header("content-type"), "text/html; charset=utf-8");
            assert_eq!(response.header("cache-control"), "no-cache");
            assert_eq!(response.header("referrer-policy"), "no-referrer");
            let csp = response.header("content-security-policy").to_owned();
            assert!(csp.contains("script-src 'self'"), "{csp}");
            assert!(
                csp.contains(&format!("frame-ancestors 'self' {LOBBY}")),
                "{csp}"
            );
            let etag = response.header("etag").to_owned();
            let html = response.text().await;
            assert!(html.contains("<script"), "{html}");
            // Checked again, not sent again.
            let again = http::Request::get("/")
                .header(http::header::HOST, host(&h))
                .header(http::header::IF_NONE_MATCH, etag)
                .body(Bytes::new())
                .unwrap();
            assert_eq!(
                send(&h, version, again).await.status,
                http::StatusCode::NOT_MODIFIED
            );
        } else {
            assert_eq!(response.status, http::StatusCode::SERVICE_UNAVAILABLE);
            let text = response.text().await;
            assert!(text.contains("cargo xtask web"), "{text}");
        }
        let missing = http::Request::get("/assets/none.js")
            .header(http::header::HOST, host(&h))
            .body(Bytes::new())
            .unwrap();
        let status = send(&h, version, missing).await.status;
        let expected = if built {
            http::StatusCode::NOT_FOUND
        } else {
            http::StatusCode::SERVICE_UNAVAILABLE
        };
        assert_eq!(status, expected);
    }
    // gRPC itself is unchanged on the same port.
    let mut p = h.player("pia");
    let tables = p
        .list_tables(pb::ListTablesRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(tables.tables.len(), 1);
    h.stop().await;
}
