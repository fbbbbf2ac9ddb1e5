//! The real `punctual` binary as a server on a free port, for end-to-end tests.
//!
//! [`ServerProcess::builder`] takes the path of the binary (an integration test of the
//! package that builds it passes `env!("CARGO_BIN_EXE_punctual")`), any extra flags and
//! environment variables, and [`ServerBuilder::start`] runs
//! `punctual serve --listen 127.0.0.1:<free port> --data <temp dir>/data [extra args]`
//! (`0.0.0.0:<free port>` with [`ServerBuilder::every_interface`]).
//!
//! The contract:
//!
//! - **Started means healthy.** `start` returns once `GET /healthz` answers `200` and the
//!   listening socket belongs to the process it started (checked in `/proc`), or fails within [`STARTUP_TIMEOUT`] with an error that quotes the
//!   server's output (stdout and stderr), so a failed start-up explains itself.
//! - **A free port, retried.** The port is found by binding port 0 and releasing it;
//!   another process may take it in between, so a start-up that fails because the address
//!   is in use is retried on a new port (a few times).
//! - **Isolated.** Each server has its own temporary directory, removed on drop: the data
//!   directory `data/` inside it (created by the server, as API.md promises) and the
//!   server's working directory. `PUNCTUAL_*` variables of the test's environment are not
//!   passed on; only those given to the builder are.
//! - **No server outlives its test.** The process is killed (SIGKILL) and reaped on drop,
//!   whatever path the test takes out (a failed assertion unwinds through the drop).
//!   Only a test process that is itself killed runs no drop and leaves its server
//!   running.
//! - **Stopping and starting again.** [`ServerProcess::kill`] sends SIGKILL (a crash),
//!   [`ServerProcess::terminate`] sends SIGTERM ([`ServerProcess::interrupt`] SIGINT) and
//!   returns the exit status, and
//!   [`ServerProcess::restart`] starts the same binary with the same flags on the same
//!   data directory, on the same port when it is still free ([`ServerProcess::url`] tells
//!   which).
//!
//! Errors are `std::io::Error`s whose message says which step failed; tests print them
//! with `Display` (`unwrap_or_else(|e| panic!("{e}"))`) to keep the quoted output
//! readable.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a server may take from spawn to a healthy `/healthz`.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server may take to exit after SIGTERM before it is killed.
pub const TERMINATE_TIMEOUT: Duration = Duration::from_secs(30);

/// Start-up attempts on a fresh port when the port turned out to be taken.
const PORT_ATTEMPTS: usize = 5;

/// The server's output kept for error messages; older output is dropped past this.
const LOG_LIMIT: usize = 1 << 20;

/// What to start: the binary, extra flags and environment. See [`ServerProcess::builder`].
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    exe: PathBuf,
    /// `--store URL` instead of `--data <temp dir>/data`.
    store: Option<String>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    /// Program and arguments the binary runs under; empty for none.
    wrapper: Vec<OsString>,
    /// `--listen 0.0.0.0:<port>` instead of `127.0.0.1:<port>`.
    every_interface: bool,
    /// The address it listens on and is reached at, instead of 127.0.0.1.
    host: Ipv4Addr,
}

impl ServerBuilder {
    /// Adds a flag after `serve --listen … --data …`.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds flags after `serve --listen … --data …`.
    pub fn args<I, A>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Runs on the shared store at `url` (`--store URL`) instead of an embedded store
    /// in the temporary directory.
    pub fn store(mut self, url: impl Into<String>) -> Self {
        self.store = Some(url.into());
        self
    }

    /// A program run in front of the binary, with its arguments (e.g. `faketime`).
    pub fn wrapper<I, A>(mut self, program: impl AsRef<OsStr>, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        let mut wrapper = vec![program.as_ref().to_owned()];
        wrapper.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self.wrapper = wrapper;
        self
    }

    /// Listens on every interface (`--listen 0.0.0.0:<port>`) instead of loopback
    /// only; the test still reaches it at [`ServerProcess::url`].
    pub fn every_interface(mut self) -> Self {
        self.every_interface = true;
        self
    }

    /// Listens on, and is reached at, `host` instead of 127.0.0.1: for a server run in
    /// another network namespace (with a [`ServerBuilder::wrapper`] such as `ip netns
    /// exec NS`), the address of its interface there.
    pub fn host(mut self, host: Ipv4Addr) -> Self {
        self.host = host;
        self
    }

    /// Sets an environment variable of the server process.
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs.push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Starts the server in a new temporary directory and waits until it is healthy.
    pub fn start(self) -> io::Result<ServerProcess> {
        let dir = tempfile::Builder::new()
            .prefix("punctual-e2e-")
            .tempdir()
            .map_err(failed("creating the server's temporary directory"))?;
        let mut server = ServerProcess { config: self, dir, port: 0, running: None, history: String::new() };
        server.start_on(None)?;
        Ok(server)
    }
}

/// A running `punctual serve`. Killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct ServerProcess {
    config: ServerBuilder,
    dir: tempfile::TempDir,
    port: u16,
    running: Option<Running>,
    /// Output of the runs before the current one.
    history: String,
}

/// One run of the server process and the threads that collect its output.
#[derive(Debug)]
struct Running {
    child: Child,
    log: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

impl ServerProcess {
    /// A builder for a server run by the binary at `exe`.
    pub fn builder(exe: impl AsRef<Path>) -> ServerBuilder {
        ServerBuilder {
            exe: exe.as_ref().to_owned(),
            store: None,
            args: Vec::new(),
            envs: Vec::new(),
            wrapper: Vec::new(),
            every_interface: false,
            host: Ipv4Addr::LOCALHOST,
        }
    }

    /// Starts a server with no extra flags; see [`ServerBuilder::start`].
    pub fn start(exe: impl AsRef<Path>) -> io::Result<ServerProcess> {
        ServerProcess::builder(exe).start()
    }

    /// The base URL, `http://127.0.0.1:<port>` (or its [`ServerBuilder::host`]),
    /// without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.config.host, self.port))
    }

    /// The data directory passed as `--data`; it survives [`ServerProcess::restart`].
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The process id of the running server, if it is running.
    pub fn pid(&self) -> Option<u32> {
        self.running.as_ref().map(|r| r.child.id())
    }

    /// Waits until the server's output holds `needle` (its output reaches the test
    /// through a reader thread, so a line written just before an answer may arrive just
    /// after it); the output so far, `Err` with it when `timeout` passes first.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> Result<String, String> {
        crate::poll_until(timeout, || Some(self.logs()).filter(|logs| logs.contains(needle))).ok_or_else(|| self.logs())
    }

    /// Everything the server wrote to stdout and stderr so far, over every run.
    pub fn logs(&self) -> String {
        let mut text = self.history.clone();
        if let Some(running) = &self.running {
            text.push_str(&String::from_utf8_lossy(&lock(&running.log)));
        }
        text
    }

    /// Sends SIGKILL and reaps the process: a crash. A no-op when it is not running.
    pub fn kill(&mut self) -> io::Result<()> {
        let Some(mut running) = self.running.take() else { return Ok(()) };
        let killed = running.child.kill().map_err(failed("sending SIGKILL to the server"));
        let reaped = running.child.wait().map_err(failed("reaping the killed server"));
        self.finish(running);
        killed.and(reaped).map(|_| ())
    }

    /// Sends SIGTERM and waits up to [`TERMINATE_TIMEOUT`] for the process to exit,
    /// returning its exit status. A server still running then is killed and this is an
    /// error.
    pub fn terminate(&mut self) -> io::Result<ExitStatus> {
        self.signal_and_wait(rustix::process::Signal::TERM, "SIGTERM")
    }

    /// Like [`ServerProcess::terminate`] with SIGINT (Ctrl-C).
    pub fn interrupt(&mut self) -> io::Result<ExitStatus> {
        self.signal_and_wait(rustix::process::Signal::INT, "SIGINT")
    }

    fn signal_and_wait(&mut self, signal: rustix::process::Signal, name: &str) -> io::Result<ExitStatus> {
        let Some(mut running) = self.running.take() else {
            return Err(io::Error::other(format!("{name}: the server is not running")));
        };
        let pid = rustix::process::Pid::from_child(&running.child);
        if let Err(e) = rustix::process::kill_process(pid, signal) {
            let _ = running.child.kill();
            let _ = running.child.wait();
            self.finish(running);
            return Err(io::Error::other(format!("sending {name} to the server: {e}")));
        }
        let result = match wait_with_timeout(&mut running.child, TERMINATE_TIMEOUT) {
            Ok(Some(status)) => Ok(status),
            Ok(None) => {
                let _ = running.child.kill();
                let _ = running.child.wait();
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the server did not exit within {TERMINATE_TIMEOUT:?} of {name} and was killed"),
                ))
            }
            Err(e) => Err(e),
        };
        self.finish(running);
        result.map_err(|e| io::Error::new(e.kind(), format!("{e}\n{}", self.quote_logs())))
    }

    /// Starts the server again on the same data directory with the same flags, on the
    /// same port if it is still free (else on a new one: see [`ServerProcess::url`]). A
    /// server still running is killed first.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill()?;
        self.start_on(Some(self.port))
    }

    /// Spawns the server, on `preferred` first, and waits for it to be healthy;
    /// retries on a new port when the port is taken.
    fn start_on(&mut self, preferred: Option<u16>) -> io::Result<()> {
        let mut port = match preferred {
            Some(port) => port,
            None => free_port()?,
        };
        for attempt in 1..=PORT_ATTEMPTS {
            self.port = port;
            match self.spawn_and_wait() {
                Ok(()) => return Ok(()),
                Err(StartError::PortTaken) if attempt < PORT_ATTEMPTS => port = free_port()?,
                Err(StartError::PortTaken) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!("the server found its port taken {PORT_ATTEMPTS} times\n{}", self.quote_logs()),
                    ));
                }
                Err(StartError::Failed(e)) => return Err(e),
            }
        }
        unreachable!("the last attempt returns")
    }

    fn spawn_and_wait(&mut self) -> Result<(), StartError> {
        let mut command = match self.config.wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(&self.config.exe);
                command
            }
            None => Command::new(&self.config.exe),
        };
        let listen = match self.config.every_interface {
            true => SocketAddr::from((Ipv4Addr::UNSPECIFIED, self.port)),
            false => self.addr(),
        };
        command.arg("serve").arg("--listen").arg(listen.to_string());
        match &self.config.store {
            Some(url) => command.arg("--store").arg(url),
            None => command.arg("--data").arg(self.data_dir()),
        };
        command
            .args(&self.config.args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The test's environment configures nothing: no flag, and no traces exported
        // (`OTEL_EXPORTER_OTLP_ENDPOINT` and the like) unless a test says so.
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("PUNCTUAL_") || name_text.starts_with("OTEL_") {
                command.env_remove(name);
            }
        }
        command.envs(self.config.envs.iter().map(|(k, v)| (k, v)));
        let mut child = command.spawn().map_err(|e| {
            StartError::Failed(io::Error::new(e.kind(), format!("spawning {} serve: {e}", self.config.exe.display())))
        })?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(collect(out, Arc::clone(&log)));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(collect(err, Arc::clone(&log)));
        }
        self.running = Some(Running { child, log, readers });
        self.wait_healthy()
    }

    /// Probes `/healthz` until it answers 200 from our process, the process exits, or
    /// [`STARTUP_TIMEOUT`] passes.
    fn wait_healthy(&mut self) -> Result<(), StartError> {
        let (addr, port) = (self.addr(), self.port);
        let running = self.running.as_mut().expect("wait_healthy runs right after a spawn");
        // `Some(exit status)` when the process exited first, `None` once it is healthy.
        let outcome = crate::poll_until(STARTUP_TIMEOUT, || match running.child.try_wait() {
            Err(e) => Some(Err(e)),
            Ok(Some(status)) => Some(Ok(Some(status))),
            // Another process may have taken the port between our release of it and the
            // server's bind, and answer the probe: the listener must be our child's.
            Ok(None) => {
                let healthy = probe_healthz(addr) && listens_on(running.child.id(), port).unwrap_or(true);
                healthy.then_some(Ok(None))
            }
        });
        match outcome {
            Some(Ok(None)) => Ok(()),
            Some(Ok(Some(status))) => {
                let running = self.running.take().expect("checked above");
                let run_log = self.finish(running);
                if looks_like_port_taken(&run_log) {
                    return Err(StartError::PortTaken);
                }
                Err(StartError::Failed(io::Error::other(format!(
                    "the server exited during start-up ({status}) on {addr}\n{}",
                    self.quote_logs()
                ))))
            }
            Some(Err(e)) => Err(StartError::Failed(failed("polling the server")(e))),
            None => {
                let _ = self.kill();
                Err(StartError::Failed(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "GET /healthz on {addr} did not answer 200 from the started process within {STARTUP_TIMEOUT:?}\n{}",
                        self.quote_logs()
                    ),
                )))
            }
        }
    }

    /// Reaps the output of a run that has exited into the history; returns that output.
    fn finish(&mut self, running: Running) -> String {
        for reader in running.readers {
            let _ = reader.join();
        }
        let text = String::from_utf8_lossy(&lock(&running.log)).into_owned();
        self.history.push_str(&text);
        text
    }

    fn quote_logs(&self) -> String {
        let logs = self.logs();
        if logs.trim().is_empty() {
            "(the server wrote nothing to stdout or stderr)".to_owned()
        } else {
            format!("--- server output ---\n{}\n--- end of server output ---", logs.trim_end())
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

#[derive(Debug)]
enum StartError {
    PortTaken,
    Failed(io::Error),
}

/// A port that was free a moment ago: bound to port 0, then released.
fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(failed("binding a free port"))?;
    Ok(listener.local_addr().map_err(failed("reading the free port"))?.port())
}

/// One `GET /healthz` over a fresh connection: true when the status is 200.
fn probe_healthz(addr: SocketAddr) -> bool {
    let attempt = || -> io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.set_write_timeout(Some(Duration::from_secs(2)))?;
        write!(stream, "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head)?;
        Ok(head.starts_with(b"HTTP/1.") && &head[8..12] == b" 200")
    };
    attempt().unwrap_or(false)
}

/// Whether process `pid` holds the socket listening on TCP `port` (IPv4), from
/// `/proc`; `None` where `/proc` cannot tell. Reads the socket table of the process's
/// own network namespace, which is not this one's when it runs under `ip netns exec`.
fn listens_on(pid: u32, port: u16) -> Option<bool> {
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).ok()?;
    let port_suffix = format!(":{port:04X}");
    // Columns: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode.
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            let listening = columns.get(3) == Some(&"0A") && columns.get(1)?.ends_with(&port_suffix);
            listening.then(|| columns.get(9).map(|inode| format!("socket:[{inode}]")))?
        })
        .collect();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(fds.filter_map(Result::ok).any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
    }))
}

/// Whether a failed start-up's output says the listen address was taken.
fn looks_like_port_taken(log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    log.contains("address already in use") || log.contains("addrinuse") || log.contains("os error 98")
}

/// A thread copying `from` into `log`, keeping at most [`LOG_LIMIT`] bytes.
fn collect(mut from: impl Read + Send + 'static, log: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut log = lock(&log);
                    log.extend_from_slice(&buf[..n]);
                    if log.len() > LOG_LIMIT {
                        let excess = log.len() - LOG_LIMIT / 2;
                        log.drain(..excess);
                    }
                }
            }
        }
    })
}

/// Waits for `child` to exit for up to `timeout`: `Ok(None)` if it is still running.
/// `Child::wait` cannot time out, so this polls, like the start-up probe.
fn wait_with_timeout(child: &mut Child, timeout: Duration) -> io::Result<Option<ExitStatus>> {
    crate::poll_until(timeout, || child.try_wait().transpose())
        .transpose()
        .map_err(failed("waiting for the server to exit"))
}

fn lock(log: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    // A reader thread cannot panic while holding the lock; recover the data anyway.
    log.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Wraps an error with the step that failed, keeping its kind.
fn failed(step: &str) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{step}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child process, killed and reaped on drop.
    struct Reaped(Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn listens_on_names_the_process_that_holds_the_listener() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        let port = listener.local_addr().expect("address").port();
        assert_eq!(listens_on(std::process::id(), port), Some(true));
        let other = Reaped(Command::new("sleep").arg("30").spawn().expect("spawn sleep"));
        assert_eq!(listens_on(other.0.id(), port), Some(false), "another process does not hold it");
        drop(listener);
        assert_eq!(listens_on(std::process::id(), port), Some(false), "a closed listener is gone");
    }
}
