//! Cron repeats through the real server, its clock moved by libfaketime to the days
//! clocks change: the first due time of a new task and the re-arm after a real `ack
//! done` follow docs/state-machine.md. Guards against what issue 14 reproduced with
//! curl: `0 1-3 * * *` firing 01:00 twice when New York falls back, `0 1,2 * * *`
//! dropping the skipped 02:00 when it springs forward, and `0 0 1 * */1` firing daily
//! (Vixie cron ANDs the day fields when one starts with `*`).

#![allow(clippy::unwrap_used, reason = "a test: a panic is a failure with its line")]

use crate::common;

use common::*;
use serde_json::{Value, json};

/// A server on the embedded store whose wall clock starts at `clock` (UTC).
fn server_at(clock: &str) -> punctual_testkit::server::ServerProcess {
    faketime::require();
    start(
        server_builder()
            .env("LD_PRELOAD", faketime::LIBFAKETIME)
            .env("FAKETIME", format!("@{clock}"))
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .env("TZ", "UTC"),
    )
}

const NEW_YORK: &str = "America/New_York";

/// Schedules `key` with the cron repeat in `tz`, first due as given; its `due_at`.
fn schedule(api: &Api, key: &str, (cron, tz): (&str, &str), first: Value) -> String {
    let mut body = json!({"repeat": {"cron": cron, "tz": tz}});
    if let Value::Object(extra) = first {
        body.as_object_mut().unwrap().extend(extra);
    }
    let answer = api.put(&format!("/v1/queues/remind/tasks/{key}"), body);
    answer.expect(201, "schedule")["task"]["due_at"].as_str().unwrap().to_owned()
}

/// Leases the one due task, acks it done; the task's next `due_at`.
fn fire_and_rearm(api: &Api, key: &str) -> String {
    let leased = api.post("/v1/queues/remind/lease", json!({"wait": "5s"}));
    let leases = leased.expect(200, "lease")["leases"].as_array().unwrap().clone();
    assert_eq!(leases.len(), 1, "the task due now was leased: {leases:?}");
    assert_eq!(leases[0]["task"]["key"], key);
    let lease_id = leases[0]["lease_id"].as_str().unwrap();
    api.post(&format!("/v1/leases/{}/ack", enc(lease_id)), json!({"outcome": "done"})).expect(204, "ack done");
    let task = api.get(&format!("/v1/queues/remind/tasks/{key}"));
    task.expect(200, "the re-armed task")["due_at"].as_str().unwrap().to_owned()
}

#[test]
fn fall_back_a_fixed_hour_fires_once() {
    // 01:10 EDT; 01:00–02:00 happens again as EST from 06:00Z.
    let server = server_at("2026-11-01 05:10:00");
    let api = Api::of(&server);
    assert_eq!(
        schedule(&api, "new", ("0 1-3 * * *", NEW_YORK), json!({})),
        "2026-11-01T07:00:00.000Z",
        "02:00 EST, not 01:00 EST"
    );
    schedule(&api, "now", ("0 1-3 * * *", NEW_YORK), json!({"delay": "0s"}));
    assert_eq!(fire_and_rearm(&api, "now"), "2026-11-01T07:00:00.000Z", "re-armed at 02:00 EST");
    // A wildcard hour runs at both passes, as in Debian cron.
    assert_eq!(schedule(&api, "wild", ("*/30 * * * *", NEW_YORK), json!({})), "2026-11-01T05:30:00.000Z");
}

#[test]
fn spring_forward_a_skipped_hour_fires_after_the_gap() {
    // 01:10 EST; 02:00–03:00 does not happen: clocks go to 03:00 EDT at 07:00Z.
    let server = server_at("2026-03-08 06:10:00");
    let api = Api::of(&server);
    assert_eq!(schedule(&api, "new", ("0 1,2 * * *", NEW_YORK), json!({})), "2026-03-08T07:00:00.000Z", "03:00 EDT");
    schedule(&api, "now", ("0 1,2 * * *", NEW_YORK), json!({"delay": "0s"}));
    assert_eq!(fire_and_rearm(&api, "now"), "2026-03-08T07:00:00.000Z", "re-armed at 03:00 EDT");
}

#[test]
fn a_star_prefixed_weekday_field_ands_the_day_fields() {
    let server = server_at("2026-12-01 00:00:30");
    let api = Api::of(&server);
    // Was due 2026-12-02 (daily) and Wednesday 2026-12-02 (daily too).
    assert_eq!(schedule(&api, "monthly", ("0 0 1 * */1", "UTC"), json!({})), "2027-01-01T00:00:00.000Z");
    assert_eq!(schedule(&api, "mondays", ("0 0 */1 * 1", "UTC"), json!({})), "2026-12-07T00:00:00.000Z");
}
