//! Email deliveries end to end: the core worker runs the email action, lettre speaks
//! real SMTP (AUTH PLAIN, pooled connections) to a sink in this process, and the test
//! checks the envelope, the headers and the rendered bodies. Guards against: a message
//! rendered with holes, credentials not sent, a connection per message, a refused
//! recipient retried forever, a template error lost.

#![allow(clippy::unwrap_used, reason = "helpers of tests: a failed unwrap is a failed test")]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::smtp::SmtpSink;
use common::{Harness, next};
use punctual_actions::{Action, ActionKind, ActionSpec, EmailConfig, Runtime, Secret, SmtpConfig, SmtpSecurity};
use punctual_core::{TaskSpec, TaskState, Worker};
use serde_json::json;

fn smtp(sink: &SmtpSink) -> SmtpConfig {
    let mut smtp = SmtpConfig::new("127.0.0.1", SmtpSecurity::Plain);
    smtp.port = Some(sink.addr.port());
    smtp.username = Some("punctual".into());
    smtp.password = Some(Secret::new("smtp-pass"));
    smtp
}

fn spec(config: EmailConfig) -> ActionSpec {
    ActionSpec::new(ActionKind::Email(config)).timezone("Asia/Shanghai").timeout(Duration::from_secs(5))
}

/// The action on a runtime whose egress policy allows the sink on 127.0.0.1.
fn build(h: &Harness, config: EmailConfig) -> Action {
    Action::build(&spec(config), &common::loopback_runtime(Arc::new(h.clock.clone()))).unwrap()
}

#[tokio::test]
async fn a_reminder_is_rendered_and_sent_with_auth_over_one_reused_connection() {
    let mut h = Harness::start();
    let mut sink = SmtpSink::start().await;
    let mut config = EmailConfig::new(
        smtp(&sink),
        "Punctual <reminders@example.com>",
        vec!["{{ assignee_email }}".into()],
        "Step {{ step }} is overdue (reminder {{ attempt }})",
        "Hello {{ assignee }},\r\nstep {{ step }} of {{ payload.workflow }} was due {{ due_local }}.\r\n\
         queue={{ queue }} key={{ key }} delivery={{ delivery_id }}",
    );
    config.cc = vec!["{{ manager_email }}".into()];
    config.html = Some("<p>Hello {{ assignee }}, step {{ step }} is due {{ due_at | localtime('%H:%M') }}.</p>".into());
    let worker = Worker::new(h.engine.clone()).handle("flow.remind", build(&h, config)).start().unwrap();
    let payload = json!({
        "assignee": "Zhang & Wei", "assignee_email": "zhang.wei@example.com",
        "manager_email": "boss@example.com", "step": "approve", "workflow": "express-return"
    });

    h.engine.schedule("flow.remind", "pi-9", TaskSpec::now().payload(payload.clone())).await.unwrap();
    let mail = next(&mut sink.mails, "the first email").await;
    assert_eq!(h.completed("flow.remind", "pi-9").await, None, "sent: done");
    let task_id = mail.header("Message-ID").unwrap();
    assert_eq!(mail.auth, Some(("punctual".into(), "smtp-pass".into())));
    assert_eq!(mail.from, "reminders@example.com");
    assert_eq!(mail.to, vec!["zhang.wei@example.com".to_owned(), "boss@example.com".to_owned()]);
    assert_eq!(mail.header("From").as_deref(), Some("Punctual <reminders@example.com>"));
    assert_eq!(mail.header("To").as_deref(), Some("zhang.wei@example.com"));
    assert_eq!(mail.header("Cc").as_deref(), Some("boss@example.com"));
    assert_eq!(mail.header("Subject").as_deref(), Some("Step approve is overdue (reminder 1)"));
    assert_eq!(mail.header("Date").as_deref(), Some("Mon, 30 Nov 2026 12:00:00 +0000"));
    assert!(task_id.starts_with('<') && task_id.ends_with("@punctual>"), "{task_id}");
    assert!(
        mail.header("Content-Type").unwrap().starts_with("multipart/alternative"),
        "{:?}",
        mail.header("Content-Type")
    );
    let body = mail.body();
    assert!(
        body.contains("Hello Zhang & Wei,\r\nstep approve of express-return was due 2026-11-30 20:00 CST.\r\n"),
        "{body}"
    );
    assert!(
        body.contains(&format!("queue=flow.remind key=pi-9 delivery={}", &task_id[1..task_id.len() - 10])),
        "{body}"
    );
    assert!(body.contains("<p>Hello Zhang &amp; Wei, step approve is due 20:00.</p>"), "the HTML body escapes: {body}");

    // A second message reuses the pooled connection.
    h.engine.schedule("flow.remind", "pi-10", TaskSpec::now().payload(payload)).await.unwrap();
    let second = next(&mut sink.mails, "the second email").await;
    assert_eq!(h.completed("flow.remind", "pi-10").await, None);
    assert_eq!(second.connection, mail.connection, "the connection is reused");
    assert_ne!(second.header("Message-ID"), mail.header("Message-ID"));

    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn template_errors_and_refused_recipients_go_dead_and_transient_refusals_retry() {
    let mut h = Harness::start();
    let sink = SmtpSink::start().await;
    let config =
        |to: &str, text: &str| EmailConfig::new(smtp(&sink), "reminders@example.com", vec![to.into()], "s", text);
    let worker = Worker::new(h.engine.clone())
        .handle("missing-field", build(&h, config("a@example.com", "Hello {{ assignee }}")))
        .handle("bad-type", build(&h, config("a@example.com", "{{ count + 'x' }}")))
        .handle("bad-address", build(&h, config("{{ email }}", "hi")))
        .handle("refused", build(&h, config("nobody@example.com", "hi")))
        .handle("later", build(&h, config("later@example.com", "hi")))
        .start()
        .unwrap();
    let payload = json!({"count": 3, "email": "not an address"});
    for queue in ["missing-field", "bad-type", "bad-address", "refused", "later"] {
        h.engine.schedule(queue, "k", TaskSpec::now().payload(payload.clone())).await.unwrap();
    }
    let dead = |task: Option<punctual_core::Task>| {
        let task = task.expect("kept");
        assert_eq!(task.state, TaskState::Dead, "{task:?}");
        task.last_error.unwrap()
    };
    let e = dead(h.completed("missing-field", "k").await);
    assert!(e.contains("template text") && e.contains("undefined value") && e.contains("line 1"), "{e}");
    let e = dead(h.completed("bad-type", "k").await);
    assert!(e.contains("template text") && e.contains("invalid operation"), "{e}");
    let e = dead(h.completed("bad-address", "k").await);
    assert!(e.contains("to[0] rendered 'not an address'"), "{e}");
    let e = dead(h.completed("refused", "k").await);
    assert!(e.contains("refused the message") && e.contains("no such mailbox"), "{e}");
    let task = h.completed("later", "k").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1));
    assert!(task.last_error.as_deref().unwrap().contains("try again later"), "{:?}", task.last_error);

    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn starttls_is_required_so_nothing_is_sent_in_clear_to_a_server_without_it() {
    let mut h = Harness::start();
    let mut sink = SmtpSink::start().await;
    let mut smtp = smtp(&sink);
    smtp.security = SmtpSecurity::StartTls;
    let config = EmailConfig::new(smtp, "reminders@example.com", vec!["a@example.com".into()], "s", "secret text");
    let worker = Worker::new(h.engine.clone()).handle("tls", build(&h, config)).start().unwrap();
    h.engine.schedule("tls", "k", TaskSpec::now()).await.unwrap();
    let task = h.completed("tls", "k").await.unwrap();
    assert_eq!((task.state, task.attempts), (TaskState::Scheduled, 1), "retried: the server may gain STARTTLS");
    let error = task.last_error.unwrap();
    assert!(error.starts_with("cannot send through SMTP server 127.0.0.1:"), "{error}");
    assert!(sink.mails.try_recv().is_err(), "no message (and no credentials) went over the plain connection");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn smtp_hosts_are_under_the_egress_policy_as_literals_and_as_names() {
    let mut h = Harness::start();
    let mut sink = SmtpSink::start().await;
    let public_only = Runtime::new(Arc::new(h.clock.clone())).unwrap();
    let message =
        |smtp: SmtpConfig| EmailConfig::new(smtp, "reminders@example.com", vec!["a@example.com".into()], "s", "t");

    // A literal address the policy refuses is refused when the action is built.
    let error = Action::build(&spec(message(smtp(&sink))), &public_only).unwrap_err();
    assert_eq!(error.field(), "smtp.host");
    assert!(error.to_string().contains("127.0.0.1 is a loopback address"), "{error}");

    // A name resolving only to refused addresses sends nothing: the task goes dead with why.
    let mut by_name = smtp(&sink);
    by_name.host = "localhost".into();
    let worker = Worker::new(h.engine.clone())
        .handle("refused-name", Action::build(&spec(message(by_name.clone())), &public_only).unwrap())
        .handle("allowed-name", build(&h, message(by_name)))
        .start()
        .unwrap();
    h.engine.schedule("refused-name", "k", TaskSpec::now()).await.unwrap();
    let task = h.completed("refused-name", "k").await.unwrap();
    assert_eq!(task.state, TaskState::Dead, "{task:?}");
    let error = task.last_error.unwrap();
    assert!(error.contains("refused: localhost resolves only to refused addresses"), "{error}");
    assert!(sink.mails.try_recv().is_err(), "nothing reached the sink");

    // With loopback allowed the same name is sent to, at the address it resolved to.
    h.engine.schedule("allowed-name", "k", TaskSpec::now()).await.unwrap();
    next(&mut sink.mails, "the email through the allowed name").await;
    assert_eq!(h.completed("allowed-name", "k").await, None, "sent: done");
    worker.shutdown().await;
    h.engine.shutdown().await.unwrap();
}
