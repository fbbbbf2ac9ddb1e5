//! The two scenarios of the seeds (../shared/seeds), done with punctual, with times
//! shortened from hours to seconds so the example runs in about ten seconds:
//!
//! 1. **Workflow overdue reminder.** A workflow step starts: remind the assignee when
//!    it is still pending after "24 h" and every "24 h" after, and tell their manager
//!    after "48 h". Both tasks carry the workflow instance as a tag; when the step is
//!    done, cancelling the tag drops every reminder at once.
//! 2. **Unpaid order auto-cancel.** Every order schedules "cancel if unpaid" for "30
//!    minutes" later; paying cancels that task, so only unpaid orders are cancelled.
//!
//! The handler is chosen by queue — the strategy pattern of the seeds — and each
//! handler gets a stable delivery id to stay idempotent.
//!
//! Run: `cargo run --example seeds`

use std::time::Duration;

use punctual::{Delivery, Engine, EngineConfig, Outcome, Repeat, SqliteStore, TaskSpec, Worker};
use serde_json::json;

/// One simulated "hour".
const HOUR: Duration = Duration::from_millis(50);

/// The story's time going by: `hours` simulated hours on the real clock, while the
/// engine fires what falls due meanwhile (the example waits as a user's process would).
async fn hours_pass(hours: u32) {
    tokio::time::sleep(hours * HOUR).await;
}

type HandlerResult = Result<Outcome, punctual::BoxError>;

async fn remind_assignee(delivery: Delivery) -> HandlerResult {
    let p = &delivery.task.payload;
    println!(
        "  [reminder] {}: your task \"{}\" is overdue, please handle it (occurrence due {}, delivery {})",
        p["assignee"].as_str().unwrap_or("?"),
        p["title"].as_str().unwrap_or("?"),
        delivery.task.due_at,
        delivery.delivery_id
    );
    Ok(Outcome::Done) // the repeat re-arms it for the next "day"
}

async fn tell_manager(delivery: Delivery) -> HandlerResult {
    let p = &delivery.task.payload;
    println!(
        "  [escalate] {}: \"{}\" assigned to {} has been pending for 48 h",
        p["manager"].as_str().unwrap_or("?"),
        p["title"].as_str().unwrap_or("?"),
        p["assignee"].as_str().unwrap_or("?")
    );
    Ok(Outcome::Done)
}

async fn cancel_unpaid_order(delivery: Delivery) -> HandlerResult {
    println!("  [order] {} still unpaid after 30 minutes: cancelled", delivery.task.key);
    Ok(Outcome::Done)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = tempfile::tempdir()?;
    let store = SqliteStore::open(data.path())?;
    let engine = Engine::start(store, EngineConfig::default());
    let worker = Worker::new(engine.clone())
        .handle("flow.express-return.reminder", remind_assignee)
        .handle("flow.express-return.chief", tell_manager)
        .handle("order.cancel", cancel_unpaid_order)
        .start()?;

    println!("Scenario 1: a workflow step starts (instance pi-9), 1 h = {HOUR:?}");
    let step = json!({"title": "Express return order #77", "assignee": "zhang.wei", "manager": "li.na"});
    engine
        .schedule(
            "flow.express-return.reminder",
            "task-77@pi-9@zhang.wei",
            TaskSpec::after(24 * HOUR).payload(step.clone()).repeat(Repeat::every(24 * HOUR)?).tag("pi-9"),
        )
        .await?;
    engine
        .schedule(
            "flow.express-return.chief",
            "task-77@pi-9@li.na",
            TaskSpec::after(48 * HOUR).payload(step).tag("pi-9"),
        )
        .await?;

    hours_pass(80).await;
    println!("  … the assignee completes the step: cancel everything tagged pi-9");
    let mut cancelled = 0;
    for queue in ["flow.express-return.reminder", "flow.express-return.chief"] {
        cancelled += engine.cancel_tag(queue, "pi-9").await?;
    }
    println!("  cancelled {cancelled} pending reminder(s); no more will fire");
    hours_pass(30).await;

    println!("\nScenario 2: two orders, 30 min = {:?}", 30 * HOUR);
    for order in ["order-1001", "order-1002"] {
        engine.schedule("order.cancel", order, TaskSpec::after(30 * HOUR).payload(json!({"order_id": order}))).await?;
    }
    hours_pass(10).await;
    engine.cancel("order.cancel", "order-1002").await?;
    println!("  order-1002 paid: its auto-cancel is cancelled");
    hours_pass(30).await;

    worker.shutdown().await;
    engine.shutdown().await?;
    println!("\nDone.");
    Ok(())
}
