//! `punctual serve` refuses a configuration it cannot honour before it binds anything:
//! errors name the file and line (broken push actions included), the Redis store says
//! it is not implemented yet, and `--help` documents the flags with examples.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use clap::{CommandFactory, Parser};
use punctual_server::{ServeArgs, serve};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: ServeArgs,
}

fn args(list: &[&str]) -> ServeArgs {
    Cli::try_parse_from(std::iter::once("serve").chain(list.iter().copied())).unwrap().args
}

async fn refusal(config: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, config).unwrap();
    let data = dir.path().join("data");
    let mut list = vec!["--config", path.to_str().unwrap(), "--listen", "127.0.0.1:0"];
    if !extra.contains(&"--store") {
        list.extend(["--data", data.to_str().unwrap()]);
    }
    list.extend(extra);
    let error = serve(args(&list)).await.unwrap_err();
    format!("{error:#}")
}

#[tokio::test]
async fn config_errors_name_the_file_and_line() {
    let message = refusal("listen = \"127.0.0.1:7575\"\n\n[queues.q]\nmax_attempts = 3\nretry = 1\n", &[]).await;
    assert!(message.contains("punctual.toml, line 5") && message.contains("retry"), "{message}");
    let message = refusal("tokens = [\"a\",\n\"\"]\n", &[]).await;
    assert!(message.contains("line 2") && message.contains("empty"), "{message}");
    let message = refusal("[queues.q]\nbackoff = { initial = \"1h\", factor = 2.0, max = \"1s\" }\n", &[]).await;
    assert!(message.contains("line 2") && message.contains("backoff.max"), "{message}");
}

/// `dead_retention` is checked like every duration, and a bare number (milliseconds)
/// that would delete dead tasks at once is refused, on its line.
#[tokio::test]
async fn a_dead_retention_under_a_minute_or_not_a_duration_is_refused_with_its_line() {
    let message = refusal("[queues.q]\nmax_attempts = 3\ndead_retention = 30\n", &[]).await;
    assert!(message.contains("punctual.toml, line 3") && message.contains("dead_retention is 30ms"), "{message}");
    assert!(message.contains("a bare number is milliseconds"), "{message}");
    let message = refusal("[queues.q]\n\ndead_retention = \"30 days\"\n", &[]).await;
    assert!(message.contains("line 3") && message.contains("'days'"), "{message}");
    let message = refusal("[queues.q]\ndead_retention = \"59s\"\n", &[]).await;
    assert!(message.contains("line 2") && message.contains("under the 1m"), "{message}");
}

#[tokio::test]
async fn broken_push_actions_are_refused_with_their_line() {
    let action = "[queues.\"order.cancel\"]\nmax_attempts = 10\n\n[queues.\"order.cancel\".action]\nkind = \"webhook\"\n\
                  url = \"http://127.0.0.1:8080/hooks\"\nsecret_env = \"PUNCTUAL_TEST_UNSET_HOOK_SECRET\"\n";
    let message = refusal(action, &[]).await;
    assert!(message.contains("line 7") && message.contains("PUNCTUAL_TEST_UNSET_HOOK_SECRET is not set"), "{message}");
    let message = refusal(&action.replace("secret_env", "text"), &[]).await;
    assert!(message.contains("line 7") && message.contains("text does not apply to a webhook"), "{message}");
}

#[tokio::test]
async fn a_redis_store_that_does_not_answer_is_refused_at_start_up_with_what_to_check() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}");
    let message = refusal("", &["--store", &url]).await;
    assert!(message.contains(&url) && message.contains("is Redis running there?"), "{message}");
    let message = refusal("store = \"redis-cluster://127.0.0.1:7000,127.0.0.1:7001\"\n", &["--store", "x://y"]).await;
    assert!(message.contains("not a store URL"), "{message}");
    let message = refusal("store = \"redis://127.0.0.1:1\"\n[redis]\nwait_replicas = 99\n", &[]).await;
    assert!(message.contains("line 3") && message.contains("wait_replicas"), "{message}");
    let message = refusal("store = \"redis://127.0.0.1:1\"\n[redis]\n\nshard_order_slack = \"2h\"\n", &[]).await;
    assert!(message.contains("line 4") && message.contains("shard_order_slack must be at most 1h"), "{message}");
    let message = refusal("[queues.q]\nshards = 0\n", &[]).await;
    assert!(message.contains("line 2") && message.contains("shards"), "{message}");
}

#[test]
fn help_documents_every_flag_with_examples() {
    let help = Cli::command().render_long_help().to_string();
    for needle in [
        "--config",
        "--listen",
        "--data",
        "--store",
        "--token",
        "PUNCTUAL_TOKENS",
        "PUNCTUAL_STORE",
        "--log-format",
        "--grace-period",
        "--request-timeout",
        "--max-payload-bytes",
        "--max-batch",
        "--max-body-bytes",
        "Examples:",
        "[queues.\"order.cancel\"]",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
    let parsed = args(&["--token", "a", "--token", "b,c"]);
    assert!(format!("{parsed:?}").contains("[\"a\", \"b\", \"c\"]"), "{parsed:?}");
}
