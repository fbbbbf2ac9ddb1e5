// Scenario 11: a scoped token. Guards against a client that turns the server's 403
// into something callers cannot tell from other refusals, loses its message, or
// against a refusal that still stores the task.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client, ForbiddenError, NotFoundError, PunctualError } from "punctual-client";
import { startServer, uniqueQueue } from "./helpers.js";

const fullToken = `full-${process.pid}-${Date.now().toString(36)}`;
const readerToken = `reader-${process.pid}-${Date.now().toString(36)}`;
const server = await startServer({
  config: `tokens = ["${fullToken}"]

[[access]]
token = "${readerToken}"
permissions = ["read"]
queues = ["scoped.*"]
`,
});
after(() => server.close());

test("s11 scoped token: read-only on scoped.* gets a task, scheduling is forbidden and stores nothing, another queue is unreadable", async () => {
  const full = new Client({ server: server.url, token: fullToken });
  const reader = new Client({ server: server.url, token: readerToken });
  const scoped = uniqueQueue("scoped.ts");
  const other = uniqueQueue("ts.s11");

  await full.schedule(scoped, "readable", { payload: { v: 1 }, delay: "1h" });
  const task = await reader.get(scoped, "readable");
  assert.equal(task.key, "readable");
  assert.equal(task.state, "scheduled");
  assert.deepEqual(task.payload, { v: 1 });

  const refused = await reader.schedule(scoped, "refused", { payload: { v: 2 } }).then(
    () => assert.fail("the scoped token scheduled"),
    (e) => e,
  );
  assert.ok(refused instanceof ForbiddenError && refused instanceof PunctualError, String(refused));
  assert.equal(refused.status, 403);
  assert.equal(refused.code, "forbidden");
  assert.match(refused.message, /schedule permission/);
  assert.ok(refused.message.includes(`'${scoped}'`), refused.message);
  const stored = await full.get(scoped, "refused").catch((e) => e);
  assert.ok(stored instanceof NotFoundError, `the refused task was stored: ${JSON.stringify(stored)}`);

  const replaced = await reader.schedule(scoped, "readable", { payload: { v: 3 } }).catch((e) => e);
  assert.ok(replaced instanceof ForbiddenError, String(replaced));
  assert.equal(replaced.status, 403);
  assert.deepEqual((await full.get(scoped, "readable")).payload, { v: 1 });

  await full.schedule(other, "elsewhere", { delay: "1h" });
  assert.equal((await full.get(other, "elsewhere")).state, "scheduled");
  const unread = await reader.get(other, "elsewhere").catch((e) => e);
  assert.ok(unread instanceof ForbiddenError, String(unread));
  assert.equal(unread.status, 403);
  assert.equal(unread.code, "forbidden");
  assert.match(unread.message, /read permission/);
  assert.ok(unread.message.includes(`'${other}'`), unread.message);
});
