//! Logs carry the task: guards against a handler's own log lines (and the engine's
//! task events) that cannot be traced back to the queue, key, delivery and attempt
//! they were about.

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual::{Delivery, Engine, EngineConfig, Outcome, SqliteStore, TaskSpec, Worker};
use tokio::sync::mpsc;

/// Log output collected in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// One thread: the subscriber set for this test is seen by every task it spawns.
#[tokio::test(flavor = "current_thread")]
async fn a_handlers_log_lines_carry_the_tasks_fields() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::start(SqliteStore::open(dir.path()).unwrap(), EngineConfig::default());
    engine.schedule("order.cancel", "order-1234", TaskSpec::now()).await.unwrap();
    let (done, mut done_rx) = mpsc::unbounded_channel();
    let worker = Worker::new(engine.clone())
        .handle("order.cancel", move |d: Delivery| {
            let done = done.clone();
            async move {
                tracing::info!("cancelling the unpaid order");
                done.send(d.delivery_id.clone()).unwrap();
                Ok::<_, punctual::BoxError>(Outcome::Done)
            }
        })
        .start()
        .unwrap();
    let delivery_id = tokio::time::timeout(Duration::from_secs(20), done_rx.recv()).await.unwrap().unwrap();
    worker.shutdown().await;
    engine.shutdown().await.unwrap();

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let fields = format!("queue=order.cancel key=order-1234 attempt=1 delivery_id={delivery_id}");
    let handler_line = text.lines().find(|l| l.contains("cancelling the unpaid order")).unwrap();
    assert!(handler_line.contains(&format!("task{{{fields}}}")), "{handler_line}");
    for event in ["task scheduled", "task fired", "task completed"] {
        let line = text.lines().find(|l| l.contains(event)).unwrap_or_else(|| panic!("no '{event}' in:\n{text}"));
        assert!(line.contains("queue=order.cancel") && line.contains("key=order-1234"), "{line}");
    }
    let completed = text.lines().find(|l| l.contains("task completed")).unwrap();
    assert!(
        completed.contains(&format!("delivery_id={delivery_id}")) && completed.contains("attempt=1"),
        "{completed}"
    );
}
