//! A `nats` push action through the real binary: `punctual serve --config` with a queue
//! whose action is `kind = "nats"` publishes a task scheduled over HTTP to the
//! machine's NATS JetStream (127.0.0.1:4222) when it is due, and the task ends done;
//! the same action given through the settings API works too, and a URL there with
//! credentials is refused (`action.url`: they belong in the server's environment).
//!
//! Guards against: a broker kind that is parsed but never built or run by the server,
//! the egress allow list not reaching broker actions, the settings API storing a
//! broker password.
//!
//! Each test publishes to a stream of its own (unique name and subjects), deleted
//! afterwards.

use crate::common;

use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use common::{Api, server_builder, start, task_path};
use futures_util::StreamExt;
use serde_json::{Value, json};

const NATS: &str = "127.0.0.1:4222";
const START_NATS: &str = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log";

/// A stream capturing `<prefix>.>`, on a runtime of its own (the tests are blocking);
/// deleted on drop.
struct TestStream {
    runtime: tokio::runtime::Runtime,
    jetstream: jetstream::Context,
    name: String,
}

impl TestStream {
    fn create() -> TestStream {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
        let name = format!("punctual-e2e-{:016x}", RandomState::new().hash_one(std::process::id()));
        let jetstream = runtime.block_on(async {
            let client = match tokio::time::timeout(Duration::from_secs(5), async_nats::connect(NATS)).await {
                Ok(Ok(client)) => client,
                Ok(Err(e)) => panic!("NATS is not reachable at {NATS} ({e}); start it with: {START_NATS}"),
                Err(_) => panic!("NATS does not answer at {NATS}; start it with: {START_NATS}"),
            };
            let jetstream = jetstream::new(client);
            let config =
                stream::Config { name: name.clone(), subjects: vec![format!("{name}.>")], ..Default::default() };
            if let Err(e) = jetstream.create_stream(config).await {
                panic!("cannot create a stream on {NATS} ({e}): is JetStream on (-js)? start it with: {START_NATS}");
            }
            jetstream
        });
        TestStream { runtime, jetstream, name }
    }

    /// The stream's first `n` messages (waiting for them at most 20 s).
    fn messages(&self, n: usize) -> Vec<jetstream::Message> {
        self.runtime.block_on(async {
            let stream = self.jetstream.get_stream(&self.name).await.expect("the test stream");
            let config = consumer::pull::Config { ack_policy: consumer::AckPolicy::None, ..Default::default() };
            let consumer = stream.create_consumer(config).await.expect("a consumer");
            let mut messages = consumer.messages().await.expect("its messages");
            let mut read = Vec::new();
            while read.len() < n {
                match tokio::time::timeout(Duration::from_secs(20), messages.next()).await {
                    Ok(Some(Ok(message))) => read.push(message),
                    other => panic!("message {} of {n} never came to {}: {other:?}", read.len() + 1, self.name),
                }
            }
            read
        })
    }

    fn count(&self) -> u64 {
        self.runtime.block_on(async {
            self.jetstream.get_stream(&self.name).await.expect("the test stream").cached_info().state.messages
        })
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        let deleted = self.runtime.block_on(self.jetstream.delete_stream(&self.name));
        if let Err(e) = deleted {
            eprintln!("could not delete the test stream {}: {e}", self.name);
        }
    }
}

fn header<'a>(message: &'a jetstream::Message, name: &str) -> &'a str {
    message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str()).unwrap_or_else(|| panic!("no {name}"))
}

fn write_config(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("punctual.toml");
    std::fs::write(&path, text).expect("write the config file");
    path
}

/// Waits until the task is gone (done: deleted), failing with its last state.
#[track_caller]
fn done(api: &Api, queue: &str, key: &str) {
    api.get_until(&task_path(queue, key), "done (404)", |resp| resp.status == 404);
}

#[test]
fn a_nats_queue_publishes_a_due_task_to_jetstream_and_the_task_ends_done() {
    let stream = TestStream::create();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write_config(
        &dir,
        &format!(
            r#"[egress]
allow = ["127.0.0.1"]

[queues."order.publish".action]
kind = "nats"
url = "nats://{NATS}"
subject = "{}.orders.{{{{ region }}}}"
timeout = "5s"
concurrency = 4
"#,
            stream.name
        ),
    );
    let server = start(server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let api = Api::new(server.url());
    let task =
        api.create("order.publish", "o-1", json!({"payload": {"order_id": 7, "region": "eu"}, "delay": "200ms"}));
    assert_eq!(task["state"], "scheduled", "not published before it is due: {task}");
    done(&api, "order.publish", "o-1");

    let messages = stream.messages(1);
    let message = &messages[0];
    assert_eq!(message.subject.as_str(), format!("{}.orders.eu", stream.name));
    assert_eq!(header(message, "Punctual-Queue"), "order.publish");
    assert_eq!(header(message, "Punctual-Key"), "o-1");
    let body: Value = serde_json::from_slice(&message.payload).expect("the standard JSON body");
    assert_eq!(body["payload"], json!({"order_id": 7, "region": "eu"}));
    assert_eq!(header(message, "Nats-Msg-Id"), body["delivery_id"].as_str().expect("a delivery id"));
    assert_eq!(stream.count(), 1, "published once");
}

#[test]
fn the_settings_api_takes_a_nats_action_but_not_credentials_in_its_url() {
    let stream = TestStream::create();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = write_config(&dir, "[egress]\nallow = [\"127.0.0.1\"]\n");
    let server = start(server_builder().arg("--config").arg(&config).args(["--grace-period", "1s"]));
    let api = Api::new(server.url());
    let settings = "/v1/queues/order.publish/settings";

    let with_password =
        json!({"action": {"kind": "nats", "url": format!("nats://punctual:s3cret@{NATS}"), "subject": "x.y"}});
    let refused = api.put(settings, with_password);
    refused.expect_error(400, "invalid_argument", Some("action.url"), "a password in a settings URL");
    assert!(!refused.text.contains("s3cret"), "the error does not repeat the password: {}", refused.text);

    let subject = format!("{}.settings.{{{{ key }}}}", stream.name);
    let action =
        json!({"action": {"kind": "nats", "url": format!("nats://{NATS}"), "subject": subject, "timeout": "5s"}});
    api.put(settings, action).expect(201, "a nats action through the settings API");
    // Taken up by the server within a second; schedule until a task is delivered by it.
    api.create("order.publish", "o-2", json!({"payload": {"n": 2}, "delay": "100ms"}));
    done(&api, "order.publish", "o-2");
    let messages = stream.messages(1);
    assert_eq!(messages[0].subject.as_str(), format!("{}.settings.o-2", stream.name));
}
