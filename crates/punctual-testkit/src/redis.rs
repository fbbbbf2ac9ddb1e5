//! Private `redis-server` processes for tests: one server, or a Redis Cluster of
//! several, each on free loopback ports in its own temporary directory, never the
//! machine's own Redis. Killed (SIGKILL) and reaped on drop.
//!
//! A missing `redis-server` (or `redis-cli`, for a Cluster) fails the test with a
//! message saying what to install; it is never skipped.
//!
//! No server outlives its test process, even one shared by every test of a binary
//! (a `static`, never dropped): each runs under a small shell that holds a pipe from
//! the test process and kills the server (SIGKILL, by PID) when the pipe closes, which
//! happens when the handle is dropped or the test process exits in any way.

#![allow(clippy::disallowed_methods, reason = "waiting for real processes takes real time, not a Clock's")]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to answer PING, or a Cluster to agree it is up.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How a server keeps data on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Persistence {
    /// Nothing on disk (`--save "" --appendonly no`).
    None,
    /// AOF, fsynced once a second.
    AofEverySec,
    /// AOF, fsynced before each write is answered.
    AofAlways,
}

/// One `redis-server` on a free port.
#[derive(Debug)]
pub struct RedisServer {
    /// The guarding shell and the pipe whose closing kills the server.
    child: Option<(Child, ChildStdin)>,
    port: u16,
    dir: tempfile::TempDir,
    persistence: Persistence,
    extra: Vec<String>,
}

impl RedisServer {
    /// A server keeping nothing on disk.
    pub fn start() -> RedisServer {
        RedisServer::start_with(Persistence::None, &[])
    }

    /// A server with the given persistence and extra `redis-server` arguments.
    pub fn start_with(persistence: Persistence, extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().expect("a temp dir for redis-server");
        let mut server = RedisServer {
            child: None,
            port: free_port(false),
            dir,
            persistence,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.launch();
        server
    }

    fn launch(&mut self) {
        // `sh -c SCRIPT sh ARGS…`: the server gets ARGS; the shell waits on stdin.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("command -v redis-server >/dev/null || exit 127; redis-server \"$@\" & pid=$!; read _; kill -9 $pid; wait $pid")
            .arg("sh")
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--save")
            .arg("")
            .arg("--logfile")
            .arg(self.dir.path().join("redis.log"));
        match self.persistence {
            Persistence::None => cmd.args(["--appendonly", "no"]),
            Persistence::AofEverySec => cmd.args(["--appendonly", "yes", "--appendfsync", "everysec"]),
            Persistence::AofAlways => cmd.args(["--appendonly", "yes", "--appendfsync", "always"]),
        };
        cmd.args(&self.extra).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = cmd.spawn().expect("run sh to start redis-server");
        let stdin = child.stdin.take().expect("piped stdin");
        self.child = Some((child, stdin));
        wait_for_ping(self.port, self.dir.path(), || {
            let (child, _) = self.child.as_mut().expect("just started");
            child.try_wait().ok().flatten().is_some_and(|status| status.code() == Some(127))
        });
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// SIGKILL, as a crash: what was not yet on disk is gone.
    pub fn kill(&mut self) {
        if let Some((mut child, stdin)) = self.child.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory (it reloads its AOF).
    pub fn restart(&mut self) {
        self.kill();
        self.launch();
    }

    /// Runs one command on it over RESP and answers the reply as text (tests' own
    /// inspection: `INFO memory`, `DBSIZE`).
    pub fn command(&self, args: &[&str]) -> String {
        command(self.port, args).unwrap_or_else(|e| panic!("redis command {args:?} on port {}: {e}", self.port))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis Cluster of `masters` nodes with no replicas, made with
/// `redis-cli --cluster create`.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start(masters: usize) -> RedisCluster {
        let mut nodes = Vec::with_capacity(masters);
        for _ in 0..masters {
            let dir = tempfile::tempdir().expect("a temp dir for redis-server");
            let mut node = RedisServer {
                child: None,
                port: free_port(true),
                dir,
                persistence: Persistence::None,
                extra: vec![
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-config-file".into(),
                    "nodes.conf".into(),
                    "--cluster-node-timeout".into(),
                    "5000".into(),
                ],
            };
            node.launch();
            nodes.push(node);
        }
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run redis-cli ({e}); install it (Debian: apt-get install redis-tools)"));
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let deadline = Instant::now() + START_TIMEOUT;
        for node in &nodes {
            loop {
                let info = command(node.port, &["CLUSTER", "INFO"]).unwrap_or_default();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(Instant::now() < deadline, "the cluster did not reach state ok: {info}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        RedisCluster { nodes }
    }

    /// `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,…`
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis-cluster://{}", nodes.join(","))
    }

    /// Each node.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }
}

/// A port free on 127.0.0.1 (and, for a Cluster node, its bus port + 10000 too).
fn free_port(with_bus: bool) -> u16 {
    for _ in 0..100 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let port = listener.local_addr().expect("local address").port();
        if !with_bus {
            return port;
        }
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
    panic!("no free port pair for a Redis Cluster node");
}

fn wait_for_ping(port: u16, dir: &Path, mut missing: impl FnMut() -> bool) {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        assert!(
            !missing(),
            "redis-server is not installed; install it (Debian: apt-get install redis-server) to run these tests"
        );
        if command(port, &["PING"]).is_ok_and(|r| r == "PONG") {
            return;
        }
        if Instant::now() >= deadline {
            let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
            panic!("redis-server on port {port} did not answer PING within {START_TIMEOUT:?}; its log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends one command in RESP and reads one reply, rendered as text: simple strings and
/// bulk strings as they are, integers in decimal, arrays one element per line.
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
