//! The test binary as its own child process, for tests that kill a real process.
//!
//! A `harness = false` test runs itself again ([`ChildProcess::spawn`]): the child
//! finds its role in an environment variable the test names ([`run_unless_parent`], at
//! the top of `main`) and its data directory as its one argument ([`dir_argument`]),
//! does its work and prints a line for each step it has made durable. The parent reads
//! those lines ([`ChildProcess::recv_line`]), sends SIGKILL whenever it likes
//! ([`ChildProcess::kill`]) or waits for the child to finish
//! ([`ChildProcess::wait_exit`]), and then checks the data directory.
//!
//! The contract:
//!
//! - **No child outlives the test.** A [`ChildProcess`] is killed and reaped on drop,
//!   whatever path the parent takes out (an error, a panic). If the parent itself dies
//!   no drop runs, so the parent holds the child's stdin open and the child calls
//!   [`exit_when_stdin_closes`] first thing: when the pipe closes, it exits.
//! - **A line is acknowledged once it is complete.** Only lines ending in a newline are
//!   delivered, without trailing whitespace. A line cut short by the kill was never
//!   acknowledged and is dropped; complete lines still in the pipe when the child died
//!   were, and [`ChildProcess::kill`] returns them.
//! - **End of output is a signal.** Once the child's stdout closes and every line has
//!   been received, [`ChildProcess::recv_line`] answers `Disconnected`: the child
//!   exited or was killed.
//!
//! Errors are `std::io::Error`s that say which step failed, so callers use `?` or add
//! their own context.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How long a dead child's stdout may take to close. It closes as soon as the process
/// is gone (nothing else holds the pipe), so this only bounds a broken test.
const EOF_TIMEOUT: Duration = Duration::from_secs(10);

/// Exit code of a child whose own work failed (see [`run_unless_parent`]).
const FAILED_EXIT_CODE: u8 = 2;
/// Exit code of a child whose parent went away (see [`exit_when_stdin_closes`]).
const ORPHAN_EXIT_CODE: i32 = 3;

/// A child process running this test binary. Killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    /// Held open: the child exits when it sees EOF here (the parent died).
    _stdin: ChildStdin,
    /// Complete stdout lines, from a reader thread; disconnected at EOF.
    lines: mpsc::Receiver<String>,
}

impl ChildProcess {
    /// Runs the current test binary again with `env_var` set to `role` and `dir` as its
    /// one argument; its stdin and stdout are piped to us, its stderr is ours.
    pub fn spawn(env_var: &str, role: &str, dir: &Path) -> io::Result<ChildProcess> {
        let exe = std::env::current_exe().map_err(failed("finding the test binary"))?;
        let mut child = Command::new(exe)
            .arg(dir)
            .env(env_var, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(failed(&format!("spawning the {role} child")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            unreachable!("both pipes were requested above");
        };
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    // A line cut short by the kill was never acknowledged: drop it.
                    Ok(0) | Err(_) => return,
                    Ok(_) if !line.ends_with('\n') => return,
                    Ok(_) => {
                        if sender.send(line.trim_end().to_owned()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Ok(ChildProcess { child, _stdin: stdin, lines })
    }

    /// The child's next complete line, waiting up to `timeout`. `Disconnected` once its
    /// stdout has closed and every line has been received.
    pub fn recv_line(&self, timeout: Duration) -> Result<String, RecvTimeoutError> {
        self.lines.recv_timeout(timeout)
    }

    /// The child's exit status if it has exited, without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Where the child is, for an error message: "it exited with …", "it is still
    /// running".
    pub fn status(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => format!("it exited with {status}"),
            Ok(None) => "it is still running".to_owned(),
            Err(e) => format!("its status is unknown ({e})"),
        }
    }

    /// Sends SIGKILL, reaps the child, and returns the complete lines it wrote that
    /// were still in the pipe: they were acknowledged before it died.
    pub fn kill(&mut self) -> io::Result<Vec<String>> {
        self.child.kill().map_err(failed("sending SIGKILL"))?;
        self.child.wait().map_err(failed("reaping the killed child"))?;
        let mut rest = Vec::new();
        loop {
            match self.lines.recv_timeout(EOF_TIMEOUT) {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => return Ok(rest),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("the killed child's stdout did not close within {EOF_TIMEOUT:?}"),
                    ));
                }
            }
        }
    }

    /// Waits up to `timeout` for the child to exit by itself, printing nothing more;
    /// an error if it prints another line, does not exit in time, or exits with a
    /// failure.
    pub fn wait_exit(&mut self, timeout: Duration) -> io::Result<()> {
        match self.lines.recv_timeout(timeout) {
            Err(RecvTimeoutError::Disconnected) => {}
            Ok(line) => return Err(io::Error::other(format!("unexpected line from the child: '{line}'"))),
            Err(RecvTimeoutError::Timeout) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the child did not exit within {timeout:?}"),
                ));
            }
        }
        let status = self.child.wait().map_err(failed("reaping the child"))?;
        if !status.success() {
            return Err(io::Error::other(format!("the child exited with {status}")));
        }
        Ok(())
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The top of `main` in a test binary that is its own child: runs this process's part
/// unless it is the parent, and returns its exit code.
///
/// - Spawned by [`ChildProcess::spawn`] (`env_var` is set): runs `child_main(role)`;
///   success if it returns `Ok`, else exit code 2 after printing the error (`{:#}`)
///   on stderr, naming `test` and the role.
/// - Asked to `--list` its tests (as `cargo test` does): a `harness = false` binary
///   has none to list, success at once.
/// - Otherwise `None`: this is the parent.
pub fn run_unless_parent<E: fmt::Display>(
    test: &str,
    env_var: &str,
    child_main: impl FnOnce(&str) -> Result<(), E>,
) -> Option<ExitCode> {
    if std::env::args().any(|arg| arg == "--list") {
        return Some(ExitCode::SUCCESS);
    }
    let role = std::env::var(env_var).ok()?;
    Some(match child_main(&role) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{test} child '{role}' failed: {e:#}");
            ExitCode::from(FAILED_EXIT_CODE)
        }
    })
}

/// Child side: exits the process (code 3) as soon as stdin closes, that is when the
/// parent that holds it has died. Call it first thing in the child.
pub fn exit_when_stdin_closes() {
    std::thread::spawn(|| {
        let mut buf = [0u8; 64];
        loop {
            match io::stdin().read(&mut buf) {
                Ok(0) | Err(_) => std::process::exit(ORPHAN_EXIT_CODE),
                Ok(_) => {}
            }
        }
    });
}

/// Child side: the data directory [`ChildProcess::spawn`] passed as the argument.
pub fn dir_argument() -> io::Result<PathBuf> {
    std::env::args_os().nth(1).map(PathBuf::from).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the child needs the data directory as its argument")
    })
}

/// Wraps an error with the step that failed, keeping its kind.
fn failed(step: &str) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{step}: {e}"))
}
