// The worker's connection log: once when the server is lost, once when it is back. Guards
// against a worker that takes the late answer of a request sent before the loss (an ack the
// server took as it went away) for the server being back: it would log "reconnected", then
// "server unreachable" a second time for the same outage (seen as a flaky s07).
//
// A proxy in front of the real server makes the outage: it holds the ack, drops the long
// polls, then lets the held ack through while the polls still fail.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import { Client, Worker } from "punctual-client";
import { startServer, waitUntil, uniqueQueue, recordingLogger } from "./helpers.js";

const server = await startServer();
after(() => server.close());

/** A proxy to the server that, while `down`, drops leases and holds acks. */
async function outageProxy() {
  let down = false;
  let releaseAck = null;
  let ackHeld;
  const held = new Promise((r) => (ackHeld = r));
  const forward = (req, res, body) => {
    const upstream = request(`${server.url}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => req.socket.destroy());
    upstream.end(body);
  };
  const proxy = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    if (down && req.url === "/v1/acks") {
      releaseAck = () => forward(req, res, body);
      ackHeld();
    } else if (down && req.url.endsWith("/lease")) {
      await held; // the ack left the worker before this poll fails
      req.socket.destroy();
    } else {
      forward(req, res, body);
    }
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${proxy.address().port}`,
    goDown: () => (down = true),
    comeBack: () => (down = false),
    held: () => releaseAck !== null,
    releaseAck: () => releaseAck(),
    close: () => new Promise((r) => (proxy.closeAllConnections(), proxy.close(r))),
  };
}

test("the answer to an ack sent before the server was lost does not announce it back", async () => {
  const proxy = await outageProxy();
  const direct = new Client({ server: server.url });
  const queue = uniqueQueue("conn");
  await direct.schedule(queue, "before");
  const log = recordingLogger();
  const seen = [];
  const worker = new Worker(new Client({ server: proxy.url }), { logger: log, waitMs: 1000, reconnectMinMs: 20, reconnectMaxMs: 100 });
  worker.handle(queue, async (t) => {
    seen.push(t.key);
    if (t.key === "before") proxy.goDown(); // its ack and the next poll meet the outage
  });
  await worker.start();
  try {
    await waitUntil(() => proxy.held() && log.count("server unreachable; reconnecting with backoff") === 1, 10_000, {
      what: "the ack held and the outage noticed",
    });
    proxy.releaseAck();
    await waitUntil(() => log.count("acked") === 1, 10_000, { what: "the held ack answered" });
    assert.equal(log.count("reconnected"), 0, "the ack was sent before the loss");

    proxy.comeBack();
    await direct.schedule(queue, "after");
    await waitUntil(() => seen.includes("after"), 10_000, { what: "a task after the outage" });
    assert.equal(log.count("server unreachable; reconnecting with backoff"), 1);
    assert.equal(log.count("reconnected"), 1);
  } finally {
    await worker.stop({ graceMs: 1000 });
    await proxy.close();
  }
});
