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

import type { ScheduleOptions } from "./types.js";
import { taskBody } from "./wire.js";

export const DEFAULT_TABLE = "punctual_outbox";

/** "postgres" (the body cast to jsonb) or "mysql" (MySQL and MariaDB: `key` quoted, the body a JSON string). */
export type OutboxDialect = "postgres" | "mysql";

const DIALECTS: readonly string[] = ["postgres", "mysql"] satisfies OutboxDialect[];

/**
 * A PostgreSQL connection as the outbox uses it: `pg`'s Client and PoolClient (told by
 * `query` and `escapeIdentifier`), or another driver's with `dialect: "postgres"`.
 */
export interface OutboxPostgresConnection {
  query(text: string, values: string[]): Promise<{ rows: Array<{ id?: unknown }> }>;
}

/**
 * A MySQL/MariaDB connection as the outbox uses it: `mysql2/promise`'s Connection and
 * PoolConnection (told by `execute` and `beginTransaction`), or another driver's with
 * `dialect: "mysql"`.
 */
export interface OutboxMysqlConnection {
  query(sql: string, values: string[]): Promise<unknown>;
}

export type OutboxConnection = OutboxPostgresConnection | OutboxMysqlConnection;

export interface OutboxOptions {
  /**
   * The outbox table (default punctual_outbox): letters, digits and _ (not starting
   * with a digit), optionally schema-qualified; anything else is a TypeError.
   */
  table?: string;
  /** Default: told from the connection (pg Client, mysql2/promise Connection). */
  dialect?: OutboxDialect;
}

// An identifier, optionally qualified by its schema (PostgreSQL) or database (MySQL):
// nothing that needs quoting, so the name can stand in the SQL text as it is.
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/** `table` if it is a plain identifier, optionally `schema.`-qualified; else a TypeError. */
export function checkTableName(table: unknown): string {
  if (typeof table !== "string" || !TABLE_NAME.test(table)) {
    throw new TypeError(
      `outbox table name ${JSON.stringify(table)}: expected letters, digits and _ (not starting with a digit), optionally qualified as schema.table`,
    );
  }
  return table;
}

function checkDialect(dialect: unknown): OutboxDialect | undefined {
  if (dialect !== undefined && !DIALECTS.includes(dialect as string)) {
    throw new TypeError(`dialect must be "postgres" or "mysql", got ${JSON.stringify(dialect)}`);
  }
  return dialect as OutboxDialect | undefined;
}

function requireText(value: unknown, name: string): void {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  }
}

const hasMethod = (db: object, name: string) => typeof (db as Record<string, unknown>)[name] === "function";

/**
 * "postgres" or "mysql", from the connection's shape; a TypeError for a pool (its
 * queries run outside your transaction) or a connection of an unknown kind.
 */
export function detectDialect(db: unknown): OutboxDialect {
  if (typeof db === "object" && db !== null) {
    if (hasMethod(db, "query") && hasMethod(db, "escapeIdentifier")) return "postgres";
    if (hasMethod(db, "execute") && hasMethod(db, "beginTransaction")) {
      if (hasMethod(db, "promise")) {
        throw new TypeError("a callback mysql2 connection: pass connection.promise() (mysql2/promise)");
      }
      return "mysql";
    }
    if (hasMethod(db, "getConnection") || "totalCount" in db) {
      throw new TypeError("a pool: its queries run outside your transaction; pass the connection that holds it");
    }
  }
  throw new TypeError(
    'cannot tell the SQL dialect of this connection (not a pg Client nor a mysql2/promise Connection): pass { dialect: "postgres" } or { dialect: "mysql" }',
  );
}

/**
 * The outbox helpers: each INSERTs one row into the outbox table through your
 * connection, inside your transaction, and resolves to the row's id (a bigint, as a
 * string). Never commits, rolls back or opens a connection; a call refused by its checks
 * rejects and writes nothing.
 */
export class Outbox {
  readonly table: string;
  readonly dialect: OutboxDialect | undefined;

  /** The helpers for one table (default punctual_outbox) and, optionally, a fixed dialect. */
  constructor({ table = DEFAULT_TABLE, dialect }: OutboxOptions = {}) {
    this.table = checkTableName(table);
    this.dialect = checkDialect(dialect);
  }

  /**
   * A "schedule" row: applied as client.schedule(queue, key, options) would be. Besides
   * schedule's options, `table` and `dialect` for this call. Resolves to the row's id.
   */
  async schedule(
    db: OutboxConnection,
    queue: string,
    key: string,
    options: ScheduleOptions & OutboxOptions = {},
  ): Promise<string | undefined> {
    requireText(queue, "queue");
    requireText(key, "key");
    const body = taskBody(options);
    return this.#insert(db, queue, key, "schedule", body, options);
  }

  /** A "cancel" row: applied as DELETE /v1/queues/{queue}/tasks/{key}. */
  async cancel(db: OutboxConnection, queue: string, key: string, options: OutboxOptions = {}): Promise<string | undefined> {
    requireText(queue, "queue");
    requireText(key, "key");
    return this.#insert(db, queue, key, "cancel", null, options);
  }

  /** A "cancel_tag" row (the tag in its key column): applied as DELETE /v1/queues/{queue}/tags/{tag}. */
  async cancelTag(db: OutboxConnection, queue: string, tag: string, options: OutboxOptions = {}): Promise<string | undefined> {
    requireText(queue, "queue");
    requireText(tag, "tag");
    return this.#insert(db, queue, tag, "cancel_tag", null, options);
  }

  async #insert(
    db: OutboxConnection,
    queue: string,
    key: string,
    op: "schedule" | "cancel" | "cancel_tag",
    body: Record<string, unknown> | null,
    { table, dialect }: OutboxOptions,
  ): Promise<string | undefined> {
    const name = table === undefined ? this.table : checkTableName(table);
    const sqlDialect = checkDialect(dialect) ?? this.dialect ?? detectDialect(db);
    const values = [queue, key, op];
    if (body !== null) values.push(JSON.stringify(body));
    if (sqlDialect === "postgres") {
      const bodySql = body === null ? "NULL" : "$4::jsonb";
      const result = await (db as OutboxPostgresConnection).query(
        `INSERT INTO ${name} (queue, key, op, body) VALUES ($1, $2, $3, ${bodySql}) RETURNING id`,
        values,
      );
      return idText(result?.rows?.[0]?.id);
    }
    const bodySql = body === null ? "NULL" : "?";
    const result = await (db as OutboxMysqlConnection).query(`INSERT INTO ${name} (queue, \`key\`, op, body) VALUES (?, ?, ?, ${bodySql})`, values);
    const header: unknown = Array.isArray(result) ? result[0] : result;
    return idText(typeof header === "object" && header !== null ? (header as { insertId?: unknown }).insertId : undefined);
  }
}

function idText(id: unknown): string | undefined {
  return id === undefined || id === null ? undefined : String(id);
}

/** The helpers for punctual_outbox, the dialect told from each connection. */
export const outbox = new Outbox();
