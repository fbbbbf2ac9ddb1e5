// One naming convention at the HTTP edge: options and answers are camelCase, the server's
// JSON snake_case, mapped in one place (src/wire.ts). Guards against a mapping that
// re-cases what belongs to the user (a payload, a target's headers and body, an
// action's fields), misses a nested member, or leaves an error naming the wire field.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidArgumentError } from "punctual-client";
import { camelCase, fromWire, snakeCase, SHAPES, toWire } from "../dist/esm/wire.js";
import { startServer, uniqueQueue } from "./helpers.js";

const server = await startServer();
after(() => server.close());
const client = new Client({ server: server.url });

// Keys of the user's own: snake_case, camelCase and others side by side.
const MIXED = { order_id: 1, orderTotal: 2, "x-y": 3, Upper_Snake: 4, nested: [{ line_no: 1, skuCode: "A" }] };

test("key names: snake_case ↔ camelCase, digits and single words unchanged", () => {
  assert.deepEqual(
    ["due_at", "lag_ms", "p99", "oldest_overdue_ms", "queue", "tasks[1].debounce.max_wait"].map(camelCase),
    ["dueAt", "lagMs", "p99", "oldestOverdueMs", "queue", "tasks[1].debounce.maxWait"],
  );
  assert.deepEqual(["dueAt", "lagMs", "p99", "maxAttempts", "queue"].map(snakeCase), ["due_at", "lag_ms", "p99", "max_attempts", "queue"]);
});

test("fromWire: nested objects and arrays re-cased; a task's payload and target headers and body untouched", () => {
  const wire = {
    tasks: [
      {
        due_at: "2030-01-01T00:00:00.000Z",
        payload: MIXED,
        repeat: { cron_syntax: "spring" },
        target: { url: "https://x.example", headers: { X_Trace_Id: "t" }, body: { callback_url: "u" }, method: "POST" },
        unique_for: { window: "1h", dead: true },
      },
    ],
    next_cursor: null,
  };
  assert.deepEqual(fromWire(wire, SHAPES.taskPage), {
    tasks: [
      {
        dueAt: "2030-01-01T00:00:00.000Z",
        payload: MIXED,
        repeat: { cronSyntax: "spring" },
        target: { url: "https://x.example", headers: { X_Trace_Id: "t" }, body: { callback_url: "u" }, method: "POST" },
        uniqueFor: { window: "1h", dead: true },
      },
    ],
    nextCursor: null,
  });
  assert.deepEqual(fromWire({ task: { payload: MIXED, last_error: null } }, SHAPES.leases), { task: { payload: MIXED, lastError: null } });
  assert.deepEqual(fromWire({ action: { url_env: "U", fields: { order_id: "{{ x }}" } } }, SHAPES.settings), {
    action: { urlEnv: "U", fields: { order_id: "{{ x }}" } },
  });
  assert.deepEqual(fromWire([{ key: "k", error: { code: "invalid_argument", field: "tasks[0].unique_for" } }], SHAPES.itemResults), [
    { key: "k", error: { code: "invalid_argument", field: "tasks[0].uniqueFor" } },
  ]);
});

test("toWire: keys to snake_case, Dates as RFC 3339, undefined members left out, the user's own untouched", () => {
  const until = new Date(Date.UTC(2030, 0, 1));
  assert.deepEqual(toWire({ defaults: { maxAttempts: 3, repeat: { cronSyntax: "quartz", until } }, groupRate: undefined }, SHAPES.settings), {
    defaults: { max_attempts: 3, repeat: { cron_syntax: "quartz", until: "2030-01-01T00:00:00.000Z" } },
  });
  assert.deepEqual(toWire({ action: { kind: "redis-stream", routingKey: "r", fields: { shopName: "{{ s }}" } } }, SHAPES.settings), {
    action: { kind: "redis-stream", routing_key: "r", fields: { shopName: "{{ s }}" } },
  });
  assert.deepEqual(toWire({ payload: MIXED, dueAt: until }, SHAPES.task), { payload: MIXED, due_at: "2030-01-01T00:00:00.000Z" });
});

test("a key named __proto__ stays an own member, not the object's prototype", () => {
  const out = fromWire(JSON.parse('{"__proto__": {"polluted": true}, "due_at": "x"}'));
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.deepEqual(Object.keys(out), ["__proto__", "dueAt"]);
  assert.equal({}.polluted, undefined);
});

test("through the server: a payload and a target's headers and body come back with their own keys", async () => {
  const queue = uniqueQueue("wire");
  const target = { url: "https://hooks.invalid/cancel", headers: { X_Trace_Id: "t", xShopId: "2" }, body: { callback_url: "u", replyTo: "r" } };
  const { task } = await client.schedule(queue, "k", { delay: "1h", payload: MIXED, target, maxAttempts: 4 });
  for (const t of [task, await client.get(queue, "k"), (await client.listPage(queue)).tasks[0]]) {
    assert.deepEqual(t.payload, MIXED);
    assert.deepEqual([t.target.headers, t.target.body, t.maxAttempts], [target.headers, target.body, 4]);
  }
  await client.schedule(queue, "pulled", { payload: MIXED });
  const [lease] = await client.lease(queue, { max: 1 });
  assert.deepEqual([lease.task.key, lease.task.payload], ["pulled", MIXED]);
  assert.ok(lease.leaseId && lease.deliveryId && lease.expiresAt && lease.scheduledFor);
});

test("through the server: settings camelCase both ways, an action's fields as given, a getSettings answer sent back", async () => {
  const queue = uniqueQueue("wire");
  const fields = { order_id: "{{ payload.order_id }}", shopName: "shop" };
  const action = { kind: "redis-stream", url: "redis://redis.invalid:6379", stream: "orders", maxlen: 1000, fields };
  const put = await client.putSettings(queue, { action, groupConcurrency: 2, groupRate: "10/1m", defaults: { maxAttempts: 7 } });
  assert.deepEqual(put.action, action);
  assert.deepEqual([put.groupConcurrency, put.groupRate, put.defaults.maxAttempts], [2, "10/1m", 7]);
  assert.ok(put.updatedAt && put.defaults.backoff.initial);
  const again = await client.putSettings(queue, put, { ifVersion: put.version });
  assert.deepEqual({ ...again, version: put.version, updatedAt: put.updatedAt }, put, "a GET answer sent back changes nothing");
  const refused = await client.patchSettings(queue, { action: { kind: "webhook", urlEnv: "PUNCTUAL_TS_UNSET_HOOK_URL" } }).catch((e) => e);
  assert.ok(refused instanceof InvalidArgumentError);
  assert.equal(refused.field, "action.urlEnv", "the field named as the option was written");
  await client.deleteSettings(queue);
});

test("through the server: queue stats, calendars and access read camelCase", async () => {
  const queue = uniqueQueue("wire");
  await client.schedule(queue, "k", { delay: "1h" });
  const stats = await client.queue(queue);
  assert.equal(typeof stats.oldestOverdueMs, "number");
  assert.ok("p50" in stats.lagMs && "nextDueAt" in stats);
  const summary = (await client.queues()).find((q) => q.name === queue);
  assert.equal(summary.nextDueAt, stats.nextDueAt);
  const name = uniqueQueue("wire-cal").replaceAll(".", "-");
  const cal = await client.putCalendar(name, { tz: "UTC", hours: { mon: ["09:00-17:00"] }, workdays: [{ date: "2030-01-05", as: "mon" }] });
  assert.deepEqual([cal.holidayYears, cal.enteredUntil === undefined, typeof cal.updatedAt], [[2030], false, "string"]);
  await client.deleteCalendar(name, { ifVersion: cal.version });
  assert.deepEqual(await client.access(), {
    name: "anyone",
    permissions: ["read", "schedule", "work", "admin"],
    queues: ["*"],
  });
});
