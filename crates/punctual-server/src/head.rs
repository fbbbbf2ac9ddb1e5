//! Request heads that hyper refuses before the app sees them, answered in the API's
//! error body.
//!
//! hyper parses a request's head (request line and headers) itself and answers a
//! head it cannot take with a bare response of its own: 414 for a request line over
//! 65,534 bytes whose head fits in its read buffer, and 431 for any head that fills the
//! buffer (408 KiB) before it ends — a 1 MiB path included, although what is too long
//! there is the URI. [`Guarded`] sits between the socket and hyper and gives those two
//! answers the API's form: the error body, and 414 when the request line alone filled
//! the buffer.
//!
//! How it tells them apart: a head starts with its request line. Between the last byte
//! the server wrote (the previous response) and hyper's 431, the client sent the
//! head; if no line break came in that time, the request line never ended, so the URI
//! is what is too long. (A client that pipelines requests may get 431 where 414 was
//! meant; nothing else changes.)
//!
//! Invariant: only hyper's own answers are replaced. They are recognised by their
//! exact form (status 414 or 431, an empty body, no `content-type`, written as one
//! piece) after at least [`MIN_HEAD_READ`] bytes came in since the last write; the app
//! never answers 414 or 431 itself, and its answers always have a `content-type`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::ApiError;

/// hyper answers 414 or 431 only after reading more than this (its smallest read buffer).
const MIN_HEAD_READ: usize = 8192;

/// A connection whose hyper-made 414 and 431 answers are rewritten (see the module doc).
#[derive(Debug)]
pub(crate) struct Guarded<IO> {
    io: IO,
    /// Bytes read since the server last wrote.
    read_since_write: usize,
    /// No line break among them.
    line_open: bool,
    /// The answer written in place of hyper's, and how much of it is out. Once set, the
    /// connection only ends: hyper closes it after its answer.
    replacement: Option<(Vec<u8>, usize)>,
}

impl<IO> Guarded<IO> {
    pub(crate) fn new(io: IO) -> Guarded<IO> {
        Guarded { io, read_since_write: 0, line_open: true, replacement: None }
    }
}

/// The status of hyper's own refusal of a head, when `bytes` is one.
fn hypers_refusal(bytes: &[u8]) -> Option<StatusCode> {
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix("HTTP/1.1 ")?;
    let status = match rest.get(..4)? {
        "414 " => StatusCode::URI_TOO_LONG,
        "431 " => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => return None,
    };
    let head = text.to_ascii_lowercase();
    let bare = head.ends_with("\r\n\r\n") && head.contains("\r\ncontent-length: 0\r\n");
    (bare && !head.contains("\r\ncontent-type:")).then_some(status)
}

/// The API's answer for a refused head.
fn answer(error: &ApiError) -> Vec<u8> {
    let status = error.status();
    let body = error.body_json();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

impl<IO: AsyncWrite + Unpin> Guarded<IO> {
    /// Writes the replacement; `Ready` with `len` (what hyper asked to write) once out.
    fn poll_replacement(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<usize>> {
        let Some((bytes, done)) = &mut self.replacement else { return Poll::Ready(Ok(len)) };
        while *done < bytes.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *done += n;
        }
        Poll::Ready(Ok(len))
    }

    /// Whether `bytes`, about to be written, are hyper's refusal of a head; if so, the
    /// API's answer replaces them.
    fn replaces(&mut self, bytes: &[u8]) -> bool {
        if self.replacement.is_some() {
            return true;
        }
        let refused = if self.read_since_write >= MIN_HEAD_READ { hypers_refusal(bytes) } else { None };
        let Some(status) = refused else {
            self.read_since_write = 0;
            self.line_open = true;
            return false;
        };
        let error = if status == StatusCode::URI_TOO_LONG || self.line_open {
            ApiError::UriTooLong
        } else {
            ApiError::HeadersTooLarge
        };
        self.replacement = Some((answer(&error), 0));
        true
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Guarded<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.io).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        let has_line_break = read.contains(&b'\n');
        let count = read.len();
        self.read_since_write = self.read_since_write.saturating_add(count);
        self.line_open &= !has_line_break;
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Guarded<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.replaces(buf) {
            return self.poll_replacement(cx, buf.len());
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
        if self.replaces(first) {
            let len = bufs.iter().map(|b| b.len()).sum();
            return self.poll_replacement(cx, len);
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bare_refusals_are_recognised() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(hypers_refusal(bare), Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE));
        let bare = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(hypers_refusal(bare), Some(StatusCode::URI_TOO_LONG));
        for other in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 431 X\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 431 X\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 431 X\r\ncontent-length: 0\r\n",
            b"{\"payload\": \"HTTP/1.1 431 \"}",
        ] {
            assert_eq!(hypers_refusal(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn the_answer_is_the_error_body() {
        let text = String::from_utf8(answer(&ApiError::UriTooLong)).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "uri_too_long");
    }
}
