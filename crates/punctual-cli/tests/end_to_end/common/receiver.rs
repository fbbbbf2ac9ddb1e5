//! Webhook receivers' side of HTTP/1.1, for tests that stand in for the receiver of
//! push actions: read one request, write one answer (then the connection closes).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;

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
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(response.as_bytes());
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
