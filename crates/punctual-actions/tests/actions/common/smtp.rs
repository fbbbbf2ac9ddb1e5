//! An SMTP sink on loopback speaking just enough SMTP for lettre: EHLO, AUTH PLAIN
//! and LOGIN, MAIL, RCPT, DATA, RSET, NOOP, QUIT. Each accepted message goes to a
//! channel with its envelope, the credentials of its connection and a connection
//! number (to see connections reused). A recipient containing "nobody" is refused
//! with 550 (a permanent error); one containing "later" with 451 (transient).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One message the sink accepted.
#[derive(Debug, Clone)]
pub struct Mail {
    pub connection: usize,
    pub auth: Option<(String, String)>,
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

impl Mail {
    /// The value of a header (first occurrence, unfolded).
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or("");
        let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
        unfolded.split("\r\n").find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// Everything after the header block.
    pub fn body(&self) -> &str {
        self.data.split_once("\r\n\r\n").map_or("", |(_, body)| body)
    }
}

pub struct SmtpSink {
    pub addr: SocketAddr,
    pub mails: mpsc::UnboundedReceiver<Mail>,
}

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, mails) = mpsc::unbounded_channel();
        let connections = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let n = connections.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::spawn(session(stream, n, tx.clone()));
            }
        });
        SmtpSink { addr, mails }
    }
}

async fn session(stream: TcpStream, connection: usize, mails: mpsc::UnboundedSender<Mail>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    send(&mut write, "220 sink.test ESMTP ready\r\n").await;
    let mut auth = None;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let command = line.trim_end().to_owned();
        let upper = command.to_ascii_uppercase();
        if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            send(&mut write, "250-sink.test\r\n250-AUTH PLAIN LOGIN\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n").await;
        } else if upper.starts_with("AUTH PLAIN") {
            let encoded = command[10..].trim();
            let decoded = String::from_utf8(BASE64.decode(encoded).unwrap()).unwrap();
            let mut parts = decoded.split('\0').skip(1);
            auth = Some((parts.next().unwrap().to_owned(), parts.next().unwrap().to_owned()));
            send(&mut write, "235 2.7.0 authenticated\r\n").await;
        } else if upper.starts_with("AUTH LOGIN") {
            send(&mut write, "334 VXNlcm5hbWU6\r\n").await;
            line.clear();
            lines.read_line(&mut line).await.unwrap();
            let user = String::from_utf8(BASE64.decode(line.trim()).unwrap()).unwrap();
            send(&mut write, "334 UGFzc3dvcmQ6\r\n").await;
            line.clear();
            lines.read_line(&mut line).await.unwrap();
            let pass = String::from_utf8(BASE64.decode(line.trim()).unwrap()).unwrap();
            auth = Some((user, pass));
            send(&mut write, "235 2.7.0 authenticated\r\n").await;
        } else if upper.starts_with("MAIL FROM:") {
            from = address(&command);
            to.clear();
            send(&mut write, "250 2.1.0 ok\r\n").await;
        } else if upper.starts_with("RCPT TO:") {
            let rcpt = address(&command);
            if rcpt.contains("nobody") {
                send(&mut write, "550 5.1.1 no such mailbox\r\n").await;
            } else if rcpt.contains("later") {
                send(&mut write, "451 4.3.0 try again later\r\n").await;
            } else {
                to.push(rcpt);
                send(&mut write, "250 2.1.5 ok\r\n").await;
            }
        } else if upper == "DATA" {
            send(&mut write, "354 end with <CRLF>.<CRLF>\r\n").await;
            let mut data = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                if line == ".\r\n" {
                    break;
                }
                // Undo dot-stuffing.
                data.push_str(line.strip_prefix('.').filter(|_| line.starts_with("..")).unwrap_or(&line));
            }
            let data = data.strip_suffix("\r\n").unwrap_or(&data).to_owned();
            let _ = mails.send(Mail { connection, auth: auth.clone(), from: from.clone(), to: to.clone(), data });
            send(&mut write, "250 2.0.0 queued\r\n").await;
        } else if upper == "RSET" || upper == "NOOP" {
            send(&mut write, "250 2.0.0 ok\r\n").await;
        } else if upper == "QUIT" {
            send(&mut write, "221 2.0.0 bye\r\n").await;
            return;
        } else {
            send(&mut write, "502 5.5.2 not implemented\r\n").await;
        }
    }
}

/// The address inside `MAIL FROM:<a@b> SIZE=1`.
fn address(command: &str) -> String {
    let start = command.find('<').map_or(0, |i| i + 1);
    let end = command[start..].find('>').map_or(command.len(), |i| start + i);
    command[start..end].to_owned()
}

async fn send(write: &mut tokio::net::tcp::OwnedWriteHalf, text: &str) {
    let _ = write.write_all(text.as_bytes()).await;
}
