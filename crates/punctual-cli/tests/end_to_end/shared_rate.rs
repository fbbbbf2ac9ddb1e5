//! A queue's `rate` holds across every server sharing one Redis.
//!
//! Guards against the bug of issue I.2: the limiter counted in each process, so with
//! `rate = "3/1m"` and three servers on one Redis, three times the rate went out — a
//! chat robot's limit (WeCom: 20 a minute) is the robot's, not a node's, and the extra
//! messages are refused by the platform or get the robot throttled.
//!
//! Real processes throughout: a private `redis-server`, three servers of the real
//! binary with a webhook queue of `rate = "3/2s"` and `concurrency = 2` (so that every
//! node holds some of the tasks: with one node holding all of them its own limiter
//! would hide the bug), and a webhook receiver on loopback in this process that
//! records when each delivery arrives. Twelve tasks fall due at once.

#![allow(clippy::disallowed_methods, reason = "real processes take real time")]
#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::receiver::{read_request, write_response};
use common::{Api, server_builder, start};
use serde_json::{Value, json};

const QUEUE: &str = "flow.remind";
const TASKS: usize = 12;
const COUNT: usize = 3;
const PER: Duration = Duration::from_secs(2);
/// Slots are taken by Redis' clock; arrivals are timed here, a request's trip later.
/// Two slots exactly `PER` apart may arrive a little closer than that.
const JITTER: Duration = Duration::from_millis(250);

/// Answers 200 to every request; reports each one's key and when it arrived.
fn receiver() -> (String, mpsc::Receiver<(Instant, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = read_request(&stream) else { continue };
            let at = Instant::now();
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            write_response(&mut stream, 200, "");
            if tx.send((at, body["key"].as_str().unwrap_or_default().to_owned())).is_err() {
                return;
            }
        }
    });
    (format!("http://{addr}/hook"), rx)
}

#[test]
fn the_rate_of_a_queue_holds_across_three_servers_on_one_redis() {
    let redis = punctual_testkit::redis::server();
    let (url, arrivals) = receiver();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("punctual.toml");
    std::fs::write(
        &config,
        format!(
            "[egress]\nallow = [\"127.0.0.1\"]\n\n[queues.\"{QUEUE}\".action]\nkind = \"webhook\"\nurl = \"{url}\"\n\
             rate = \"{COUNT}/{}s\"\nconcurrency = 2\n",
            PER.as_secs()
        ),
    )
    .unwrap();
    let nodes: Vec<_> = (0..3)
        .map(|_| start(server_builder().store(redis.url()).arg("--config").arg(&config).args(["--grace-period", "1s"])))
        .collect();

    let tasks: Vec<Value> = (0..TASKS).map(|i| json!({"key": format!("remind-{i}")})).collect();
    let answer = Api::of(&nodes[0]).post(&format!("/v1/queues/{QUEUE}/tasks"), json!({ "tasks": tasks }));
    answer.expect(200, "schedule the tasks, all due now");

    // Every task arrives, within what the rate allows and a margin.
    let deadline = Instant::now() + PER * (TASKS / COUNT) as u32 + Duration::from_secs(15);
    let mut times = Vec::new();
    let mut keys = BTreeSet::new();
    while keys.len() < TASKS {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((at, key)) = arrivals.recv_timeout(left) else {
            panic!("only {} of {TASKS} tasks arrived: {keys:?}", keys.len());
        };
        times.push(at);
        keys.insert(key);
    }
    times.sort();
    let start = times[0];
    let offsets: Vec<u128> = times.iter().map(|t| t.duration_since(start).as_millis()).collect();
    for window in times.windows(COUNT + 1) {
        let span = window[COUNT].duration_since(window[0]);
        assert!(
            span + JITTER >= PER,
            "{} deliveries within {span:?}, more than {COUNT} per {PER:?}; arrivals (ms): {offsets:?}",
            COUNT + 1
        );
    }
    println!("{TASKS} deliveries at {COUNT}/{PER:?} from three servers, arrivals (ms): {offsets:?}");
}
