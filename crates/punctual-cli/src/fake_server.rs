//! A fake punctual server for the client's unit tests: it answers every request with
//! what a closure says and records the requests exactly as they arrived on the wire,
//! so tests see the encoded path, the headers and the body the CLI sent.
//!
//! One request per connection (`Connection: close`); the real server's behaviour is
//! covered by the end-to-end tests in `tests/`.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as received.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The request target as sent: path and query, still percent-encoded.
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A running fake server; it stops when the test's runtime ends.
pub(crate) struct FakeServer {
    pub(crate) url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl FakeServer {
    /// Starts a server on a free loopback port answering `(status, body)` for each
    /// request.
    pub(crate) async fn start(respond: impl Fn(&Request) -> (u16, String) + Send + Sync + 'static) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let Some(request) = read_request(&mut socket).await else { continue };
                let (status, body) = respond(&request);
                seen.lock().expect("lock").push(request);
                let head = format!(
                    "HTTP/1.1 {status} Fake\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        });
        FakeServer { url, requests }
    }

    /// The requests received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Request { method, target, headers, body: String::from_utf8_lossy(&body).into_owned() })
}
