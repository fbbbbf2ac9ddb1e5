package dbtest_test

// The outbox's rows in real databases: what a committed transaction leaves, what a
// rolled-back one does not, the cancels, another table, and the refusals that write
// nothing, the same for PostgreSQL and MariaDB.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/outbox"
	"github.com/punctual-rs/punctual/clients/go/punctual"
)

const customTable = "app_outbox"

func TestPostgres(t *testing.T) {
	testOutbox(t, openPostgres(t, outbox.DefaultTable, customTable), outbox.Postgres)
}

func TestMariaDB(t *testing.T) {
	testOutbox(t, openMariaDB(t, outbox.DefaultTable, customTable), outbox.MySQL)
}

// richParams sets most fields of a schedule; richBody is its body as the API reads it.
var richParams = punctual.ScheduleParams{
	DueAt:       time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC),
	Payload:     map[string]any{"order_id": 1234, "lines": []string{"a", "b"}},
	Repeat:      &punctual.Repeat{Every: time.Hour, Times: 3},
	Tags:        []string{"order-1234"},
	MaxAttempts: 5,
	Backoff:     &punctual.Backoff{Initial: time.Second, Factor: 2.5, Max: time.Minute},
	IfExists:    "keep",
	Target: &punctual.Target{URL: "https://shop.example/hooks/cancel", Headers: map[string]string{"X-Shop": "7"},
		Body: map[string]any{"order": 1234}},
	Priority:   9,
	Group:      "merchant-42",
	UniqueFor:  &punctual.UniqueFor{Window: 24 * time.Hour, Dead: true},
	Calendar:   "office",
	Align:      punctual.AlignNextOpen,
	Misfire:    punctual.MisfireFireAll,
	CatchUpMax: 20,
	Overlap:    punctual.OverlapAllow,
}

const richBody = `{
	"due_at": "2026-10-03T10:00:00Z",
	"payload": {"order_id": 1234, "lines": ["a", "b"]},
	"repeat": {"every": 3600000, "times": 3},
	"tags": ["order-1234"],
	"max_attempts": 5,
	"backoff": {"initial": 1000, "factor": 2.5, "max": 60000},
	"if_exists": "keep",
	"target": {"url": "https://shop.example/hooks/cancel", "headers": {"X-Shop": "7"}, "body": {"order": 1234}},
	"priority": 9,
	"group": "merchant-42",
	"unique_for": {"window": 86400000, "dead": true},
	"calendar": "office",
	"align": "next_open",
	"misfire": "fire_all",
	"catch_up_max": 20,
	"overlap": "allow"
}`

// row is one outbox row; Body is nil for NULL.
type row struct {
	Queue, Key, Op string
	Body           *string
}

func testOutbox(t *testing.T, db *sql.DB, dialect outbox.Dialect) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	table := outbox.Table{Dialect: dialect}
	custom := outbox.Table{Dialect: dialect, Name: customTable}

	rows := func(t *testing.T, tableName string) []row {
		t.Helper()
		query := "SELECT queue, key, op, body::text FROM " + tableName + " ORDER BY id"
		if dialect == outbox.MySQL {
			query = "SELECT queue, `key`, op, body FROM " + tableName + " ORDER BY id"
		}
		result, err := db.QueryContext(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		defer result.Close()
		var out []row
		for result.Next() {
			var r row
			if err := result.Scan(&r.Queue, &r.Key, &r.Op, &r.Body); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if err := result.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// inTransaction runs write in a transaction and commits it, or rolls it back.
	inTransaction := func(t *testing.T, commit bool, write func(tx *sql.Tx)) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		write(tx)
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	noError := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	empty := func(t *testing.T) {
		t.Helper()
		for _, name := range []string{outbox.DefaultTable, customTable} {
			if got := rows(t, name); len(got) != 0 {
				t.Fatalf("%s holds %v, want no row", name, got)
			}
		}
	}
	run := func(name string, test func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			for _, name := range []string{outbox.DefaultTable, customTable} {
				if _, err := db.ExecContext(ctx, "DELETE FROM "+name); err != nil {
					t.Fatal(err)
				}
			}
			test(t)
		})
	}

	run("a committed schedule leaves its row, its body the client's", func(t *testing.T) {
		inTransaction(t, true, func(tx *sql.Tx) {
			noError(t, table.Schedule(ctx, tx, "order.cancel", "order-1234", richParams))
		})
		got := rows(t, outbox.DefaultTable)
		if len(got) != 1 || got[0].Queue != "order.cancel" || got[0].Key != "order-1234" || got[0].Op != "schedule" || got[0].Body == nil {
			t.Fatalf("rows %+v, want one schedule of order.cancel/order-1234 with a body", got)
		}
		sent, err := json.Marshal(richParams) // the body Client.Schedule sends
		noError(t, err)
		if !sameJSON(t, *got[0].Body, string(sent)) {
			t.Fatalf("body %s, the client sends %s", *got[0].Body, sent)
		}
		if !sameJSON(t, *got[0].Body, richBody) {
			t.Fatalf("body %s, want %s", *got[0].Body, richBody)
		}
	})

	run("a rolled-back schedule leaves no row", func(t *testing.T) {
		inTransaction(t, false, func(tx *sql.Tx) {
			noError(t, table.Schedule(ctx, tx, "order.cancel", "order-1234", punctual.ScheduleParams{Delay: 30 * time.Minute}))
		})
		empty(t)
	})

	run("cancel and cancel_tag rows", func(t *testing.T) {
		inTransaction(t, true, func(tx *sql.Tx) {
			noError(t, table.Cancel(ctx, tx, "order.cancel", "order-1234"))
			noError(t, table.CancelTag(ctx, tx, "order.cancel", "cart-9"))
		})
		want := []row{{"order.cancel", "order-1234", "cancel", nil}, {"order.cancel", "cart-9", "cancel_tag", nil}}
		if got := rows(t, outbox.DefaultTable); !reflect.DeepEqual(got, want) {
			t.Fatalf("rows %+v, want %+v", got, want)
		}
	})

	run("another table, by name and with its schema", func(t *testing.T) {
		var schema string
		query := "SELECT current_schema()"
		if dialect == outbox.MySQL {
			query = "SELECT DATABASE()"
		}
		noError(t, db.QueryRowContext(ctx, query).Scan(&schema))
		qualified := outbox.Table{Dialect: dialect, Name: schema + "." + customTable}
		inTransaction(t, true, func(tx *sql.Tx) {
			noError(t, custom.Schedule(ctx, tx, "order.cancel", "order-1234", punctual.ScheduleParams{Delay: 30 * time.Minute}))
			noError(t, qualified.Cancel(ctx, tx, "order.cancel", "order-1234"))
		})
		got := rows(t, customTable)
		if len(got) != 2 || got[0].Op != "schedule" || got[0].Body == nil || !sameJSON(t, *got[0].Body, `{"delay": 1800000}`) || got[1].Op != "cancel" {
			t.Fatalf("%s holds %+v", customTable, got)
		}
		if got := rows(t, outbox.DefaultTable); len(got) != 0 {
			t.Fatalf("%s holds %+v, want no row", outbox.DefaultTable, got)
		}
	})

	run("refused calls write nothing", func(t *testing.T) {
		inTransaction(t, true, func(tx *sql.Tx) {
			bad := outbox.Table{Dialect: dialect, Name: customTable + "; DELETE FROM " + outbox.DefaultTable}
			if err := bad.Schedule(ctx, tx, "order.cancel", "order-1234", punctual.ScheduleParams{}); err == nil {
				t.Fatal("a table name with SQL in it was taken")
			}
			if err := table.Schedule(ctx, tx, "order.cancel", "", punctual.ScheduleParams{Delay: time.Minute}); !errors.Is(err, punctual.ErrInvalidArgument) {
				t.Fatalf("an empty key: %v, want ErrInvalidArgument", err)
			}
			if err := table.Schedule(ctx, tx, "order.cancel", "order-1234", punctual.ScheduleParams{Payload: func() {}}); err == nil {
				t.Fatal("a payload JSON cannot encode was taken")
			}
			if err := table.CancelTag(ctx, tx, "", "cart-9"); !errors.Is(err, punctual.ErrInvalidArgument) {
				t.Fatalf("an empty queue: %v, want ErrInvalidArgument", err)
			}
		})
		empty(t)
	})
}

// sameJSON says whether two JSON texts hold the same value (key order and spacing
// aside: PostgreSQL's jsonb orders keys its own way).
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}
