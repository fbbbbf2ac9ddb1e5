// Package outbox writes punctual's schedules and cancels as rows of the outbox table in
// the application's own database (PostgreSQL, or MySQL and MariaDB), through the
// caller's own transaction: a rolled-back transaction leaves no row, so no task; a
// committed one is applied by punctual's server (docs/outbox.md).
//
//	tx, err := db.BeginTx(ctx, nil)
//	…
//	_, err = tx.ExecContext(ctx, "INSERT INTO orders (id, total) VALUES (?, ?)", 1234, 99.00)
//	…
//	err = outbox.Table{Dialect: outbox.MySQL}.Schedule(ctx, tx, "order.cancel", "order-1234",
//		punctual.ScheduleParams{Delay: 30 * time.Minute, Payload: map[string]any{"order_id": 1234}})
//	…
//	err = tx.Commit()
//
// A Table only inserts one row per call: it never commits, rolls back or opens a
// connection of its own. database/sql does not say which database a driver talks to, so
// the Dialect is the caller's to give.
package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

// DefaultTable is the outbox table's name unless Table.Name says otherwise.
const DefaultTable = "punctual_outbox"

// Dialect is the database the outbox table lives in.
type Dialect string

const (
	// Postgres: PostgreSQL 12 or later (drivers with $1 placeholders, such as
	// github.com/jackc/pgx/v5/stdlib or github.com/lib/pq).
	Postgres Dialect = "postgres"
	// MySQL: MySQL 8.0 or later and MariaDB 10.6 or later (drivers with ? placeholders,
	// such as github.com/go-sql-driver/mysql).
	MySQL Dialect = "mysql"
)

// Execer runs a statement: *sql.Tx, and also *sql.Conn and *sql.DB (each statement then
// commits on its own, which gives up the outbox's point).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Table is an outbox table: its Dialect (required) and Name (default DefaultTable;
// letters, digits and _, not first a digit, at most 48 each, optionally schema.table,
// since it is written into the statement as it is). The zero Name is DefaultTable.
type Table struct {
	Dialect Dialect
	Name    string
}

// Schedule inserts the row (queue, key, 'schedule', body), body being exactly the JSON
// that punctual.Client.Schedule sends for the same params. Nothing is written when
// queue or key is empty (punctual.ErrInvalidArgument), the payload cannot be encoded,
// or the table's name or dialect is refused.
func (t Table) Schedule(ctx context.Context, tx Execer, queue, key string, p punctual.ScheduleParams) error {
	if err := checkNonEmpty(queue, "key", key); err != nil {
		return err
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("punctual: encoding the request: %w", err)
	}
	text := string(body)
	return t.insert(ctx, tx, queue, key, "schedule", &text)
}

// Cancel inserts the row (queue, key, 'cancel', NULL), applied as punctual.Client.Cancel.
func (t Table) Cancel(ctx context.Context, tx Execer, queue, key string) error {
	if err := checkNonEmpty(queue, "key", key); err != nil {
		return err
	}
	return t.insert(ctx, tx, queue, key, "cancel", nil)
}

// CancelTag inserts the row (queue, tag, 'cancel_tag', NULL), applied as
// punctual.Client.CancelTag.
func (t Table) CancelTag(ctx context.Context, tx Execer, queue, tag string) error {
	if err := checkNonEmpty(queue, "tag", tag); err != nil {
		return err
	}
	return t.insert(ctx, tx, queue, tag, "cancel_tag", nil)
}

func (t Table) insert(ctx context.Context, tx Execer, queue, key, op string, body *string) error {
	statement, err := t.insertStatement()
	if err != nil {
		return err
	}
	var bodyArg any // NULL for the cancels
	if body != nil {
		bodyArg = *body
	}
	if _, err := tx.ExecContext(ctx, statement, queue, key, op, bodyArg); err != nil {
		return fmt.Errorf("outbox: inserting the %s row into %s: %w", op, t.name(), err)
	}
	return nil
}

// insertStatement is the INSERT of one row, its four parameters queue, key, op, body.
func (t Table) insertStatement() (string, error) {
	name := t.name()
	if !IsTableName(name) {
		return "", fmt.Errorf("outbox: %q is not a table name the outbox takes: letters, digits and _ (not first a digit), at most 48 each, optionally schema.table", name)
	}
	switch t.Dialect {
	case Postgres:
		return "INSERT INTO " + name + " (queue, key, op, body) VALUES ($1, $2, $3, $4::jsonb)", nil
	case MySQL:
		return "INSERT INTO " + name + " (queue, `key`, op, body) VALUES (?, ?, ?, ?)", nil
	}
	return "", fmt.Errorf("outbox: dialect %q: use outbox.Postgres or outbox.MySQL (MySQL and MariaDB)", t.Dialect)
}

func (t Table) name() string {
	if t.Name == "" {
		return DefaultTable
	}
	return t.Name
}

// IsTableName reports whether name is one the outbox takes: letters, digits and _ (not
// first a digit), at most 48 each, optionally schema.table; the same rule as
// `punctual outbox init --table`.
func IsTableName(name string) bool {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return false
	}
	for _, part := range parts {
		if part == "" || len(part) > 48 || isDigit(part[0]) {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c == '_' || isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// checkNonEmpty refuses an empty queue or key (or tag, keyField naming which), as the
// server would refuse the request the row stands for.
func checkNonEmpty(queue, keyField, key string) error {
	for _, field := range [][2]string{{"queue", queue}, {keyField, key}} {
		if field[1] == "" {
			return &punctual.Error{Code: "invalid_argument", Message: "empty " + field[0], Field: field[0]}
		}
	}
	return nil
}
