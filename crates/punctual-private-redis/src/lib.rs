//! A private `redis-server` process (or a Sentinel, `redis-server --sentinel`) on a
//! free loopback port, in its own temporary directory, never the machine's own Redis,
//! and a Redis Cluster of them ([`RedisCluster`], in [`cluster`]): what the tests run
//! the Redis store against (through `punctual-testkit`, which adds panicking helpers,
//! failover helpers and primaries watched by Sentinels) and what `punctual bench
//! --store private-redis` and `punctual bench scale` measure on. Killed (SIGKILL) and
//! reaped on drop.
//!
//! A Sentinel ([`RedisServer::start_sentinel`]) is the one `redis-server` binary in
//! `--sentinel` mode (`redis-sentinel` is that binary under another name, and not always
//! installed), configured by `sentinel.conf` in its own directory. That file is the
//! Sentinel's state as well as its configuration: it rewrites it with what it learns
//! (replicas, other Sentinels, the current primary, epochs), so it lives in the
//! directory the server owns, and a restart reads it back.
//!
//! A crate of its own, depending on nothing but `tempfile`: the production Redis store
//! has no use for it, and the benchmark (linked into the `punctual` binary) needs it
//! without the testkit's proptest, paste and tokio `test-util` coming along.
//!
//! No server outlives the process that started it, even one that is never dropped (a
//! `static` shared by every test of a binary) or whose owner is killed: each runs under
//! a small shell that holds a pipe from the owner and kills the server (SIGKILL, by
//! PID) when the pipe closes, which happens when the handle is dropped or the owning
//! process exits in any way.
//!
//! Failures are `io::Error`s that say which step failed; a missing `redis-server` is
//! [`io::ErrorKind::NotFound`], so each caller can say what to install or use instead.

#![allow(clippy::disallowed_methods, reason = "waiting for a real process takes real time, not a Clock's")]

pub mod cluster;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

pub use cluster::RedisCluster;

/// How long a server may take to answer PING, and a Cluster each step of its forming.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Calls `check` until it answers `Some`, at most until `timeout` has passed: the
/// answer, or `None` when time ran out.
///
/// The one way to wait on a real process (a server, `redis-server`): such a process
/// cannot signal its owner, so this looks again every 10 ms. (`punctual-testkit`
/// hands it to the tests; tests of the engine itself wait on signals or paused time.)
pub fn poll_until<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How a server keeps data on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persistence {
    /// Nothing on disk (`--save "" --appendonly no`).
    None,
    /// AOF, fsynced once a second.
    AofEverySec,
    /// AOF, fsynced before each write is answered.
    AofAlways,
}

/// The name of a Sentinel's configuration file in its directory.
const SENTINEL_CONF: &str = "sentinel.conf";

/// What [`RedisServer::launch`] starts, fixed for the life of a [`RedisServer`] so a
/// restart starts the same kind of process.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A data server, keeping data as its persistence says.
    Data(Persistence),
    /// A Sentinel configured by [`SENTINEL_CONF`] in its directory. It takes neither
    /// `--save` nor `--appendonly`: it keeps no data set, only that file.
    Sentinel,
}

/// One `redis-server` on a loopback port: a data server or a Sentinel.
#[derive(Debug)]
pub struct RedisServer {
    /// The guarding shell and the pipe whose closing kills the server.
    child: Option<(Child, ChildStdin)>,
    /// The `redis-server` process itself (not the guarding shell), while it runs.
    pid: Option<u32>,
    port: u16,
    dir: tempfile::TempDir,
    kind: Kind,
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts a server on a free port with the given persistence and extra
    /// `redis-server` arguments, and waits until it answers PING.
    pub fn start(persistence: Persistence, extra: &[&str]) -> io::Result<RedisServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        RedisServer::start_on(port, persistence, extra)
    }

    /// As [`RedisServer::start`], on a port the caller chose (a Cluster node needs its
    /// bus port, `port + 10000`, free too).
    pub fn start_on(port: u16, persistence: Persistence, extra: &[&str]) -> io::Result<RedisServer> {
        let mut server = RedisServer::unlaunched(port, Kind::Data(persistence))?;
        server.extra = extra.iter().map(|s| s.to_string()).collect();
        server.launch()?;
        Ok(server)
    }

    /// Starts a Redis Sentinel on a free port, configured by `config` (lines such as
    /// `sentinel monitor <name> <ip> <port> <quorum>`), and waits until it answers PING.
    ///
    /// `config` is written to `sentinel.conf` in the Sentinel's own directory, which the
    /// Sentinel then rewrites with what it learns; [`RedisServer::restart`] starts it
    /// again from that rewritten file, not from `config`. Port, bind address, directory
    /// and log file are given on the command line, so `config` need not name them.
    pub fn start_sentinel(config: &str) -> io::Result<RedisServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut server = RedisServer::unlaunched(port, Kind::Sentinel)?;
        let path = server.dir.path().join(SENTINEL_CONF);
        let mut text = config.to_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        std::fs::write(&path, text)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
        server.launch()?;
        Ok(server)
    }

    /// A handle with its own new temporary directory and no process yet.
    fn unlaunched(port: u16, kind: Kind) -> io::Result<RedisServer> {
        let dir = tempfile::Builder::new().prefix("punctual-redis-").tempdir()?;
        Ok(RedisServer { child: None, pid: None, port, dir, kind, extra: Vec::new() })
    }

    fn launch(&mut self) -> io::Result<()> {
        // `sh -c SCRIPT sh ARGS…`: the server gets ARGS; the shell waits on stdin.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("command -v redis-server >/dev/null || exit 127; redis-server \"$@\" & pid=$!; read _; kill -9 $pid; wait $pid")
            .arg("sh");
        if let Kind::Sentinel = self.kind {
            // The configuration file must come first, before any `--option`.
            cmd.arg(self.dir.path().join(SENTINEL_CONF)).arg("--sentinel");
        }
        cmd.arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(self.dir.path().join("redis.log"));
        match self.kind {
            Kind::Data(persistence) => {
                cmd.args(["--save", ""]);
                match persistence {
                    Persistence::None => cmd.args(["--appendonly", "no"]),
                    Persistence::AofEverySec => cmd.args(["--appendonly", "yes", "--appendfsync", "everysec"]),
                    Persistence::AofAlways => cmd.args(["--appendonly", "yes", "--appendfsync", "always"]),
                };
            }
            Kind::Sentinel => {}
        }
        cmd.args(&self.extra).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("cannot run sh: {e}")))?;
        let stdin = child.stdin.take().ok_or_else(|| io::Error::other("sh has no stdin pipe"))?;
        self.child = Some((child, stdin));
        let result = self.wait_for_ping().and_then(|()| self.read_pid());
        if result.is_err() {
            self.kill();
        }
        result
    }

    /// Asks the server its own PID (`INFO server`): the child is the guarding shell.
    fn read_pid(&mut self) -> io::Result<()> {
        let info = self.command(&["INFO", "server"])?;
        let pid = info
            .lines()
            .find_map(|line| line.strip_prefix("process_id:"))
            .and_then(|pid| pid.trim().parse().ok())
            .ok_or_else(|| io::Error::other(format!("INFO server names no process_id: {info}")))?;
        self.pid = Some(pid);
        Ok(())
    }

    fn wait_for_ping(&mut self) -> io::Result<()> {
        let port = self.port;
        // `Some` ends the wait: the server answered, or its process exited.
        let answered = poll_until(START_TIMEOUT, || {
            if let Some((child, _)) = self.child.as_mut() {
                match child.try_wait() {
                    Ok(Some(status)) if status.code() == Some(127) => {
                        return Some(Err(io::Error::new(io::ErrorKind::NotFound, "redis-server not found on PATH")));
                    }
                    Ok(Some(status)) => {
                        return Some(Err(io::Error::other(format!(
                            "redis-server on port {port} exited at start ({status})"
                        ))));
                    }
                    Ok(None) => {}
                    Err(e) => return Some(Err(e)),
                }
            }
            command(port, &["PING"]).is_ok_and(|r| r == "PONG").then_some(Ok(()))
        });
        match answered {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => Err(e),
            Some(Err(e)) => Err(io::Error::new(e.kind(), format!("{e}; its log:\n{}", self.log()))),
            None => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "redis-server on port {port} did not answer PING within {START_TIMEOUT:?}; its log:\n{}",
                    self.log()
                ),
            )),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The PID of the `redis-server` process while it runs, to signal it (`SIGSTOP`
    /// freezes it: connections stay open but nothing is answered).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Its data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// SIGKILL, as a crash: what was not yet on disk is gone.
    pub fn kill(&mut self) {
        self.pid = None;
        if let Some((mut child, stdin)) = self.child.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory: a data server reloads its AOF, a
    /// Sentinel rereads its `sentinel.conf` with what it had learnt.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        self.launch()
    }

    /// Runs one command on it over RESP and answers the reply as text (see
    /// [`command`]).
    pub fn command(&self, args: &[&str]) -> io::Result<String> {
        command(self.port, args)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends one command in RESP to the Redis on `127.0.0.1:port` and reads one reply,
/// rendered as text: simple strings and bulk strings as they are, integers in decimal,
/// arrays one element per line; an error reply is an `Err` with its text.
pub fn command(port: u16, args: &[&str]) -> io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes())?;
    let mut reader = BufReader::new(stream);
    read_reply(&mut reader)
}

fn read_reply(reader: &mut BufReader<TcpStream>) -> io::Result<String> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let line = line.trim_end_matches("\r\n");
    let (kind, rest) = line.split_at(line.len().min(1));
    match kind {
        "+" | ":" => Ok(rest.to_owned()),
        "-" => Err(io::Error::other(rest.to_owned())),
        "$" => {
            let len: i64 = rest.parse().map_err(io::Error::other)?;
            if len < 0 {
                return Ok(String::new());
            }
            let mut body = vec![0; len as usize + 2];
            reader.read_exact(&mut body)?;
            body.truncate(len as usize);
            Ok(String::from_utf8_lossy(&body).into_owned())
        }
        "*" => {
            let n: i64 = rest.parse().map_err(io::Error::other)?;
            let mut items = Vec::new();
            for _ in 0..n.max(0) {
                items.push(read_reply(reader)?);
            }
            Ok(items.join("\n"))
        }
        other => Err(io::Error::other(format!("unexpected reply type '{other}'"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_graph_has_no_circles() {
        punctual_testkit::module_graph::assert_no_circles(env!("CARGO_MANIFEST_DIR"));
    }

    /// A Sentinel is launched from its own `sentinel.conf`, answers PING, names its PID,
    /// and after a restart (the same kind of process, not a data server) still monitors
    /// what the rewritten file says.
    #[test]
    fn a_sentinel_starts_and_restarts_from_its_own_configuration() {
        let primary = RedisServer::start(Persistence::None, &[]).expect("start a data server");
        let config = format!("sentinel monitor watched 127.0.0.1 {} 1", primary.port());
        let mut sentinel = RedisServer::start_sentinel(&config).expect("start a Sentinel");
        let first_pid = sentinel.pid().expect("a running Sentinel has a PID");
        let mode =
            |s: &RedisServer| s.command(&["INFO", "server"]).expect("INFO server").contains("redis_mode:sentinel");
        assert!(mode(&sentinel), "it runs in Sentinel mode");
        let rewritten = std::fs::read_to_string(sentinel.dir().join(SENTINEL_CONF)).expect("read sentinel.conf");
        assert!(rewritten.contains("sentinel myid"), "the Sentinel rewrote its file: {rewritten}");

        sentinel.restart().expect("restart the Sentinel");
        assert_ne!(sentinel.pid(), Some(first_pid), "a new process");
        assert!(mode(&sentinel), "still in Sentinel mode after a restart");
        let address = sentinel.command(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "watched"]).expect("ask the Sentinel");
        assert_eq!(address, format!("127.0.0.1\n{}", primary.port()));
    }
}
