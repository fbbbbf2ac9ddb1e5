//! "What happened to my task?" and "who changed this queue?" through the real binary:
//! each change made over HTTP is in the task's history under the name of the token that
//! made it, a webhook's answers are kept with each try, the history outlives the task,
//! `punctual history` prints it, and reading it takes `read` on the queue; queue,
//! calendar and access changes are in the audit, newest first, which takes `admin`.
//!
//! Guards against: a change told without its author (or with the token itself), a
//! delivery whose status and answer are lost, a history that goes with its task, a CLI
//! that cannot show it, a history readable without `read`, and an audit that misses a
//! change, pages wrongly or is readable without `admin`.

use crate::common;

use std::process::Command;

use common::receiver::Receiver;
use common::{Api, BIN, server_builder, start};
use serde_json::{Value, json};

const SHOP: &str = "shop-token-9d1f";
const WORKER: &str = "worker-token-77aa";
const OPS: &str = "ops-token-5e0c";
const OTHER: &str = "other-token-0b3e";

fn events(history: &Value) -> Vec<&str> {
    history["events"].as_array().expect("events").iter().map(|e| e["event"].as_str().expect("event")).collect()
}

#[test]
fn the_history_names_who_did_each_change_and_keeps_what_the_webhook_answered() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("punctual.toml");
    std::fs::write(
        &config,
        format!(
            r#"[egress]
allow = ["127.0.0.1"]

[[access]]
name = "shop"
token = "{SHOP}"
permissions = ["schedule", "read"]

[[access]]
name = "worker-eu"
token = "{WORKER}"
permissions = ["work"]

[[access]]
name = "ops"
token = "{OPS}"
permissions = ["admin", "schedule", "read"]

[[access]]
name = "elsewhere"
token = "{OTHER}"
permissions = ["read"]
queues = ["other.*"]

[queues."flow.hook".action]
kind = "webhook"
url = "http://{}/hook"
"#,
            receiver.addr
        ),
    )
    .expect("write the config file");
    let server = start(server_builder().arg("--config").arg(&config));
    let (shop, worker, ops) =
        (Api::of(&server).token(SHOP), Api::of(&server).token(WORKER), Api::of(&server).token(OPS));

    // A reminder scheduled, moved, tried by a pull worker, then cancelled.
    shop.schedule("flow.remind", "step-7", json!({"delay": "1h", "payload": {"to": "zhang.wei"}}))
        .expect(201, "create");
    shop.schedule("flow.remind", "step-7", json!({"delay": "0s", "payload": {"to": "zhang.wei"}})).expect(200, "move");
    let lease = worker.lease_one("flow.remind");
    let lease_id = lease["lease_id"].as_str().expect("a lease id");
    worker.ack(lease_id, json!({"outcome": "retry", "error": "mail server down", "delay": "1h"})).expect(204, "ack");
    ops.delete(&common::task_path("flow.remind", "step-7")).expect(204, "cancel");

    let history = shop.get("/v1/queues/flow.remind/tasks/step-7/history");
    let history = history.expect(200, "the history outlives the task");
    assert_eq!(events(history), ["created", "replaced", "leased", "acked", "cancelled"], "{history:#}");
    let e = &history["events"];
    assert_eq!((e[0]["by"].as_str(), e[0]["state"].as_str()), (Some("shop"), Some("scheduled")));
    assert_eq!(e[1]["changed"], json!(["due_at"]), "only the due time moved");
    assert_eq!((e[2]["by"].as_str(), e[2]["attempt"].as_u64()), (Some("worker-eu"), Some(1)));
    let node = format!(":{} (pid {})", server.addr().port(), server.pid().expect("running"));
    assert!(e[2]["node"].as_str().is_some_and(|name| name.ends_with(&node)), "the node that leased: {}", e[2]);
    assert_eq!(e[2]["delivery_id"], lease["delivery_id"], "the lease's delivery id");
    assert!(e[2]["delivery_id"].is_string(), "{lease}");
    assert_eq!((e[3]["outcome"].as_str(), e[3]["error"].as_str()), (Some("retry"), Some("mail server down")));
    assert!(e[3]["due_at"].is_string(), "a retry tells when it is due again: {}", e[3]);
    assert_eq!((e[4]["by"].as_str(), e[4]["state"].as_str()), (Some("ops"), Some("gone")));
    assert_eq!(history["retention_ms"].as_u64(), Some(7 * 24 * 3600 * 1000), "the default retention");
    let text = history.to_string();
    for token in [SHOP, WORKER, OPS] {
        assert!(!text.contains(token), "a history names tokens, never holds them");
    }

    // A webhook delivery that fails once, then succeeds: each answer is kept.
    shop.schedule("flow.hook", "h-1", json!({"payload": {"n": 1}})).expect(201, "create a pushed task");
    receiver.next();
    receiver.answer(503, "busy, try later");
    receiver.next();
    receiver.answer(200, "ok");
    let done = shop.get_until("/v1/queues/flow.hook/tasks/h-1/history", "the second try's ack", |resp| {
        resp.json["events"].as_array().is_some_and(|events| events.iter().any(|e| e["outcome"] == "done"))
    });
    let acks: Vec<&Value> =
        done.json["events"].as_array().expect("events").iter().filter(|e| e["event"] == "acked").collect();
    assert_eq!(acks.len(), 2, "{:#}", done.json);
    assert_eq!((acks[0]["status"].as_u64(), acks[0]["answer"].as_str()), (Some(503), Some("busy, try later")));
    assert_eq!((acks[0]["outcome"].as_str(), acks[0]["attempt"].as_u64()), (Some("retry"), Some(1)));
    assert!(acks[0]["took_ms"].is_u64(), "a push delivery says how long it took: {}", acks[0]);
    assert_eq!((acks[1]["status"].as_u64(), acks[1]["answer"].as_str()), (Some(200), Some("ok")));
    assert_eq!((acks[1]["outcome"].as_str(), acks[1]["state"].as_str()), (Some("done"), Some("gone")));

    // The CLI prints the same history.
    let out = Command::new(BIN)
        .args(["history", "flow.remind", "step-7", "--server", &server.url(), "--token", SHOP])
        .output()
        .expect("run punctual history");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "a header and five events:\n{stdout}");
    assert!(lines[1].contains("created") && lines[1].contains("shop"), "{stdout}");
    assert!(lines[2].contains("changed due_at"), "{stdout}");
    let delivery = lease["delivery_id"].as_str().expect("a delivery id");
    assert!(lines[3].contains(&format!("delivery {delivery}")) && lines[3].contains(&node), "{stdout}");
    assert!(lines[4].contains("acked") && lines[4].contains("error: mail server down"), "{stdout}");
    assert!(lines[5].contains("cancelled") && lines[5].contains("ops") && lines[5].contains("gone"), "{stdout}");

    // Nothing known of a key: 404; a token without read on the queue: 403.
    shop.get("/v1/queues/flow.remind/tasks/never/history").expect_error(404, "not_found", None, "an unknown key");
    let missing = Command::new(BIN)
        .args(["history", "flow.remind", "never", "--server", &server.url(), "--token", SHOP])
        .output()
        .expect("run punctual history");
    assert_eq!(missing.status.code(), Some(1), "not found is exit status 1");
    Api::of(&server).token(OTHER).get("/v1/queues/flow.remind/tasks/step-7/history").expect_error(
        403,
        "forbidden",
        None,
        "read is needed on the queue",
    );
}

#[test]
fn the_audit_names_who_changed_queues_calendars_and_access_newest_first() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("punctual.toml");
    let text = format!(
        "[[access]]\nname = \"ops\"\ntoken = \"{OPS}\"\npermissions = [\"admin\", \"schedule\", \"read\"]\n\n\
         [[access]]\nname = \"shop\"\ntoken = \"{SHOP}\"\npermissions = [\"schedule\", \"read\"]\n"
    );
    std::fs::write(&config, &text).expect("write the config file");
    let server = start(server_builder().arg("--config").arg(&config));
    let ops = Api::of(&server).token(OPS);

    ops.put("/v1/queues/order.cancel/settings", json!({"defaults": {"max_attempts": 3}})).expect(201, "settings");
    ops.post("/v1/queues/order.cancel/pause", json!({})).expect(200, "pause");
    ops.schedule("order.cancel", "o-1", json!({"delay": "1h"})).expect(201, "a task");
    ops.delete("/v1/queues/order.cancel/tasks?state=scheduled").expect(200, "purge");
    let calendar = json!({"tz": "UTC", "hours": {"mon": ["09:00-17:00"]}});
    ops.put("/v1/calendars/office", calendar).expect(201, "a calendar");
    // The access rules read again: told, with what was read.
    std::fs::write(&config, format!("{text}\n[[access]]\nname = \"extra\"\ntoken = \"x-token-1\"\n"))
        .expect("rewrite the config file");
    let pid = server.pid().expect("the server runs");
    let status = Command::new("kill").args(["-HUP", &pid.to_string()]).status().expect("run kill");
    assert!(status.success(), "kill -HUP {pid}");
    server.wait_for_log("SIGHUP: access rules reloaded", std::time::Duration::from_secs(20)).expect("reloaded");

    let audit = ops.get_until("/v1/audit", "the reload's entry", |resp| {
        resp.json["entries"]
            .as_array()
            .is_some_and(|entries| entries.first().is_some_and(|e| e["action"] == "access.reload"))
    });
    let entries = audit.json["entries"].as_array().expect("entries");
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().expect("action")).collect();
    assert_eq!(actions, ["access.reload", "calendar.set", "queue.purge", "queue.pause", "queue.settings.set"]);
    assert!(entries[1..].iter().all(|e| e["by"] == "ops"), "{entries:#?}");
    assert_eq!(entries[0]["detail"]["scoped"], 3, "{:#}", entries[0]);
    assert_eq!(entries[1]["calendar"], "office");
    assert_eq!(entries[2]["detail"], json!({"state": "scheduled", "cancelled": 1}));
    assert_eq!(
        (entries[3]["queue"].as_str(), entries[4]["detail"]["defaults"]["max_attempts"].as_u64()),
        (Some("order.cancel"), Some(3))
    );
    assert!(audit.json["next_cursor"].is_null(), "one page");
    let whole = ops.get(&format!("/v1/audit?limit={}", entries.len()));
    assert!(whole.expect(200, "a page of all")["next_cursor"].is_null(), "a page that holds the rest ends the walk");

    // Paging, and the permission it takes.
    let first = ops.get("/v1/audit?limit=2");
    let first = first.expect(200, "a page of two");
    let cursor = first["next_cursor"].as_str().expect("more pages");
    let second = ops.get(&format!("/v1/audit?limit=2&cursor={cursor}"));
    assert_eq!(second.expect(200, "the next page")["entries"][0]["action"], "queue.purge");
    ops.get("/v1/audit?limit=0").expect_error(400, "invalid_argument", Some("limit"), "a page of nothing");
    Api::of(&server).token(SHOP).get("/v1/audit").expect_error(403, "forbidden", None, "the audit takes admin");
}
