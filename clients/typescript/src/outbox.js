// The outbox: a schedule or a cancel written as a row of the application's own database,
// inside the application's own transaction (docs/outbox.md).
//
//   await db.query("BEGIN");
//   await db.query("INSERT INTO orders (id, total) VALUES ($1, $2)", [1234, 99]);
//   await outbox.schedule(db, "order.cancel", "order-1234", { delay: "30m", payload: { orderId: 1234 } });
//   await db.query("COMMIT");
//
// Each helper INSERTs one row through the connection it is given and does nothing else:
// it never commits, never rolls back and never opens a connection. The row's body is
// exactly the JSON body Client.schedule sends for the same options (both are built by
// taskBody), checked the same way first: a refused call rejects and writes no row.
//
// The SQL dialect is told from the connection by duck typing: a `pg` Client or
// PoolClient (query + escapeIdentifier) is PostgreSQL; a `mysql2/promise` Connection or
// PoolConnection (execute + beginTransaction) is MySQL/MariaDB. Another driver takes
// `dialect: "postgres"` (its `query(text, values)` resolving to `{ rows }`) or
// `dialect: "mysql"` (its `query(sql, values)` resolving to `[{ insertId }]` or
// `{ insertId }`).

import { taskBody } from "./client.js";

export const DEFAULT_TABLE = "punctual_outbox";

const DIALECTS = ["postgres", "mysql"];

// An identifier, optionally qualified by its schema (PostgreSQL) or database (MySQL):
// nothing that needs quoting, so the name can stand in the SQL text as it is.
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/** `table` if it is a plain identifier, optionally `schema.`-qualified; else a TypeError. */
export function checkTableName(table) {
  if (typeof table !== "string" || !TABLE_NAME.test(table)) {
    throw new TypeError(
      `outbox table name ${JSON.stringify(table)}: expected letters, digits and _ (not starting with a digit), optionally qualified as schema.table`,
    );
  }
  return table;
}

function checkDialect(dialect) {
  if (dialect !== undefined && !DIALECTS.includes(dialect)) {
    throw new TypeError(`dialect must be "postgres" or "mysql", got ${JSON.stringify(dialect)}`);
  }
  return dialect;
}

function requireText(value, name) {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  }
}

const isFunction = (f) => typeof f === "function";

/**
 * "postgres" or "mysql", from the connection's shape; a TypeError for a pool (its
 * queries run outside your transaction) or a connection of an unknown kind.
 */
export function detectDialect(db) {
  if (db && isFunction(db.query) && isFunction(db.escapeIdentifier)) return "postgres";
  if (db && isFunction(db.execute) && isFunction(db.beginTransaction)) {
    if (isFunction(db.promise)) {
      throw new TypeError("a callback mysql2 connection: pass connection.promise() (mysql2/promise)");
    }
    return "mysql";
  }
  if (db && (isFunction(db.getConnection) || "totalCount" in db)) {
    throw new TypeError("a pool: its queries run outside your transaction; pass the connection that holds it");
  }
  throw new TypeError(
    'cannot tell the SQL dialect of this connection (not a pg Client nor a mysql2/promise Connection): pass { dialect: "postgres" } or { dialect: "mysql" }',
  );
}

export class Outbox {
  /** The helpers for one table (default punctual_outbox) and, optionally, a fixed dialect. */
  constructor({ table = DEFAULT_TABLE, dialect } = {}) {
    this.table = checkTableName(table);
    this.dialect = checkDialect(dialect);
  }

  /**
   * A "schedule" row: applied as client.schedule(queue, key, options) would be. Besides
   * schedule's options, `table` and `dialect` for this call. Resolves to the row's id.
   */
  async schedule(db, queue, key, options = {}) {
    requireText(queue, "queue");
    requireText(key, "key");
    const body = taskBody(options);
    return this.#insert(db, queue, key, "schedule", body, options);
  }

  /** A "cancel" row: applied as DELETE /v1/queues/{queue}/tasks/{key}. */
  async cancel(db, queue, key, options = {}) {
    requireText(queue, "queue");
    requireText(key, "key");
    return this.#insert(db, queue, key, "cancel", null, options);
  }

  /** A "cancel_tag" row (the tag in its key column): applied as DELETE /v1/queues/{queue}/tags/{tag}. */
  async cancelTag(db, queue, tag, options = {}) {
    requireText(queue, "queue");
    requireText(tag, "tag");
    return this.#insert(db, queue, tag, "cancel_tag", null, options);
  }

  async #insert(db, queue, key, op, body, { table, dialect } = {}) {
    const name = table === undefined ? this.table : checkTableName(table);
    const sqlDialect = checkDialect(dialect) ?? this.dialect ?? detectDialect(db);
    const values = [queue, key, op];
    if (body !== null) values.push(JSON.stringify(body));
    if (sqlDialect === "postgres") {
      const bodySql = body === null ? "NULL" : "$4::jsonb";
      const result = await db.query(
        `INSERT INTO ${name} (queue, key, op, body) VALUES ($1, $2, $3, ${bodySql}) RETURNING id`,
        values,
      );
      const id = result?.rows?.[0]?.id;
      return id == null ? undefined : String(id);
    }
    const bodySql = body === null ? "NULL" : "?";
    const result = await db.query(`INSERT INTO ${name} (queue, \`key\`, op, body) VALUES (?, ?, ?, ${bodySql})`, values);
    const id = (Array.isArray(result) ? result[0] : result)?.insertId;
    return id == null ? undefined : String(id);
  }
}

/** The helpers for punctual_outbox, the dialect told from each connection. */
export const outbox = new Outbox();
