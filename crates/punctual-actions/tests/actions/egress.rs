//! The egress policy end to end: a real receiver on 127.0.0.1, a real engine and the
//! core worker running webhook and chat actions.
//!
//! Guards against server-side request forgery through push actions: a delivery that
//! reaches loopback (or any refused address) because the check looked at the URL's
//! text and not at the address connected to, a host name that resolves to loopback
//! slipping through (what DNS rebinding exploits), a redirect that leads elsewhere, a
//! refusal retried for a day instead of failing with a sentence that says what to
//! allow — and an allow-list that does not let the operator's own receivers through.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Harness, Receiver, Reply};
use punctual_actions::{Action, ActionKind, ActionSpec, ChatConfig, EgressPolicy, Platform, Runtime, WebhookConfig};
use punctual_core::{Task, TaskSpec, TaskState, Worker};

fn runtime(h: &Harness, policy: EgressPolicy) -> Runtime {
    Runtime::with_egress(Arc::new(h.clock.clone()), policy).unwrap()
}

fn webhook(url: String) -> ActionSpec {
    ActionSpec::new(ActionKind::Webhook(WebhookConfig::new(url))).timeout(Duration::from_secs(5))
}

/// Runs `action` on a queue, schedules one task due now, and returns it once its
/// outcome is applied.
async fn deliver_one(h: &mut Harness, action: Action) -> Option<Task> {
    let worker = Worker::new(h.engine.clone()).handle("q", action).start().unwrap();
    h.engine.schedule("q", "k", TaskSpec::now()).await.unwrap();
    let task = h.completed("q", "k").await;
    worker.shutdown().await;
    task
}

#[tokio::test]
async fn a_host_name_that_resolves_to_loopback_is_refused_by_default_and_the_task_is_dead() {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    receiver.always(Reply::status(200));
    let url = format!("http://localhost:{}/hook", receiver.addr.port());
    // A name passes the build: it is judged by what it resolves to, when connecting.
    let action = Action::build(&webhook(url.clone()), &runtime(&h, EgressPolicy::public_only())).unwrap();

    let task = deliver_one(&mut h, action).await.expect("a refused task is kept as dead");
    assert_eq!((task.state, task.attempts), (TaskState::Dead, 1), "a refusal is not retried: {task:?}");
    let error = task.last_error.unwrap();
    assert!(error.starts_with(&format!("webhook {url}: refused: localhost resolves only to refused addresses (")));
    assert!(error.contains("127.0.0.1 is a loopback address"), "{error}");
    assert!(error.ends_with("add \"localhost\" or the addresses to [egress] allow to permit it"), "{error}");
    assert!(receiver.seen.try_recv().is_err(), "the receiver got nothing");
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_loopback_address_is_refused_when_the_action_is_built() {
    let h = Harness::start();
    let receiver = Receiver::start().await;
    for (url, refused) in [
        (receiver.url("/hook"), "127.0.0.1 is a loopback address"),
        (format!("http://2130706433:{}/hook", receiver.addr.port()), "127.0.0.1 is a loopback address"),
        (format!("http://[::ffff:127.0.0.1]:{}/hook", receiver.addr.port()), "IPv4 127.0.0.1 in IPv6 form"),
        ("http://169.254.169.254/latest/meta-data/".to_owned(), "169.254.169.254 is a link-local address"),
    ] {
        let error = Action::build(&webhook(url.clone()), &runtime(&h, EgressPolicy::public_only())).unwrap_err();
        assert_eq!(error.field(), "url");
        assert!(error.to_string().starts_with("url: refused: "), "{url}: {error}");
        assert!(error.to_string().contains(refused), "{url}: {error}");
        assert!(error.to_string().ends_with("add it to [egress] allow to permit it"), "{url}: {error}");
    }
    // Runtime::new is the same default.
    let default = Runtime::new(Arc::new(h.clock.clone())).unwrap();
    assert!(Action::build(&webhook(receiver.url("/hook")), &default).is_err());
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn allowed_addresses_networks_and_names_are_delivered() {
    let policies =
        [("127.0.0.1", true), ("127.0.0.0/8", true), ("localhost", true), ("127.0.0.1", false), ("localhost", false)];
    for (entry, literal) in policies {
        let mut h = Harness::start();
        let mut receiver = Receiver::start().await;
        receiver.always(Reply::status(200));
        let url =
            if literal { receiver.url("/hook") } else { format!("http://localhost:{}/hook", receiver.addr.port()) };
        let action =
            Action::build(&webhook(url.clone()), &runtime(&h, EgressPolicy::public_only().allow(entry).unwrap()));
        let Ok(action) = action else {
            // A name entry does not allow an address literal.
            assert_eq!((entry, literal), ("localhost", true), "{url}");
            continue;
        };
        assert_eq!(deliver_one(&mut h, action).await, None, "allow {entry}: {url} delivered and done");
        assert_eq!(receiver.next().await.path, "/hook");
        h.engine.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn chat_robots_are_under_the_same_policy() {
    let mut h = Harness::start();
    let mut receiver = Receiver::start().await;
    receiver.always(Reply::status(200).body("ok"));
    let config =
        ChatConfig::new(Platform::Slack, Some(format!("http://localhost:{}/T/B/x", receiver.addr.port())), "hi");
    let spec = ActionSpec::new(ActionKind::Chat(config));
    let action = Action::build(&spec, &runtime(&h, EgressPolicy::public_only())).unwrap();
    let task = deliver_one(&mut h, action).await.unwrap();
    assert_eq!(task.state, TaskState::Dead);
    let error = task.last_error.unwrap();
    // The robot's URL is a credential: the error names the host only.
    assert!(error.starts_with("slack robot: refused: localhost resolves only"), "{error}");
    assert!(receiver.seen.try_recv().is_err(), "the receiver got nothing");

    let literal = ChatConfig::new(Platform::Slack, Some(receiver.url("/T/B/x")), "hi");
    let error = Action::build(&ActionSpec::new(ActionKind::Chat(literal)), &runtime(&h, EgressPolicy::public_only()))
        .unwrap_err();
    assert!(error.to_string().contains("127.0.0.1 is a loopback address"), "{error}");
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_redirect_is_not_followed_even_to_an_allowed_place() {
    let mut h = Harness::start();
    let mut first = Receiver::start().await;
    let mut second = Receiver::start().await;
    first.always(Reply::status(307).header("location", &second.url("/elsewhere")));
    second.always(Reply::status(200));
    let action =
        Action::build(&webhook(first.url("/hook")), &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap();
    let task = deliver_one(&mut h, action).await.unwrap();
    // Retried (not a final status), saying what to change.
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert!(task.last_error.unwrap().contains("redirects are not followed: configure the final URL"));
    assert_eq!(first.next().await.path, "/hook");
    assert!(second.seen.try_recv().is_err(), "the redirect's target got nothing");
    h.engine.shutdown().await.unwrap();
}
