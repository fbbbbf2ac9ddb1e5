// Scenario 9: signature verification against deliveries signed by the real server.
// Guards against a verifier that parses the body before checking it, accepts replays
// or checks something other than docs/webhooks.md's scheme.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { createHmac } from "node:crypto";
import { Client, verifySignature } from "punctual-client";
import { startServer, waitUntil, freePort } from "./helpers.js";

const SECRET = "whsec-scenario-9";
const received = [];
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    received.push({ body: Buffer.concat(chunks), header: req.headers["punctual-signature"] });
    res.writeHead(200).end();
  });
});
const hookPort = await freePort();
await new Promise((r) => receiver.listen(hookPort, "127.0.0.1", r));

const server = await startServer({
  env: { S09_HOOK_SECRET: SECRET },
  config: `
[egress]
allow = ["127.0.0.1"]

[queues."s09.hook".action]
kind = "webhook"
url = "http://127.0.0.1:${hookPort}/hook"
secret_env = "S09_HOOK_SECRET"
timeout = "5s"
`,
});
after(async () => {
  await server.close();
  receiver.close();
});

test("s09 signature verification: the docs' test vector", () => {
  const header = "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af";
  assert.equal(verifySignature({ body: "{}", header, secret: "whsec", now: 1700000000_000 }), true);
  assert.equal(verifySignature({ body: "{}", header, secret: "whsec", now: 1700000301_000 }), false);
  assert.equal(verifySignature({ body: "{}", header: "t=1700000000", secret: "whsec", now: 1700000000_000 }), false);
  assert.equal(verifySignature({ body: "{}", header: "garbage", secret: "whsec" }), false);
  assert.equal(verifySignature({ body: "{}", header: "t=1700000000,v1=00", secret: "whsec", now: 1700000000_000 }), false);
});

// A header as a server rotating its secret sends it: one v1 per secret, in the order given.
function signed(body, secrets, t) {
  return `t=${t}` + secrets.map((s) => `,v1=${createHmac("sha256", s).update(`${t}.${body}`).digest("hex")}`).join("");
}

test("s09 signature verification: rotated secrets, any v1 under any secret passes", () => {
  const body = '{"key":"order-1"}';
  const t = 1700000000;
  const now = t * 1000;
  assert.equal(signed("{}", ["whsec"], t), "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af");
  const both = signed(body, ["whsec-new", "whsec-old"], t);
  assert.equal(verifySignature({ body, header: both, secrets: ["whsec-new"], now }), true, "the new secret");
  assert.equal(verifySignature({ body, header: both, secrets: ["whsec-old"], now }), true, "the old secret");
  assert.equal(verifySignature({ body, header: both, secrets: ["whsec-new", "whsec-old"], now }), true, "both");
  assert.equal(verifySignature({ body, header: both, secret: "whsec-old", now }), true, "one secret");
  assert.equal(verifySignature({ body, header: both, secrets: [Buffer.from("whsec-new")], now }), true, "bytes");
  assert.equal(verifySignature({ body, header: both, secrets: ["whsec-other"], now }), false, "another secret");
  assert.equal(verifySignature({ body, header: both, secrets: [], now }), false, "no secret");
  const single = signed(body, ["whsec-new"], t);
  assert.equal(verifySignature({ body, header: single, secrets: ["whsec-other", "whsec-new"], now }), true, "the receiver's second secret");
  assert.equal(verifySignature({ body, header: `${single},v2=abc,x`, secrets: ["whsec-new"], now }), true, "unknown fields ignored");
  assert.equal(verifySignature({ body: body.replace("1", "2"), header: both, secrets: ["whsec-new", "whsec-old"], now }), false, "modified body");
  assert.equal(verifySignature({ body, header: both, secrets: ["whsec-new", "whsec-old"], now: now + 301_000 }), false, "stale");
  assert.equal(verifySignature({ body, header: both.replace(/^t=\d+,/, ""), secrets: ["whsec-new"], now }), false, "no t");
  assert.equal(verifySignature({ body, header: `t=${t}`, secrets: ["whsec-new"], now }), false, "no v1");
});

test("s09 signature verification: the real server's signature passes; a modified body, an old signature, a wrong secret fail", async () => {
  const client = new Client({ server: server.url });
  await client.schedule("s09.hook", "order-1", { payload: { order_id: 1, note: "é ✓" }, tags: ["t"] });
  await waitUntil(() => received.length >= 1, 10_000, { what: "the webhook delivery" });
  const { body, header } = received[0];
  assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  assert.equal(JSON.parse(body).key, "order-1");
  assert.equal(verifySignature({ body, header, secret: SECRET }), true, "raw bytes");
  assert.equal(verifySignature({ body: body.toString("utf8"), header, secret: SECRET }), true, "as a string");

  const modified = Buffer.from(body.toString("utf8").replace('"order_id":1', '"order_id":2'));
  assert.notDeepEqual(modified, body);
  assert.equal(verifySignature({ body: modified, header, secret: SECRET }), false, "modified body");

  const t = Number(/t=(\d+)/.exec(header)[1]);
  assert.equal(verifySignature({ body, header, secret: SECRET, now: (t + 301) * 1000 }), false, "older than the tolerance");
  assert.equal(verifySignature({ body, header, secret: SECRET, now: (t + 299) * 1000 }), true, "within the tolerance");
  assert.equal(verifySignature({ body, header, secret: SECRET, toleranceSec: 10, now: (t + 11) * 1000 }), false);
  assert.equal(verifySignature({ body, header, secret: "whsec-wrong" }), false, "wrong secret");
});
