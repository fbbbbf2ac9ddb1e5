//! `--serve`: a punctual server for the run, on a free 127.0.0.1 port, a fresh data
//! directory and the store the bench was given, stopped when the run ends.
//!
//! The server is this same binary (`std::env::current_exe()`) run as `punctual-bench
//! serve`, a hidden subcommand that calls exactly `punctual_server::serve(args)`, the
//! library call `punctual serve` makes (see `main.rs`): the server measured is the code
//! users run, with the same flags, and the bench needs no `punctual` binary beside it.
//! Every server the bench starts (`pending`'s and `scale`'s too) is started this way.
//!
//! No server outlives the run, however the bench ends (an error, Ctrl-C, `kill -9`): the
//! server runs under a small shell that holds a pipe from this process and stops the
//! server when the pipe closes, which happens when [`Served`] is dropped (at the end, on
//! an error, or on Ctrl-C, which [`crate::run`] turns into dropping the run) or this
//! process exits in any other way (the private redis-server's guard, in
//! `punctual-private-redis`, works the same). The shell ignores SIGINT, so a Ctrl-C that
//! reaches the whole process group cannot end it before it has stopped the server.
//! Stopping is SIGTERM (the server's graceful shutdown), then SIGKILL if it has not
//! exited within [`STOP_TIMEOUT`].
//!
//! On a Redis store the server gets a config file naming the store and the run's key
//! prefix (`[redis] prefix`), so it shares a Redis with nothing else's keys; its data
//! directory then holds only that file and the server's log. A workload may add to
//! that file (`brokers` writes its queues' push actions and `[egress]` there).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use punctual_client::{Client, ClientError, Url};
use punctual_private_redis::poll_until;

use crate::poll::{self, Look};

/// How long the server may take to answer `/readyz`.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long it may take to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How often to ask whether it is ready.
const RETRY: Duration = Duration::from_millis(10);

/// The store the served server runs on.
#[derive(Debug)]
pub(crate) enum ServeStore<'a> {
    Embedded,
    /// A Redis, with the key prefix of the run.
    Redis {
        url: &'a str,
        prefix: &'a str,
    },
}

/// A running `punctual serve`, stopped on drop.
#[derive(Debug)]
pub(crate) struct Served {
    /// The guarding shell and the pipe whose closing stops the server.
    shell: Option<(Child, ChildStdin)>,
    /// The server's own PID (the shell's child), for SIGKILL when SIGTERM is not enough.
    pid: u32,
    url: Url,
    /// This binary and the arguments of `punctual serve`, to start it again the same way.
    exe: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    /// Removed after the server stopped (fields drop in order: `shell` goes first).
    _temp: Option<tempfile::TempDir>,
}

impl Served {
    /// Starts the server in a fresh directory (`parent/serve`, which must not exist or
    /// be empty, or a temporary one), with `config` (TOML: queues, actions, egress) in
    /// its config file, and waits until `/readyz` answers.
    pub(crate) async fn start(store: ServeStore<'_>, parent: Option<&Path>, config: Option<&str>) -> Result<Served> {
        let mut served = Served::spawn(store, parent, config)?;
        served.wait_ready().await?;
        Ok(served)
    }

    /// [`Served::start`] without the wait: the server may not listen yet (to time its
    /// start from the spawn; [`Served::running`] tells whether it is still trying).
    pub(crate) fn spawn(store: ServeStore<'_>, parent: Option<&Path>, config: Option<&str>) -> Result<Served> {
        let (dir, temp) = match parent {
            Some(parent) => {
                let dir = parent.join("serve");
                if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_some()) {
                    bail!(
                        "{} is not empty: --serve starts on a fresh directory; remove it or pick another --data",
                        dir.display()
                    );
                }
                std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
                (dir, None)
            }
            None => {
                let temp = tempfile::Builder::new().prefix("punctual-bench-serve-").tempdir()?;
                (temp.path().to_owned(), Some(temp))
            }
        };
        let exe = std::env::current_exe().context("cannot find this program's own binary")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = dir.join("serve.log");
        let mut args: Vec<String> = vec!["serve".into(), "--listen".into(), format!("127.0.0.1:{port}")];
        let mut text = String::new();
        match store {
            ServeStore::Embedded => {
                args.extend(["--data".into(), dir.join("store").display().to_string()]);
            }
            ServeStore::Redis { url, prefix } => {
                text = format!("store = {}\n\n[redis]\nprefix = {}\n\n", toml_string(url), toml_string(prefix));
            }
        }
        text.push_str(config.unwrap_or_default());
        if !text.is_empty() {
            let file = dir.join("serve.toml");
            std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
            args.extend(["--config".into(), file.display().to_string()]);
        }

        let (shell, stdin, pid) = spawn_guarded(&exe, &log, &args)?;
        let url = punctual_client::parse_server_url(&format!("http://127.0.0.1:{port}")).map_err(anyhow::Error::msg)?;
        Ok(Served { shell: Some((shell, stdin)), pid, url, exe, args, log, _temp: temp })
    }

    /// The server's base URL.
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// The server's own PID, to read its memory or kill it.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// `kill -9` of the server, as a crash, then the same server started again on the
    /// same port, store and config (the soak's restarts); returns once `/readyz` answers.
    pub(crate) async fn kill_and_restart(&mut self) -> Result<()> {
        let _ = Command::new("kill").arg("-KILL").arg(self.pid.to_string()).status();
        if let Some((mut shell, stdin)) = self.shell.take() {
            // The shell waits on its stdin, then reaps the dead server and exits.
            drop(stdin);
            let _ = shell.wait();
        }
        let (shell, stdin, pid) = spawn_guarded(&self.exe, &self.log, &self.args)?;
        self.shell = Some((shell, stdin));
        self.pid = pid;
        self.wait_ready().await
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let client = Client::new(&self.url, None)?;
        let ready = poll::until("punctual serve to answer /readyz", READY_TIMEOUT, RETRY, async || {
            match client.get(&["readyz"], &[]).await {
                Ok(_) => Ok(Look::Ready(())),
                Err(e @ (ClientError::Unreachable { .. } | ClientError::Api(_))) if self.running() => {
                    Ok(Look::NotYet(e.into()))
                }
                Err(ClientError::Unreachable { .. } | ClientError::Api(_)) => {
                    bail!("punctual serve exited before it was ready")
                }
                Err(e) => bail!("punctual serve did not answer /readyz: {e}"),
            }
        })
        .await;
        ready.map_err(|e| anyhow!("{e:#}{}", self.log_tail()))
    }

    /// Is the server still running? (Its shell exits only after it.)
    pub(crate) fn running(&mut self) -> bool {
        let alive = Path::new(&format!("/proc/{}", self.pid)).exists();
        let shell_alive = self.shell.as_mut().is_some_and(|(shell, _)| matches!(shell.try_wait(), Ok(None)));
        alive && shell_alive
    }

    /// The last lines of its log, to end an error message with.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(20)..];
        format!("; its log ({}):\n{}", self.log.display(), tail.join("\n"))
    }

    /// Stops the server: SIGTERM through the shell, SIGKILL after [`STOP_TIMEOUT`].
    fn stop(&mut self) {
        let Some((mut shell, stdin)) = self.shell.take() else { return };
        drop(stdin);
        let exited = poll_until(STOP_TIMEOUT, || (!matches!(shell.try_wait(), Ok(None))).then_some(()));
        if exited.is_none() {
            let _ = Command::new("kill").arg("-KILL").arg(self.pid.to_string()).status();
        }
        let _ = shell.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `exe ARGS` under the guarding shell (see the module docs), its output appended
/// to `log`; answers the shell, the pipe whose closing stops the server, and the
/// server's PID.
fn spawn_guarded(exe: &Path, log: &Path, args: &[String]) -> Result<(Child, ChildStdin, u32)> {
    // `sh -c SCRIPT sh EXE LOG ARGS…`: the server gets ARGS, its output goes to LOG,
    // the shell prints its PID and waits on stdin, then stops it.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(
            r#"trap '' INT; exe="$1"; log="$2"; shift 2; "$exe" "$@" </dev/null >>"$log" 2>&1 & pid=$!; echo "$pid"; read _; kill -TERM "$pid" 2>/dev/null; wait "$pid""#,
        )
        .arg("sh")
        .arg(exe)
        .arg(log)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // The bench's own environment must not configure the server (a config file,
    // tokens, another store).
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PUNCTUAL_") {
            command.env_remove(name);
        }
    }
    let mut shell = command.spawn().context("cannot run sh to start punctual serve")?;
    let stdin = shell.stdin.take().context("sh has no stdin pipe")?;
    let stdout = shell.stdout.take().context("sh has no stdout pipe")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).context("cannot read the server's PID")?;
    let pid = line.trim().parse().with_context(|| format!("sh printed '{}' for the server's PID", line.trim()))?;
    Ok((shell, stdin, pid))
}

/// `text` as a TOML basic string.
pub(crate) fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn config_values_are_toml_strings() {
        assert_eq!(super::toml_string(r#"redis://:p"w\d@h:1"#), r#""redis://:p\"w\\d@h:1""#);
    }
}
