//! Chat robots end to end: for each platform a loopback receiver asserts the exact JSON
//! and signature scheme of that platform (recomputed here from the secret), then
//! answers success, the platform's error code inside a 200, and its rate-limit code,
//! and the test checks the task: done, dead with the code in `last_error`, retried
//! after the platform's window.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use common::{Harness, Receiver, Reply, Seen};
use hmac::{Hmac, KeyInit, Mac};
use punctual_actions::{Action, ActionKind, ActionSpec, ChatConfig, Platform, Rate, Secret};
use punctual_core::{TaskSpec, TaskState, Worker};
use serde_json::{Value, json};
use sha2::Sha256;

const QUEUE: &str = "flow.chief-reminder";

enum Expect {
    Done,
    Dead(&'static str),
    RetryAfter(Duration),
    /// Retried after the task's backoff (1 s with jitter for a first failure).
    RetryBackoff,
}

fn payload() -> Value {
    json!({"step": "approve", "assignee": "Zhang Wei", "assignee_id": "zhangwei", "mobile": "13800001111"})
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

/// Schedules one task per answer; checks each request with `check` and each task's
/// fate with its expectation.
async fn run(config: ChatConfig, path: &str, answers: Vec<(Reply, Expect)>, check: impl Fn(&Seen, &Harness)) {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    let mut config = config;
    config.url = Some(receiver.url(path));
    let spec = ActionSpec::new(ActionKind::Chat(config)).timeout(Duration::from_secs(5));
    let action = Action::build(&spec, &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap();
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, action).start().unwrap();
    for (i, (reply, expect)) in answers.into_iter().enumerate() {
        let key = format!("task-{i}");
        h.engine.schedule(QUEUE, &key, TaskSpec::now().payload(payload())).await.unwrap();
        receiver.answer(reply);
        let seen = receiver.next().await;
        assert_eq!(seen.method, "POST");
        assert_eq!(seen.path, path);
        assert!(seen.header("content-type").starts_with("application/json"));
        check(&seen, &h);
        let task = h.completed(QUEUE, &key).await;
        match expect {
            Expect::Done => assert_eq!(task, None),
            Expect::Dead(needle) => {
                let task = task.unwrap();
                assert_eq!(task.state, TaskState::Dead);
                let error = task.last_error.unwrap();
                assert!(error.contains(needle), "{error}");
            }
            Expect::RetryAfter(after) => {
                let task = task.unwrap();
                assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
                assert_eq!(task.due_at, h.now().saturating_add(after));
                // Leave it be: a later round must not fire it.
                h.engine.cancel(QUEUE, &key).await.unwrap();
            }
            Expect::RetryBackoff => {
                let task = task.unwrap();
                assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
                let wait = task.due_at.saturating_since(h.now());
                assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1), "{wait:?}");
                h.engine.cancel(QUEUE, &key).await.unwrap();
            }
        }
    }
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn wecom_group_robot() {
    let mut config =
        ChatConfig::new(Platform::Wecom, None, "Step {{ step }} is overdue, {{ assignee }} please handle it");
    config.secret = Some(Secret::new("wecom-robot-key"));
    config.mention = vec!["{{ assignee_id }}".into()];
    config.mention_mobiles = vec!["{{ mobile }}".into(), "{{ payload.nobody | default('') }}".into()];
    let answers = vec![
        (Reply::status(200).body(r#"{"errcode":0,"errmsg":"ok"}"#), Expect::Done),
        (
            Reply::status(200).body(r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#),
            Expect::Dead("wecom robot refused the message: code 93000: invalid webhook url"),
        ),
        (
            Reply::status(200).body(r#"{"errcode":45009,"errmsg":"api freq out of limit"}"#),
            Expect::RetryAfter(Duration::from_secs(60)),
        ),
        (Reply::status(200).body(r#"{"errcode":-1,"errmsg":"system busy"}"#), Expect::RetryBackoff),
    ];
    run(config, "/cgi-bin/webhook/send", answers, |seen, _| {
        assert_eq!(seen.query.get("key").map(String::as_str), Some("wecom-robot-key"));
        assert_eq!(
            seen.json(),
            json!({"msgtype": "text", "text": {
                "content": "Step approve is overdue, Zhang Wei please handle it",
                "mentioned_list": ["zhangwei"],
                "mentioned_mobile_list": ["13800001111"],
            }})
        );
    })
    .await;
}

#[tokio::test]
async fn dingtalk_robot_with_its_signing_secret() {
    let mut config = ChatConfig::new(Platform::Dingtalk, None, "Step {{ step }} is overdue, please handle it");
    config.secret = Some(Secret::new("SECdingtalk-secret"));
    config.mention_mobiles = vec!["{{ mobile }}".into()];
    config.mention = vec!["{{ assignee_id }}".into()];
    let answers = vec![
        (Reply::status(200).body(r#"{"errcode":0,"errmsg":"ok"}"#), Expect::Done),
        (
            Reply::status(200).body(r#"{"errcode":310000,"errmsg":"sign not match"}"#),
            Expect::Dead("dingtalk robot refused the message: code 310000: sign not match"),
        ),
        (
            Reply::status(200).body(r#"{"errcode":130101,"errmsg":"send too fast"}"#),
            Expect::RetryAfter(Duration::from_secs(600)),
        ),
    ];
    run(config, "/robot/send", answers, |seen, h| {
        assert_eq!(seen.query.get("access_token"), None, "the url given had none");
        let timestamp = seen.query["timestamp"].clone();
        assert_eq!(timestamp, h.now().as_millis().to_string(), "epoch milliseconds");
        let expected =
            BASE64.encode(hmac(b"SECdingtalk-secret", format!("{timestamp}\nSECdingtalk-secret").as_bytes()));
        assert_eq!(seen.query["sign"], expected);
        assert_eq!(
            seen.json(),
            json!({
                "msgtype": "text",
                "text": {"content": "Step approve is overdue, please handle it @13800001111 @zhangwei"},
                "at": {"atMobiles": ["13800001111"], "atUserIds": ["zhangwei"], "isAtAll": false},
            })
        );
    })
    .await;
}

#[tokio::test]
async fn feishu_bot_with_its_signature() {
    let mut config = ChatConfig::new(Platform::Feishu, None, "Step {{ step }} is overdue");
    config.secret = Some(Secret::new("feishu-secret"));
    config.mention = vec!["ou_{{ assignee_id }}".into()];
    config.mention_all = true;
    let answers = vec![
        (Reply::status(200).body(r#"{"code":0,"msg":"success","data":{}}"#), Expect::Done),
        (
            Reply::status(200).body(
                r#"{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}"#,
            ),
            Expect::Dead("feishu robot refused the message: code 19021: sign match fail"),
        ),
        (
            Reply::status(200).body(r#"{"code":11232,"msg":"frequency limited"}"#),
            Expect::RetryAfter(Duration::from_secs(60)),
        ),
        (Reply::status(502).header("Retry-After", "7"), Expect::RetryAfter(Duration::from_secs(7))),
    ];
    run(config, "/open-apis/bot/v2/hook/abc", answers, |seen, h| {
        let body = seen.json();
        let timestamp = (h.now().as_millis() / 1000).to_string();
        let sign = BASE64.encode(hmac(format!("{timestamp}\nfeishu-secret").as_bytes(), b""));
        assert_eq!(
            body,
            json!({
                "msg_type": "text",
                "content": {"text": "Step approve is overdue <at user_id=\"ou_zhangwei\"></at> <at user_id=\"all\"></at>"},
                "timestamp": timestamp,
                "sign": sign,
            })
        );
    })
    .await;
}

#[tokio::test]
async fn slack_incoming_webhook() {
    let mut config = ChatConfig::new(Platform::Slack, None, "Step *{{ step }}* is overdue");
    config.mention = vec!["U024BE7LH".into()];
    let answers = vec![
        (Reply::status(200).body("ok"), Expect::Done),
        (
            Reply::status(400).body("invalid_payload"),
            Expect::Dead("slack robot answered 400 Bad Request: invalid_payload"),
        ),
        // Not a final status by default: the channel may be back (or the URL fixed).
        (Reply::status(404).body("channel_not_found"), Expect::RetryBackoff),
        // Always dead for a robot: the message was not shown (not a receiver's "done").
        (Reply::status(410).body("channel_is_archived"), Expect::Dead("channel_is_archived")),
        (
            Reply::status(429).header("Retry-After", "30").body("rate_limited"),
            Expect::RetryAfter(Duration::from_secs(30)),
        ),
    ];
    run(config, "/services/T000/B000/XXXX", answers, |seen, _| {
        assert_eq!(seen.json(), json!({"text": "<@U024BE7LH> Step *approve* is overdue"}));
    })
    .await;
}

#[tokio::test]
async fn a_template_error_sends_the_task_to_dead() {
    let config = ChatConfig::new(Platform::Slack, None, "{{ no_such_field }} is overdue");
    let mut h = Harness::start();
    let receiver = Receiver::start().await;
    let mut config = config;
    config.url = Some(receiver.url("/hook"));
    let spec = ActionSpec::new(ActionKind::Chat(config));
    let action = Action::build(&spec, &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap();
    let worker = Worker::new(h.engine.clone()).handle(QUEUE, action).start().unwrap();
    h.engine.schedule(QUEUE, "k", TaskSpec::now().payload(payload())).await.unwrap();
    let task = h.completed(QUEUE, "k").await.unwrap();
    assert_eq!(task.state, TaskState::Dead);
    let error = task.last_error.unwrap();
    assert!(error.starts_with("template text cannot be rendered: undefined value"), "{error}");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn over_the_rate_limit_deliveries_wait_their_turn_and_are_counted() {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    receiver.always(Reply::status(200).body(r#"{"errcode":0,"errmsg":"ok"}"#));
    let mut config = ChatConfig::new(Platform::Wecom, Some(receiver.url("/cgi-bin/webhook/send")), "{{ key }}");
    config.secret = Some(Secret::new("k"));
    let spec = ActionSpec::new(ActionKind::Chat(config)).rate(Rate::parse("2/1m").unwrap());
    let action = Action::build(&spec, &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap();
    // Leases outlast the clock jump below (heartbeats run on real time, the clock is manual).
    let worker = Worker::new(h.engine.clone())
        .handle(QUEUE, action.clone())
        .lease_for(Duration::from_secs(3600))
        .start()
        .unwrap();
    for key in ["a", "b", "c"] {
        h.engine.schedule(QUEUE, key, TaskSpec::now()).await.unwrap();
    }
    let mut sent = Vec::new();
    for _ in 0..2 {
        sent.push(receiver.next().await.json()["text"]["content"].as_str().unwrap().to_owned());
    }
    for key in sent.clone() {
        assert_eq!(h.completed(QUEUE, &key).await, None);
    }
    // The third waits for the window: leased, not failed.
    let third = ["a", "b", "c"].into_iter().find(|k| !sent.iter().any(|s| s == k)).unwrap();
    while action.rate_stats().unwrap().waiting == 0 {
        tokio::task::yield_now().await;
    }
    let task = h.engine.get(QUEUE, third).await.unwrap().unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Leased, 0));
    assert!(receiver.seen.try_recv().is_err(), "over the limit: not sent yet");
    h.clock.advance(Duration::from_secs(60));
    assert_eq!(receiver.next().await.json()["text"]["content"], third);
    assert_eq!(h.completed(QUEUE, third).await, None);
    let stats = action.rate_stats().unwrap();
    assert_eq!((stats.passed, stats.throttled, stats.waiting), (3, 1, 0));
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}
