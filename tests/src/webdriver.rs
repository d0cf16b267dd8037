//! A small WebDriver client for the player page's tests: Debian's `chromedriver` driving
//! its headless `chromium`, spoken to over loopback HTTP with JSON (the W3C protocol:
//! sessions, navigation, scripts, elements, clicks, key and pointer actions,
//! screenshots).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The W3C name of an element reference in JSON.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Headless Chromium's flags on these machines: without the background-networking ones
/// its connections are refused by the closed network.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--autoplay-policy=no-user-gesture-required",
];

/// Whether Chromium and its driver are installed (`cargo xtask setup` installs them).
pub fn available() -> bool {
    Path::new("/usr/bin/chromium").exists() && Path::new("/usr/bin/chromedriver").exists()
}

/// A chromedriver process and one browser session. Both end when dropped.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a fresh profile, `width`×`height`.
    pub fn start(width: u32, height: u32) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("no free port: {e}"));
        let mut driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("chromedriver: {e}"));
        // chromedriver says when it listens.
        if let Some(stdout) = driver.stdout.take() {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                if line
                    .map(|l| l.contains("started successfully"))
                    .unwrap_or(true)
                {
                    break;
                }
            }
            std::thread::spawn(move || lines.for_each(drop));
        }
        let profile = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        args.push(format!("--window-size={width},{height}"));
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let created = browser.call(
            "POST",
            "/session",
            &json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
            }}}),
        );
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        browser.resize(width, height);
        browser
    }

    /// One WebDriver command; its `value`. Panics on a WebDriver error, with its message.
    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = if method == "GET" {
            String::new()
        } else {
            body.to_string()
        };
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))
            .unwrap_or_else(|e| panic!("chromedriver on {}: {e}", self.port));
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .unwrap_or_else(|e| panic!("chromedriver: {e}"));
        let body = read_answer(stream);
        let value: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{method} {path}: {e}: {body}"));
        if let Some(error) = value["value"]["error"].as_str() {
            panic!("{method} {path}: {error}: {}", value["value"]["message"]);
        }
        value["value"].clone()
    }

    fn session_call(&self, method: &str, path: &str, body: &Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", &json!({ "url": url }));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page; what it returns.
    pub fn run(&self, script: &str, args: &[Value]) -> Value {
        self.session_call(
            "POST",
            "/execute/sync",
            &json!({ "script": script, "args": args }),
        )
    }

    /// Waits until `script` returns something truthy; that value. Panics after `within`,
    /// naming `what` and what the script last gave. A script that throws (the element it
    /// reads is not on the page yet) counts as not yet.
    pub fn wait_for(&self, what: &str, within: Duration, script: &str) -> Value {
        let guarded =
            format!("try {{ {script} \n}} catch (e) {{ return {{ thrown: String(e) }}; }}");
        let truthy = |value: &Value| match value {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
            Value::String(s) => !s.is_empty(),
            Value::Object(o) => !o.contains_key("thrown"),
            Value::Array(_) => true,
        };
        let value = crate::poll_blocking(
            within,
            Duration::from_millis(50),
            || self.run(&guarded, &[]),
            truthy,
        );
        assert!(truthy(&value), "waited {within:?} for {what}: {value}");
        value
    }

    fn element(&self, css: &str) -> String {
        let found = self.session_call(
            "POST",
            "/element",
            &json!({"using": "css selector", "value": css}),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    /// A left click on the element `css` selects.
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.session_call("POST", &format!("/element/{id}/click"), &json!({}));
    }

    /// A right click (the context menu's button) on the element `css` selects.
    pub fn right_click(&self, css: &str) {
        let id = self.element(css);
        self.session_call(
            "POST",
            "/actions",
            &json!({"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                "actions": [
                    {"type": "pointerMove", "origin": {ELEMENT: id}, "x": 0, "y": 0},
                    {"type": "pointerDown", "button": 2},
                    {"type": "pointerUp", "button": 2},
                ]}]}),
        );
        self.session_call("DELETE", "/actions", &json!({}));
    }

    /// Presses and releases each key of `keys` in turn (WebDriver key codes, e.g.
    /// `\u{E013}` for ↑), to whatever has the focus.
    pub fn keys(&self, keys: &[&str]) {
        let mut actions = Vec::new();
        for key in keys {
            actions.push(json!({"type": "keyDown", "value": key}));
            actions.push(json!({"type": "keyUp", "value": key}));
        }
        self.session_call(
            "POST",
            "/actions",
            &json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]}),
        );
    }

    /// Makes the page's viewport (not the window, whose frame takes some of it)
    /// `width`×`height` CSS pixels.
    pub fn resize(&self, width: u32, height: u32) {
        let (mut window_w, mut window_h) = (width, height);
        for _ in 0..3 {
            self.session_call(
                "POST",
                "/window/rect",
                &json!({"width": window_w, "height": window_h}),
            );
            let inner = self.run("return [window.innerWidth, window.innerHeight]", &[]);
            let inner_w = u32::try_from(inner[0].as_u64().unwrap_or(0)).unwrap_or(0);
            let inner_h = u32::try_from(inner[1].as_u64().unwrap_or(0)).unwrap_or(0);
            if (inner_w, inner_h) == (width, height) {
                return;
            }
            window_w = (window_w + width).saturating_sub(inner_w);
            window_h = (window_h + height).saturating_sub(inner_h);
        }
        panic!("could not make the viewport {width}x{height}");
    }

    /// A PNG of the viewport, written to `path`; its size in pixels.
    pub fn screenshot(&self, path: &Path) -> (u32, u32) {
        use base64::Engine as _;
        let shot = self.session_call("GET", "/screenshot", &json!({}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().unwrap_or(""))
            .unwrap_or_else(|e| panic!("screenshot: {e}"));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(path, &png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // The IHDR chunk, first after the signature: width and height, big-endian.
        let be = |at: usize| {
            png.get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_be_bytes)
        };
        (be(16), be(20))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.call("DELETE", &format!("/session/{}", self.session), &json!({}));
            }));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The body of an HTTP/1.1 answer: chromedriver keeps its connections open, so the body
/// is read by its length (or its chunks), not to the end of the stream.
fn read_answer(stream: TcpStream) -> String {
    let mut reader = BufReader::new(stream);
    let mut length: Option<usize> = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        let read = reader
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("chromedriver: {e}"));
        if read == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().ok();
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader
                .read_line(&mut size)
                .unwrap_or_else(|e| panic!("chromedriver: {e}"));
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader
                .read_exact(&mut chunk)
                .unwrap_or_else(|e| panic!("chromedriver: {e}"));
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        reader
            .read_exact(&mut body)
            .unwrap_or_else(|e| panic!("chromedriver: {e}"));
    } else {
        let _ = reader.read_to_end(&mut body);
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Where the page's screenshots go: `$CARGO_TARGET_DIR/web-artifacts` (or `target/`).
pub fn artifacts() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("web-artifacts")
}
