//! API.md "Wave 3 additions": a queue's `group_rate` (`"2/1m"`) in its settings holds
//! each group to that many leases per window across the queue's consumers, while other
//! groups and ungrouped tasks go on; a bad rate is refused with its field and changes
//! nothing.

use crate::common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::{TestServer, at, field};
use serde_json::json;

const HOUR: i64 = 3_600_000;

#[tokio::test]
async fn a_group_rate_holds_each_group_to_its_leases_per_window() {
    let s = TestServer::manual().await;
    let clock = s.clock.as_ref().unwrap();
    let path = "/v1/queues/order.remind/settings";
    let (status, settings) = s.put(path, json!({"group_rate": "2/1m"})).await;
    assert_eq!(status, StatusCode::CREATED, "{settings}");
    assert_eq!(settings["group_rate"], "2/1m", "{settings}");
    for (key, ago, group) in [("a-1", 5, "customer-a"), ("a-2", 4, "customer-a"), ("a-3", 3, "customer-a")] {
        s.create("order.remind", key, json!({"due_at": at(-ago * HOUR), "group": group})).await;
    }
    s.create("order.remind", "b-1", json!({"due_at": at(-HOUR), "group": "customer-b"})).await;
    for bad in [json!("fast"), json!("0/1m"), json!(2)] {
        let (status, body) = s.put(path, json!({"group_rate": bad})).await;
        assert_eq!((status, field(&body)), (StatusCode::BAD_REQUEST, Some("group_rate")), "{bad}: {body}");
    }
    assert_eq!(s.get(path).await.1["group_rate"], "2/1m", "a refused rate changed nothing");

    let leases = s.lease("order.remind", json!({"max": 10})).await;
    let keys: Vec<&str> = leases.iter().map(|lease| lease["task"]["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["a-1", "b-1", "a-2"], "two of customer-a, then it waits; customer-b is not held");
    for lease in &leases {
        let (status, _) = s.ack(lease, json!({"outcome": "done"})).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }
    assert!(s.lease("order.remind", json!({"max": 10})).await.is_empty(), "acks give no slot back");
    clock.advance(Duration::from_secs(60));
    let next = s.lease("order.remind", json!({"max": 10})).await;
    assert_eq!(next.len(), 1, "a minute later the window has room: {next:?}");
    assert_eq!(next[0]["task"]["key"], "a-3");

    let (status, settings) = s.send(Method::PATCH, path, Some(json!({"group_rate": null}))).await;
    assert_eq!((status, &settings["group_rate"]), (StatusCode::OK, &json!(null)), "{settings}");
}
