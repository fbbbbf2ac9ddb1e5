//! A TCP proxy on loopback whose link can be cut and restored, for tests of what a
//! client does when its server goes away: a broker that stops, a connection that is
//! cut mid-run. The server itself is left alone (the machine's RabbitMQ and NATS are
//! shared: a test never stops them), only the proxy's side of the link goes. It can
//! also hold a client's request while a test acts ([`TcpProxy::start_with_hook`]), to
//! hit on purpose a window that opens between a client's steps.
//!
//! Invariants: while cut, every open connection is shut down both ways and every new
//! one is closed as soon as it is accepted, so the client sees exactly what a stopped
//! server looks like (a reset or an immediate end of stream); [`TcpProxy::restore`]
//! lets new connections through again on the same port. Threads end when the proxy is
//! dropped.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// A proxy from a port of its own to `upstream`.
#[derive(Debug)]
pub struct TcpProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    cut: AtomicBool,
    closed: AtomicBool,
    /// Both halves of every connection made, to shut down at a cut.
    open: Mutex<Vec<TcpStream>>,
    /// Until it has run: what a client's bytes must contain to run it, and the hook.
    hook: Mutex<Option<(Vec<u8>, Hook)>>,
}

type Hook = Box<dyn FnOnce() + Send>;

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("cut", &self.cut).field("closed", &self.closed).finish_non_exhaustive()
    }
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> io::Result<TcpProxy> {
        Self::start_shared(upstream, Shared::default())
    }

    /// As [`start`](Self::start), and the first time a client sends bytes that contain
    /// `needle` (within one read), runs `hook` before those bytes go on: the server
    /// sees the request only once the hook has returned.
    pub fn start_with_hook(
        upstream: SocketAddr,
        needle: &[u8],
        hook: impl FnOnce() + Send + 'static,
    ) -> io::Result<TcpProxy> {
        let shared = Shared { hook: Mutex::new(Some((needle.to_vec(), Box::new(hook)))), ..Shared::default() };
        Self::start_shared(upstream, shared)
    }

    fn start_shared(upstream: SocketAddr, shared: Shared) -> io::Result<TcpProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(shared);
        let accepting = Arc::clone(&shared);
        thread::Builder::new().name("tcp-proxy".into()).spawn(move || accept(listener, upstream, accepting))?;
        Ok(TcpProxy { addr, shared })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Shuts down every open connection and refuses new ones until [`restore`](Self::restore).
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
        self.shared.shut_all();
    }

    /// Lets new connections through again.
    pub fn restore(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    /// Connections open now (both directions of a proxied connection count as one).
    pub fn open_connections(&self) -> usize {
        self.shared.open.lock().map_or(0, |open| open.len() / 2)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.shut_all();
        // Wake the accept loop so it sees `closed`.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

impl Shared {
    fn shut_all(&self) {
        if let Ok(mut open) = self.open.lock() {
            for stream in open.drain(..) {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

fn accept(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        if shared.cut.load(Ordering::SeqCst) {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let Ok(server) = TcpStream::connect(upstream) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let _ = (client.set_nodelay(true), server.set_nodelay(true));
        let (Ok(client_copy), Ok(server_copy)) = (client.try_clone(), server.try_clone()) else { continue };
        if let (Ok(a), Ok(b), Ok(mut open)) = (client.try_clone(), server.try_clone(), shared.open.lock()) {
            open.push(a);
            open.push(b);
        }
        pipe(client, server_copy, Some(Arc::clone(&shared)));
        pipe(server, client_copy, None);
    }
}

/// Copies `from` into `to` on a thread of its own until either side ends, running the
/// hook of `shared` (a client's side) before the bytes that contain its needle.
fn pipe(mut from: TcpStream, mut to: TcpStream, shared: Option<Arc<Shared>>) {
    let _ = thread::Builder::new().name("tcp-proxy-pipe".into()).spawn(move || {
        let mut buffer = vec![0_u8; 64 * 1024];
        while let Ok(n) = io::Read::read(&mut from, &mut buffer) {
            if n == 0 {
                break;
            }
            if let Some(shared) = &shared {
                run_hook(shared, &buffer[..n]);
            }
            if io::Write::write_all(&mut to, &buffer[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// Runs the hook, once, if `bytes` contain its needle.
fn run_hook(shared: &Shared, bytes: &[u8]) {
    let hook = {
        let Ok(mut slot) = shared.hook.lock() else { return };
        match slot.as_ref() {
            Some((needle, _)) if bytes.windows(needle.len()).any(|w| w == needle.as_slice()) => slot.take(),
            _ => None,
        }
    };
    if let Some((_, hook)) = hook {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the echo server");
        let addr = listener.local_addr().expect("its address");
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                thread::spawn(move || {
                    let mut reader = stream.try_clone().expect("clone");
                    let mut writer = stream;
                    let _ = io::copy(&mut reader, &mut writer);
                });
            }
        });
        addr
    }

    fn round_trip(addr: SocketAddr) -> io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(b"ping")?;
        let mut answer = [0u8; 4];
        stream.read_exact(&mut answer)?;
        Ok(answer.to_vec())
    }

    #[test]
    fn a_cut_ends_open_connections_and_refuses_new_ones_until_restored() {
        let proxy = TcpProxy::start(echo_server()).expect("start the proxy");
        assert_eq!(round_trip(proxy.addr()).expect("through the proxy"), b"ping");

        let mut open = TcpStream::connect(proxy.addr()).expect("connect");
        open.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        open.write_all(b"ping").expect("write");
        let mut answer = [0u8; 4];
        open.read_exact(&mut answer).expect("echoed");
        proxy.cut();
        let mut rest = Vec::new();
        assert_eq!(open.read_to_end(&mut rest).unwrap_or(0), 0, "the open connection ends at the cut");
        assert!(round_trip(proxy.addr()).is_err(), "a new connection gets nothing through while cut");

        proxy.restore();
        assert_eq!(round_trip(proxy.addr()).expect("through again"), b"ping");
    }

    #[test]
    fn a_hook_runs_once_before_the_bytes_that_hold_its_needle_go_on() {
        let (ran, seen) = std::sync::mpsc::channel();
        let proxy = TcpProxy::start_with_hook(echo_server(), b"ng", move || ran.send(()).expect("the test waits"))
            .expect("start the proxy");
        assert_eq!(round_trip(proxy.addr()).expect("through the proxy"), b"ping");
        assert_eq!(seen.try_recv(), Ok(()), "ran before the echo came back");
        assert_eq!(round_trip(proxy.addr()).expect("again"), b"ping");
        assert!(seen.try_recv().is_err(), "once");
    }
}
