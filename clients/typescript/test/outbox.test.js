// The outbox helpers against the real databases: PostgreSQL (pg) and MySQL/MariaDB
// (mysql2/promise).
//
// Each run creates a database of its own on each server (punctual_ts_<random>), creates
// the outbox tables by running the repository's DDL (crates/punctual-outbox/sql), and
// drops the database at the end. The servers come from PUNCTUAL_TEST_POSTGRES_URL
// (default postgres://postgres@127.0.0.1:5432/postgres) and PUNCTUAL_TEST_MYSQL_URL
// (default mysql://punctual:punctual@127.0.0.1:3306); one that does not answer fails
// this file (`bash .ci/run services` starts both), it never skips it.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import mysql from "mysql2/promise";
import { Client, outbox, Outbox } from "punctual-client";
import { taskBody } from "../dist/esm/wire.js";
import { uniqueQueue } from "./helpers.js";

const SQL_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../crates/punctual-outbox/sql");
const POSTGRES_URL = process.env.PUNCTUAL_TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const MYSQL_URL = process.env.PUNCTUAL_TEST_MYSQL_URL || "mysql://punctual:punctual@127.0.0.1:3306";
const startThem = (variable) => `start it with \`bash .ci/run services\`, or point ${variable} at one that runs`;

/** The statements of a DDL file with every punctual_outbox renamed `table`, split on the ; outside $$ bodies. */
function ddlStatements(dialect, table) {
  const text = readFileSync(resolve(SQL_DIR, `${dialect}.sql`), "utf8").replaceAll("punctual_outbox", table);
  const code = text
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("--"))
    .join("\n");
  const statements = [];
  let current = "";
  let inBody = false;
  for (const part of code.split(/(\$\$|;)/)) {
    if (part === ";" && !inBody) {
      statements.push(current.trim());
      current = "";
      continue;
    }
    if (part === "$$") inBody = !inBody;
    current += part;
  }
  statements.push(current.trim());
  return statements.filter(Boolean);
}

const name = `punctual_ts_${randomBytes(6).toString("hex")}`;

/** A database of this run's own on PostgreSQL; each connection opened is ended at the end. */
async function postgres() {
  const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await admin.connect().catch((err) => {
    throw new Error(`PostgreSQL at ${POSTGRES_URL} does not answer (${err.message}): ${startThem("PUNCTUAL_TEST_POSTGRES_URL")}`);
  });
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const opened = [];
  return {
    dialect: "postgres",
    async connect() {
      const client = new pg.Client({ connectionString: url.href });
      await client.connect();
      opened.push(client);
      return client;
    },
    begin: (client) => client.query("BEGIN"),
    commit: (client) => client.query("COMMIT"),
    rollback: (client) => client.query("ROLLBACK"),
    async select(client, table, queue) {
      return (await client.query(`SELECT queue, key, op, body FROM ${table} WHERE queue = $1 ORDER BY id`, [queue])).rows;
    },
    async close() {
      for (const client of opened) await client.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.end();
    },
  };
}

/** A database of this run's own on MySQL/MariaDB; each connection opened is ended at the end. */
async function mariadb() {
  const url = new URL(MYSQL_URL);
  const params = {
    host: url.hostname || "127.0.0.1",
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username || "root"),
    password: decodeURIComponent(url.password),
    connectTimeout: 5000,
  };
  const admin = await mysql.createConnection(params).catch((err) => {
    throw new Error(`MySQL/MariaDB at ${MYSQL_URL} does not answer (${err.message}): ${startThem("PUNCTUAL_TEST_MYSQL_URL")}`);
  });
  await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
  const opened = [];
  return {
    dialect: "mysql",
    async connect() {
      const connection = await mysql.createConnection({ ...params, database: name });
      opened.push(connection);
      return connection;
    },
    begin: (connection) => connection.beginTransaction(),
    commit: (connection) => connection.commit(),
    rollback: (connection) => connection.rollback(),
    async select(connection, table, queue) {
      return (await connection.query(`SELECT queue, \`key\`, op, body FROM ${table} WHERE queue = ? ORDER BY id`, [queue]))[0];
    },
    async close() {
      for (const connection of opened) await connection.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.end();
    },
  };
}

const databases = [];
const closeAll = async () => {
  for (const db of databases) await db.close();
};
try {
  databases.push(await postgres());
  databases.push(await mariadb());
} catch (err) {
  await closeAll();
  throw err;
}
after(closeAll);

for (const db of databases) {
  db.createOutbox = async (table = "punctual_outbox") => {
    const connection = await db.connect();
    for (const statement of ddlStatements(db.dialect, table)) await connection.query(statement);
  };
  /** The rows of `queue` as another session sees them (committed only), by id: [queue, key, op, body]. */
  db.rows = async (queue, table = "punctual_outbox") => {
    db.reader ??= await db.connect();
    const rows = await db.select(db.reader, table, queue);
    return rows.map((r) => [r.queue, r.key, r.op, typeof r.body === "string" ? JSON.parse(r.body) : r.body]);
  };
  await db.createOutbox();
}

// One schedule with every field of the API, and the body it must be, written out by hand:
// a builder that drops or renames a field fails the literal comparison. The payload and
// the target's headers and body mix snake_case and camelCase keys: they are the user's
// own and keep them.
const PAYLOAD = { order_id: 1234, orderTotal: 99.5, note: "café ☕", items: [1, { line_no: 1, skuCode: "A" }] };
const HOOK_BODY = { callback_url: "https://shop.example/cb", replyTo: "ops" };
const RICH = {
  payload: PAYLOAD,
  dueAt: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)),
  repeat: { cron: "0 9 * * MON-FRI", tz: "Asia/Shanghai", times: 3, cronSyntax: "vixie" },
  tags: ["order-1234", "merchant-42"],
  maxAttempts: 5,
  backoff: { initial: "2s", factor: 3, max: "1m" },
  ifExists: "replace",
  target: { url: "https://shop.example/hooks/cancel", method: "POST", headers: { "x-shop": "1", X_Trace_Id: "t", xShopId: "2" }, timeout: "5s", body: HOOK_BODY },
  priority: 7,
  debounce: { maxWait: "5m" },
  group: "merchant-42",
  uniqueFor: { window: "1h", dead: true },
  calendar: "cn-office",
  align: "next_open",
  misfire: "fire_all",
  catchUpMax: 3,
  overlap: "queue",
  jitter: 30_000,
};
const RICH_BODY = {
  due_at: "2030-01-02T03:04:05.000Z",
  payload: { order_id: 1234, orderTotal: 99.5, note: "café ☕", items: [1, { line_no: 1, skuCode: "A" }] },
  repeat: { cron: "0 9 * * MON-FRI", tz: "Asia/Shanghai", times: 3, cron_syntax: "vixie" },
  tags: ["order-1234", "merchant-42"],
  max_attempts: 5,
  backoff: { initial: "2s", factor: 3, max: "1m" },
  if_exists: "replace",
  target: {
    url: "https://shop.example/hooks/cancel",
    method: "POST",
    headers: { "x-shop": "1", X_Trace_Id: "t", xShopId: "2" },
    timeout: "5s",
    body: { callback_url: "https://shop.example/cb", replyTo: "ops" },
  },
  priority: 7,
  debounce: { max_wait: "5m" },
  group: "merchant-42",
  unique_for: { window: "1h", dead: true },
  calendar: "cn-office",
  align: "next_open",
  misfire: "fire_all",
  catch_up_max: 3,
  overlap: "queue",
  jitter: 30000,
};

/** The JSON body client.schedule PUTs for these options, caught by a local HTTP server. */
async function bodyTheClientSends(queue, key, options) {
  const sent = [];
  const http = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      sent.push({ method: req.method, url: req.url, body: JSON.parse(text) });
      res.writeHead(200, { "content-type": "application/json" }).end('{"outcome":"created","task":null}');
    });
  });
  await new Promise((ok) => http.listen(0, "127.0.0.1", ok));
  try {
    await new Client({ server: `http://127.0.0.1:${http.address().port}`, retries: 0 }).schedule(queue, key, options);
  } finally {
    await new Promise((ok) => http.close(ok));
  }
  assert.equal(sent.length, 1);
  assert.equal(sent[0].method, "PUT");
  assert.equal(sent[0].url, `/v1/queues/${encodeURIComponent(queue)}/tasks/${encodeURIComponent(key)}`);
  return sent[0].body;
}

const BAD_TABLE_NAMES = [
  "", "punctual outbox", "punctual_outbox; DROP TABLE orders", "punctual-outbox", "1outbox", "a.b.c", "app.",
  ".outbox", '"punctual_outbox"', "`punctual_outbox`", "outbox--", "tåble", 42,
];

const REFUSED = [
  ["delay and dueAt", (c, q) => outbox.schedule(c, q, "k", { delay: "1m", dueAt: "2030-01-01T00:00:00Z" })],
  ["an empty key", (c, q) => outbox.schedule(c, q, "", { delay: "1m" })],
  ["an empty queue", (c, q) => outbox.schedule(c, "", "k", { delay: "1m" })],
  ["a key not a string", (c, q) => outbox.cancel(c, q, 42)],
  ["an empty cancelled key", (c, q) => outbox.cancel(c, q, "")],
  ["an empty tag", (c, q) => outbox.cancelTag(c, q, "")],
  ["an unknown dialect", (c, q) => outbox.cancel(c, q, "k", { dialect: "sqlite" })],
];

for (const db of databases) {
  const { dialect } = db;

  test(`${dialect}: a schedule committed is one row whose body is what client.schedule sends`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    const id = await outbox.schedule(connection, queue, "order-1234", RICH);
    assert.match(id, /^[1-9][0-9]*$/);
    assert.deepEqual(await db.rows(queue), [], "the helper does not commit: nothing is visible before the caller commits");
    await db.commit(connection);

    const rows = await db.rows(queue);
    assert.equal(rows.length, 1);
    const [rowQueue, rowKey, op, body] = rows[0];
    assert.deepEqual([rowQueue, rowKey, op], [queue, "order-1234", "schedule"]);
    assert.deepEqual(body, RICH_BODY);
    assert.deepEqual(body, taskBody(RICH));
    assert.deepEqual(body, await bodyTheClientSends(queue, "order-1234", RICH));
  });

  test(`${dialect}: schedules of a few fields, in id order; an Outbox object`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    const box = new Outbox();
    const first = await box.schedule(connection, queue, "order-1", { delay: "30m", payload: { order_id: 1 } });
    const second = await box.schedule(connection, queue, "order-2", { delay: 90_000, misfire: "skip", misfireAfter: "2h" });
    const third = await outbox.schedule(connection, queue, "order-3");
    await db.commit(connection);
    assert.ok(BigInt(first) < BigInt(second) && BigInt(second) < BigInt(third));
    assert.deepEqual(await db.rows(queue), [
      [queue, "order-1", "schedule", { delay: "30m", payload: { order_id: 1 } }],
      [queue, "order-2", "schedule", { delay: 90000, misfire: "skip", misfire_after: "2h" }],
      [queue, "order-3", "schedule", {}],
    ]);
  });

  test(`${dialect}: a schedule rolled back leaves no row`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    await outbox.schedule(connection, queue, "order-1234", { delay: "30m", payload: { order_id: 1234 } });
    await outbox.cancel(connection, queue, "order-1");
    await db.rollback(connection);
    assert.deepEqual(await db.rows(queue), []);
  });

  test(`${dialect}: cancel and cancelTag rows`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    await outbox.cancel(connection, queue, "order-1234");
    await outbox.cancelTag(connection, queue, "merchant-42");
    await new Outbox().cancelTag(connection, queue, "flow/9");
    await db.commit(connection);
    assert.deepEqual(await db.rows(queue), [
      [queue, "order-1234", "cancel", null],
      [queue, "merchant-42", "cancel_tag", null],
      [queue, "flow/9", "cancel_tag", null],
    ]);
  });

  test(`${dialect}: a table of another name`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const table = `shop_outbox_${randomBytes(3).toString("hex")}`;
    await db.createOutbox(table);
    const connection = await db.connect();
    await db.begin(connection);
    const shop = new Outbox({ table });
    await shop.schedule(connection, queue, "order-1", { delay: "30m" });
    await shop.cancel(connection, queue, "order-2");
    await outbox.cancelTag(connection, queue, "flow-9", { table });
    await new Outbox({ table: "nowhere" }).cancel(connection, queue, "order-3", { table }); // the call's wins
    await db.commit(connection);
    assert.deepEqual(await db.rows(queue, table), [
      [queue, "order-1", "schedule", { delay: "30m" }],
      [queue, "order-2", "cancel", null],
      [queue, "flow-9", "cancel_tag", null],
      [queue, "order-3", "cancel", null],
    ]);
    assert.deepEqual(await db.rows(queue), [], "nothing in the default table");
  });

  test(`${dialect}: a bad table name is refused and writes no row`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    for (const table of BAD_TABLE_NAMES) {
      const refused = { name: "TypeError", message: /outbox table name/ };
      await assert.rejects(outbox.schedule(connection, queue, "order-1", { delay: "30m", table }), refused);
      await assert.rejects(outbox.cancel(connection, queue, "order-1", { table }), refused);
      await assert.rejects(outbox.cancelTag(connection, queue, "tag", { table }), refused);
    }
    await outbox.cancel(connection, queue, "still-usable");
    await db.commit(connection);
    assert.deepEqual(await db.rows(queue), [[queue, "still-usable", "cancel", null]], "the refused calls wrote nothing, and the transaction went on");
  });

  test(`${dialect}: calls refused by local validation write no row`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    for (const [what, call] of REFUSED) {
      await assert.rejects(call(connection, queue), TypeError, what);
    }
    await outbox.cancel(connection, queue, "still-usable");
    await db.commit(connection);
    assert.deepEqual(await db.rows(queue), [[queue, "still-usable", "cancel", null]]);
    assert.deepEqual(await db.rows(""), [], "nothing with an empty queue");
  });

  test(`${dialect}: the dialect is told from the connection, or given`, async () => {
    const queue = uniqueQueue("ts.outbox");
    const connection = await db.connect();
    await db.begin(connection);
    await outbox.cancel(connection, queue, "given", { dialect });
    await new Outbox({ dialect }).cancel(connection, queue, "fixed");
    await db.commit(connection);
    assert.deepEqual((await db.rows(queue)).map((r) => r[1]), ["given", "fixed"]);
  });
}

test("table names that are identifiers are taken; others are refused by the constructor", () => {
  for (const table of ["punctual_outbox", "shop.outbox", "_x9", "Shop_Outbox2.T"]) {
    assert.equal(new Outbox({ table }).table, table);
  }
  for (const table of BAD_TABLE_NAMES) {
    assert.throws(() => new Outbox({ table }), { name: "TypeError", message: /outbox table name/ });
  }
  assert.throws(() => new Outbox({ dialect: "oracle" }), /dialect must be "postgres" or "mysql"/);
});

test("a pool, a callback mysql2 connection and an unknown connection are refused without a query", async () => {
  const queries = [];
  const record = (sql) => {
    queries.push(sql);
    return Promise.resolve([{ insertId: 7 }]);
  };
  const pgPool = new pg.Pool({ connectionString: POSTGRES_URL });
  const mysqlPool = mysql.createPool({ uri: MYSQL_URL });
  try {
    await assert.rejects(outbox.cancel(pgPool, "q", "k"), /a pool: its queries run outside your transaction/);
    await assert.rejects(outbox.cancel(mysqlPool, "q", "k"), /a pool: its queries run outside your transaction/);
  } finally {
    await pgPool.end();
    await mysqlPool.end();
  }
  const callbackStyle = { query: record, execute: record, beginTransaction() {}, promise() {} };
  await assert.rejects(outbox.cancel(callbackStyle, "q", "k"), /pass connection\.promise\(\)/);
  await assert.rejects(outbox.cancel({ query: record }, "q", "k"), /pass \{ dialect: "postgres" \} or \{ dialect: "mysql" \}/);
  assert.deepEqual(queries, []);

  assert.equal(await outbox.schedule({ query: record }, "q", "k", { delay: "1m", dialect: "mysql" }), "7");
  assert.deepEqual(queries, ["INSERT INTO punctual_outbox (queue, `key`, op, body) VALUES (?, ?, ?, ?)"]);
});
