// The package as ES modules (import) and as CommonJS (require): package.json's exports
// lead each to its own build, dist/esm and dist/cjs, with the same API. Guards against a
// build that only one of them can load, or a CommonJS build read as ES modules.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import * as esm from "punctual-client";
import { startServer, uniqueQueue } from "./helpers.js";

const require = createRequire(import.meta.url);
const cjs = require("punctual-client");

const server = await startServer();
after(() => server.close());

test("import loads dist/esm, require loads dist/cjs", async () => {
  assert.equal(esm.Client, (await import("../dist/esm/index.js")).Client);
  assert.equal(cjs, require("../dist/cjs/index.js"));
  assert.notEqual(esm.Client, cjs.Client);
});

test("both builds export the same names, of the same kinds", () => {
  const shape = (m) => Object.keys(m).filter((k) => k !== "default" && k !== "__esModule").sort().map((k) => [k, typeof m[k]]);
  assert.deepEqual(shape(cjs), shape(esm));
  assert.ok(Object.keys(esm).length >= 20);
});

test("the CommonJS build talks to the server: schedule, get, a typed error", async () => {
  const client = new cjs.Client({ server: server.url });
  const queue = uniqueQueue("cjs");
  const { outcome, task } = await client.schedule(queue, "order-1", { delay: "1h", payload: { order_id: 1 }, maxAttempts: 2 });
  assert.deepEqual([outcome, task.maxAttempts, task.payload], ["created", 2, { order_id: 1 }]);
  assert.equal((await client.get(queue, "order-1")).dueAt, task.dueAt);
  const err = await client.get(queue, "missing").catch((e) => e);
  assert.ok(err instanceof cjs.NotFoundError && err instanceof cjs.PunctualError);
  assert.equal(err.name, "NotFoundError");
});
