//! Webhook receivers' side of HTTP/1.1, for tests that stand in for the receiver of
//! push actions: read one request, write one answer (then the connection closes).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

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
