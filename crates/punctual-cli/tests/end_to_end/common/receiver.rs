//! Webhook receivers' side of HTTP/1.1, for tests that stand in for the receiver of
//! push actions: read one request, write one answer (then the connection closes).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// A request as the receiver read it.
pub struct Request {
    pub head: String,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// Reads one HTTP/1.1 request (head and `Content-Length` body); `None` when the peer
/// sent nothing.
pub fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    if head.is_empty() {
        return None;
    }
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("read the body");
    Some(Request { head, body })
}

/// Answers with `status` and a JSON `text`, closing the connection after it.
pub fn write_response(stream: &mut TcpStream, status: u16, text: &str) {
    write_response_with(stream, status, &[], text);
}

/// [`write_response`] with extra `headers` (`("Retry-After", "2")`).
pub fn write_response_with(stream: &mut TcpStream, status: u16, headers: &[(&str, &str)], text: &str) {
    let extra: String = headers.iter().map(|(name, value)| format!("{name}: {value}\r\n")).collect();
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(response.as_bytes());
}

/// An answer the test gives a [`Receiver`]: status, extra headers, JSON text.
type Answer = (u16, Vec<(String, String)>, String);

/// A blocking HTTP/1.1 receiver: each request goes to the test, which sends back the
/// answer (one request per connection: it answers `Connection: close`). Requests are
/// taken one at a time, so the test sees them in the order their connections came.
pub struct Receiver {
    pub addr: SocketAddr,
    requests: mpsc::Receiver<Request>,
    answers: mpsc::Sender<Answer>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let addr = listener.local_addr().expect("the receiver's address");
        let (request_tx, requests) = mpsc::channel();
        let (answers, answer_rx) = mpsc::channel::<Answer>();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let Some(request) = read_request(&stream) else { continue };
                if request_tx.send(request).is_err() {
                    return;
                }
                let Ok((status, headers, text)) = answer_rx.recv_timeout(Duration::from_secs(30)) else { return };
                let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
                write_response_with(&mut stream, status, &headers, &text);
            }
        });
        Receiver { addr, requests, answers }
    }

    /// The next request, within 15 s.
    pub fn next(&self) -> Request {
        self.next_within(Duration::from_secs(15))
    }

    /// The next request, within `limit`.
    pub fn next_within(&self, limit: Duration) -> Request {
        self.requests.recv_timeout(limit).unwrap_or_else(|_| panic!("a delivery within {limit:?}"))
    }

    /// Whether no request has come that the test has not taken.
    pub fn is_idle(&self) -> bool {
        self.requests.try_recv().is_err()
    }

    pub fn answer(&self, status: u16, body: &str) {
        self.answer_with(status, &[], body);
    }

    pub fn answer_with(&self, status: u16, headers: &[(&str, &str)], body: &str) {
        let headers = headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        self.answers.send((status, headers, body.to_owned())).expect("the receiver is running");
    }
}

/// A receiver on loopback answering 200 to every delivery, and each delivery's body
/// (`Null` when it is not JSON) in arrival order, until the channel is dropped.
pub fn answering_200() -> (SocketAddr, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
    let addr = listener.local_addr().expect("the receiver's address");
    let (deliveries, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = read_request(&stream) else { continue };
            write_response(&mut stream, 200, "");
            let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            if deliveries.send(body).is_err() {
                return;
            }
        }
    });
    (addr, received)
}
