//! Real parts for the action tests: an engine on the embedded store in a temp dir
//! (whose acks reach the test as the engine's events, so tests wait on events instead
//! of sleeping), an HTTP receiver on loopback that records each request and answers as
//! the test scripts it (reached through [`loopback_runtime`]: the default egress
//! policy refuses loopback), and an SMTP sink.

#![allow(clippy::unwrap_used, reason = "a test kit: a failure here is a test failure")]

pub mod smtp;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use punctual_actions::{EgressPolicy, Runtime};
use punctual_core::{Clock, Engine, EngineConfig, Event, ManualClock, Task, Timestamp};
use punctual_sqlite::SqliteStore;
use tokio::sync::mpsc;

/// How long a test waits for an event before failing.
pub const WAIT: Duration = Duration::from_secs(15);

/// A runtime whose HTTP actions may reach the test receivers on 127.0.0.1, which the
/// default egress policy refuses.
pub fn loopback_runtime(clock: Arc<dyn Clock>) -> Runtime {
    Runtime::with_egress(clock, EgressPolicy::public_only().allow("127.0.0.1").unwrap()).unwrap()
}

/// Receives from `rx` or panics after [`WAIT`].
pub async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    match tokio::time::timeout(WAIT, rx.recv()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("{what}: channel closed"),
        Err(_) => panic!("{what}: nothing within {WAIT:?}"),
    }
}

/// An engine on a fresh embedded store, on a manual clock.
pub struct Harness {
    pub engine: Engine<SqliteStore>,
    pub clock: ManualClock,
    completed: mpsc::UnboundedReceiver<String>,
    /// Completions seen while waiting for another.
    pending: Vec<String>,
    _dir: tempfile::TempDir,
}

/// 2026-11-30T12:00:00Z, where every test's clock starts.
pub const START_MS: i64 = 1_796_040_000_000;

impl Harness {
    pub fn start() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let (tx, completed) = mpsc::unbounded_channel();
        let store = SqliteStore::open(dir.path()).unwrap();
        let clock = ManualClock::new(Timestamp::from_millis(START_MS));
        // Every ack the engine applied or refused, as `queue/key`.
        let completions = move |event: &Event| {
            if let Event::Completed { queue, key, .. } | Event::AckRefused { queue, key } = event {
                let _ = tx.send(format!("{queue}/{key}"));
            }
        };
        let config = EngineConfig::default().clock(Arc::new(clock.clone())).observe(completions);
        let engine = Engine::start(store, config);
        Harness { engine, clock, completed, pending: Vec::new(), _dir: dir }
    }

    /// Waits until a handler's outcome for `key` was applied to the store, and returns
    /// the task as it is then (`None`: done and deleted).
    pub async fn completed(&mut self, queue: &str, key: &str) -> Option<Task> {
        let wanted = format!("{queue}/{key}");
        if let Some(i) = self.pending.iter().position(|done| *done == wanted) {
            self.pending.remove(i);
        } else {
            loop {
                let done = next(&mut self.completed, &format!("completion of {wanted}")).await;
                if done == wanted {
                    break;
                }
                self.pending.push(done);
            }
        }
        self.engine.get(queue, key).await.unwrap()
    }

    pub fn now(&self) -> Timestamp {
        punctual_core::Clock::now(&self.clock)
    }
}

/// A request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    pub query: HashMap<String, String>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or_else(|| panic!("no header {name}"))
    }
}

/// What the receiver answers next.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Never answer (the request times out).
    pub hang: bool,
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply { status, headers: Vec::new(), body: String::new(), hang: false }
    }
    pub fn body(mut self, body: &str) -> Reply {
        self.body = body.to_owned();
        self
    }
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
    pub fn hang() -> Reply {
        Reply { hang: true, ..Reply::status(200) }
    }
}

struct Shared {
    seen: mpsc::UnboundedSender<Seen>,
    replies: tokio::sync::Mutex<mpsc::UnboundedReceiver<Reply>>,
    /// Answer this to every request without waiting for a script (when set).
    always: Mutex<Option<Reply>>,
}

/// An HTTP receiver on 127.0.0.1: each request goes to `seen`; the answer is the next
/// scripted [`Reply`].
pub struct Receiver {
    pub addr: SocketAddr,
    pub seen: mpsc::UnboundedReceiver<Seen>,
    replies: mpsc::UnboundedSender<Reply>,
    shared: Arc<Shared>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let (seen_tx, seen) = mpsc::unbounded_channel();
        let (replies, replies_rx) = mpsc::unbounded_channel();
        let shared =
            Arc::new(Shared { seen: seen_tx, replies: tokio::sync::Mutex::new(replies_rx), always: Mutex::new(None) });
        let app = Router::new().fallback(receive).with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { addr, seen, replies, shared }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Scripts the next answer.
    pub fn answer(&self, reply: Reply) {
        self.replies.send(reply).unwrap();
    }

    /// Answers `reply` to every request from now on.
    pub fn always(&self, reply: Reply) {
        *self.shared.always.lock().unwrap() = Some(reply);
    }

    /// The next request.
    pub async fn next(&mut self) -> Seen {
        next(&mut self.seen, "a request at the receiver").await
    }
}

async fn receive(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = uri.query().map(url_pairs).unwrap_or_default();
    let _ = shared.seen.send(Seen { method, path: uri.path().to_owned(), query, headers, body: body.to_vec() });
    let always = shared.always.lock().unwrap().clone();
    let reply = match always {
        Some(reply) => reply,
        None => match tokio::time::timeout(WAIT, shared.replies.lock().await.recv()).await {
            Ok(Some(reply)) => reply,
            _ => return (StatusCode::INTERNAL_SERVER_ERROR, "no scripted reply").into_response(),
        },
    };
    if reply.hang {
        std::future::pending::<()>().await;
    }
    let mut response = (StatusCode::from_u16(reply.status).unwrap(), reply.body).into_response();
    for (name, value) in reply.headers {
        response.headers_mut().insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            axum::http::HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}

/// Decodes `a=1&b=%2B` as application/x-www-form-urlencoded.
fn url_pairs(query: &str) -> HashMap<String, String> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}
