//! A purge and its audit entry: the purge is told in the audit, and one whose entry the
//! store cannot write still answers what it cancelled, since the tasks are gone and an
//! error would tell the caller to purge again.

mod common;

use std::time::Duration;

use punctual_core::{Engine, EngineConfig, PurgeSelection, TaskSpec};

use common::Faulty;

async fn purged_of(store: Faulty) -> (u64, u64, usize) {
    let engine = Engine::start(store, EngineConfig::default());
    for key in ["order-1", "order-2", "order-3"] {
        engine.schedule("order.cancel", key, TaskSpec::after(Duration::from_secs(60))).await.expect("scheduled");
    }
    let purged = engine.purge("order.cancel", PurgeSelection::All).await.expect("the purge answers");
    let left = engine.stats(Some("order.cancel")).await.expect("stats")[0].scheduled;
    let told = engine.audit(10, None).await.expect("audit").0.len();
    engine.shutdown().await.expect("shutdown");
    (purged, left, told)
}

#[tokio::test]
async fn a_purge_answers_what_it_cancelled_whether_or_not_its_audit_entry_is_written() {
    assert_eq!(purged_of(Faulty::default()).await, (3, 0, 1), "purged, and told in the audit");
    let refusing = Faulty { refused_audit: true, ..Faulty::default() };
    assert_eq!(purged_of(refusing).await, (3, 0, 0), "purged, the entry refused: no error");
}
