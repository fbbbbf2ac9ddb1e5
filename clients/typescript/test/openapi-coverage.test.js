// The client against the server's OpenAPI document: every operation the server has is
// offered by a Client method or listed below as deliberately not offered, with the
// reason. Guards against a server that gains a route this client silently lacks.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "punctual-client";
import { startServer } from "./helpers.js";

/** Each operation of the API, by method and path, and the Client method that offers it. */
const OFFERED = {
  "PUT /v1/queues/{queue}/tasks/{key}": "schedule",
  "POST /v1/queues/{queue}/tasks": "scheduleMany",
  "GET /v1/queues/{queue}/tasks/{key}": "get",
  "GET /v1/queues/{queue}/tasks/{key}/history": "history",
  "DELETE /v1/queues/{queue}/tasks/{key}": "cancel",
  "DELETE /v1/queues/{queue}/tags/{tag}": "cancelTag",
  "GET /v1/queues/{queue}/tasks": "listPage",
  "DELETE /v1/queues/{queue}/tasks": "purge",
  "GET /v1/queues/{queue}/groups": "groupsPage",
  "GET /v1/queues": "queues",
  "GET /v1/queues/{queue}": "queue",
  "GET /v1/queues/{queue}/settings": "getSettings",
  "PUT /v1/queues/{queue}/settings": "putSettings",
  "PATCH /v1/queues/{queue}/settings": "patchSettings",
  "DELETE /v1/queues/{queue}/settings": "deleteSettings",
  "POST /v1/queues/{queue}/pause": "pause",
  "POST /v1/queues/{queue}/resume": "resume",
  "GET /v1/calendars": "calendars",
  "GET /v1/calendars/{name}": "getCalendar",
  "PUT /v1/calendars/{name}": "putCalendar",
  "DELETE /v1/calendars/{name}": "deleteCalendar",
  "GET /v1/queues/{queue}/dead": "deadPage",
  "POST /v1/queues/{queue}/dead/{key}/retry": "retryDead",
  "POST /v1/queues/{queue}/dead/retry": "retryDeadMany",
  "DELETE /v1/queues/{queue}/dead/{key}": "deleteDead",
  "POST /v1/queues/{queue}/lease": "lease",
  "POST /v1/leases/{lease_id}/ack": "ack",
  "POST /v1/acks": "acks",
  "POST /v1/leases/{lease_id}/extend": "extend",
  "GET /v1/access": "access",
  "GET /v1/audit": "auditPage",
};

/** Operations this client leaves out on purpose, and why. */
const NOT_OFFERED = {
  "GET /": "the dashboard's HTML page, for browsers",
  "GET /healthz": "a liveness probe for orchestrators, not an application call",
  "GET /readyz": "a readiness probe for orchestrators, not an application call",
  "GET /metrics": "Prometheus text for a scraper",
  "GET /openapi.json": "the API's description, read by tools (and by this test)",
  "GET /v1/queues/{queue}/activity": "the dashboard's in-memory view of one server's recent outcomes, lost on restart",
};

const server = await startServer();
after(() => server.close());

async function serverOperations() {
  const doc = await (await fetch(`${server.url}/openapi.json`)).json();
  const methods = ["get", "put", "post", "patch", "delete", "head", "options"];
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    methods.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`),
  );
}

test("every operation of the server's OpenAPI document is offered or listed as not offered", async () => {
  const operations = await serverOperations();
  assert.ok(operations.length > 30, `the document lists ${operations.length} operations`);
  const unknown = operations.filter((op) => !(op in OFFERED) && !(op in NOT_OFFERED));
  assert.deepEqual(unknown, [], "operations this client neither offers nor lists in NOT_OFFERED");
  const stale = [...Object.keys(OFFERED), ...Object.keys(NOT_OFFERED)].filter((op) => !operations.includes(op));
  assert.deepEqual(stale, [], "operations in the tables that the server no longer has");
});

test("each offered operation's method is on Client", () => {
  const missing = Object.entries(OFFERED).filter(([, method]) => typeof Client.prototype[method] !== "function");
  assert.deepEqual(missing, []);
  for (const op of Object.keys(OFFERED)) assert.ok(!(op in NOT_OFFERED), `${op} is both offered and not`);
});
