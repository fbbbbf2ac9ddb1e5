-- The outbox of punctual in MySQL (8.0 or later) and MariaDB (10.6 or later).
-- `punctual outbox init --url mysql://…` runs this file; with `--table NAME`, every
-- `punctual_outbox` below is NAME. Safe to run again: tables and rows that exist are kept.
--
-- The application inserts one row per schedule or cancel, with its own connection,
-- inside its own transaction: a rolled-back transaction leaves no row, a committed one
-- is applied by punctual exactly once (docs/outbox.md).
--   queue  the queue
--   key    the task's key; for op `cancel_tag`, the tag (`key` is a reserved word in
--          MySQL: quote it)
--   op     'schedule' | 'cancel' | 'cancel_tag'
--   body   for 'schedule', the body of PUT /v1/queues/{queue}/tasks/{key} as JSON;
--          NULL for the cancels
-- The index finds a row's earlier rows of the same key (rows of one key are applied in
-- id order).
CREATE TABLE IF NOT EXISTS punctual_outbox (
    id         bigint NOT NULL AUTO_INCREMENT PRIMARY KEY,
    queue      varchar(128) NOT NULL,
    `key`      varchar(512) NOT NULL,
    op         varchar(16) NOT NULL,
    body       json NULL,
    created_at timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    KEY punctual_outbox_by_key (queue, `key`(191), id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Rows punctual could not apply (an unknown op, a body the API refuses), with why.
CREATE TABLE IF NOT EXISTS punctual_outbox_failed (
    id         bigint NOT NULL PRIMARY KEY,
    queue      varchar(128) NOT NULL,
    `key`      varchar(512) NOT NULL,
    op         varchar(16) NOT NULL,
    body       json NULL,
    created_at timestamp(6) NOT NULL,
    failed_at  timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    error      text NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
