//! Running the `punctual` binary as a client: its exit status and both output streams,
//! with no `PUNCTUAL_*` variable or `TZ` of the test's environment leaking in, and a
//! time limit so a hung command fails the test instead of stalling it.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::{BIN, Resp};

/// How long one CLI run may take before the test calls it hung.
const CLI_TIMEOUT: Duration = Duration::from_secs(30);

/// What a run of the CLI printed, and how it exited.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Both streams, for content checks that do not care which one a message is on.
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32, what: &str) -> &Out {
        assert_eq!(self.code, code, "{what}: exit status\nstdout: {}\nstderr: {}", self.stdout, self.stderr);
        self
    }

    /// Parses stdout as one JSON document.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("--json output is not one JSON document ({e}):\n{}", self.stdout))
    }

    /// Asserts that the output holds each needle, ignoring case.
    #[track_caller]
    pub fn expect_contains(&self, needles: &[&str], what: &str) {
        let all = self.all().to_lowercase();
        for needle in needles {
            assert!(
                all.contains(&needle.to_lowercase()),
                "{what}: output lacks {needle:?}\nstdout: {}\nstderr: {}",
                self.stdout,
                self.stderr
            );
        }
    }
}

/// Runs `punctual <args>` with no `PUNCTUAL_*` variables but `envs` and nothing on
/// standard input (not a terminal); kills it after [`CLI_TIMEOUT`].
pub fn run_env(args: &[&str], envs: &[(&str, &str)]) -> Out {
    run_with(args, envs, None)
}

/// Runs `punctual <args> --server <url>`.
pub fn run(url: &str, args: &[&str]) -> Out {
    let mut all = args.to_vec();
    all.extend(["--server", url]);
    run_env(&all, &[])
}

/// As [`run`], writing `input` to the command's standard input.
pub fn run_stdin(url: &str, args: &[&str], input: &str) -> Out {
    let mut all = args.to_vec();
    all.extend(["--server", url]);
    run_with(&all, &[], Some(input))
}

fn run_with(args: &[&str], envs: &[(&str, &str)], input: Option<&str>) -> Out {
    let mut command = Command::new(BIN);
    let stdin = if input.is_some() { Stdio::piped() } else { Stdio::null() };
    command.args(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("PUNCTUAL_") {
            command.env_remove(name);
        }
    }
    // Times show in `TZ` when it is set: only where a test asks.
    command.env_remove("TZ");
    command.envs(envs.iter().copied());
    let mut child = command.spawn().expect("spawn punctual");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(input.as_bytes()).expect("write punctual's standard input");
        // Dropped here: the command reads to the end.
    }
    let out_reader = reader(child.stdout.take().expect("piped stdout"));
    let err_reader = reader(child.stderr.take().expect("piped stderr"));
    let Some(status) = punctual_testkit::poll_until(CLI_TIMEOUT, || child.try_wait().expect("poll punctual")) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("punctual {args:?} did not exit within {CLI_TIMEOUT:?}");
    };
    let stdout = out_reader.join().expect("stdout reader");
    let stderr = err_reader.join().expect("stderr reader");
    let code = status.code().unwrap_or_else(|| panic!("punctual {args:?} was killed by a signal: {status}"));
    Out { code, stdout, stderr }
}

/// Reads a stream to its end on a thread of its own, so neither pipe fills and blocks.
fn reader(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    })
}

/// The message of the server's error for a request, to find in the CLI's output.
pub fn server_message(resp: &Resp) -> String {
    resp.json["error"]["message"].as_str().unwrap_or_else(|| panic!("an error body: {}", resp.text)).to_owned()
}
