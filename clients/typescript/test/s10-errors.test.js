// Scenario 10: every error code mapped to its class, with the server's message and code.
// Guards against errors that callers can only tell apart by parsing messages.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import {
  Client,
  PunctualError,
  NotFoundError,
  ConflictError,
  InvalidArgumentError,
  UnauthorizedError,
  ForbiddenError,
  UnavailableError,
  errorFromResponse,
} from "punctual-client";
import { startServer, freePort, uniqueQueue } from "./helpers.js";

const server = await startServer();
const guarded = await startServer({ args: ["--token", "s3cret"] });
after(() => Promise.all([server.close(), guarded.close()]));

test("s10 not_found: get of a missing task", async () => {
  const client = new Client({ server: server.url });
  const err = await client.get(uniqueQueue("s10"), "missing").catch((e) => e);
  assert.ok(err instanceof NotFoundError && err instanceof PunctualError);
  assert.equal(err.code, "not_found");
  assert.equal(err.status, 404);
  assert.ok(err.message.length > 0);
});

test("s10 conflict: if_exists error on an existing task", async () => {
  const client = new Client({ server: server.url });
  const queue = uniqueQueue("s10");
  await client.schedule(queue, "k", { delay: "1h" });
  const err = await client.schedule(queue, "k", { delay: "1h", ifExists: "error" }).catch((e) => e);
  assert.ok(err instanceof ConflictError);
  assert.equal(err.code, "conflict");
  assert.equal(err.status, 409);
});

test("s10 invalid_argument: a bad delay names the field", async () => {
  const client = new Client({ server: server.url });
  const err = await client.schedule(uniqueQueue("s10"), "k", { delay: "soon-ish" }).catch((e) => e);
  assert.ok(err instanceof InvalidArgumentError);
  assert.equal(err.code, "invalid_argument");
  assert.equal(err.field, "delay");
  assert.ok(err.message.length > 0);
});

test("s10 unauthorized: a server with a token, a call without it; with it, the call passes", async () => {
  const anon = new Client({ server: guarded.url, token: "" });
  const err = await anon.queues().catch((e) => e);
  assert.ok(err instanceof UnauthorizedError);
  assert.equal(err.code, "unauthorized");
  const withToken = new Client({ server: guarded.url, token: "s3cret" });
  assert.ok(Array.isArray(await withToken.queues()));
});

test("s10 unavailable: no server on the port, after the client's retries", async () => {
  const port = await freePort();
  let calls = 0;
  const client = new Client({ server: `http://127.0.0.1:${port}`, retries: 2, retryBaseMs: 10 });
  const realFetch = globalThis.fetch;
  globalThis.fetch = (...a) => (calls++, realFetch(...a));
  try {
    const err = await client.get("q", "k").catch((e) => e);
    assert.ok(err instanceof UnavailableError);
    assert.equal(err.code, "unavailable");
    assert.equal(calls, 3, "one call and two retries");
  } finally {
    globalThis.fetch = realFetch;
  }
});

test("s10 unavailable: a 503 is retried, then mapped", async () => {
  let calls = 0;
  const stub = createServer((req, res) => {
    calls++;
    res.writeHead(503, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "unavailable", message: "the store is unreachable" } }));
  });
  await new Promise((r) => stub.listen(0, "127.0.0.1", r));
  try {
    const client = new Client({ server: `http://127.0.0.1:${stub.address().port}`, retries: 2, retryBaseMs: 10 });
    const err = await client.get("q", "k").catch((e) => e);
    assert.ok(err instanceof UnavailableError);
    assert.equal(err.message, "the store is unreachable");
    assert.equal(calls, 3);
  } finally {
    stub.close();
  }
});

// The client's decoder checked on the API's 403 body, first directly, then through a
// stub answering it over HTTP; scenario 11 (s11-scoped-token) gets one from the server.
test("s10 forbidden: the API's 403 body decoded", async () => {
  const body = { error: { code: "forbidden", message: "this token lacks the admin permission for queue order.cancel" } };
  const direct = errorFromResponse(403, body);
  assert.ok(direct instanceof ForbiddenError);
  assert.equal(direct.code, "forbidden");
  assert.equal(direct.message, body.error.message);

  const stub = createServer((req, res) => {
    res.writeHead(403, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  });
  await new Promise((r) => stub.listen(0, "127.0.0.1", r));
  try {
    const client = new Client({ server: `http://127.0.0.1:${stub.address().port}` });
    const err = await client.pause("order.cancel").catch((e) => e);
    assert.ok(err instanceof ForbiddenError);
    assert.equal(err.status, 403);
    assert.equal(err.message, body.error.message);
  } finally {
    stub.close();
  }
});
