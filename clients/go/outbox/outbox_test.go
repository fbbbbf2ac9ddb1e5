package outbox_test

// The statements the outbox runs, without a database: a recording Execer stands for the
// transaction. The rows themselves, in PostgreSQL and MariaDB, are tested by the module
// in dbtest/ (it needs the database drivers, which this module does not depend on).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/outbox"
	"github.com/punctual-rs/punctual/clients/go/punctual"
)

type statement struct {
	query string
	args  []any
}

// recorder is an Execer that keeps the statements instead of running them.
type recorder struct{ statements []statement }

func (r *recorder) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	r.statements = append(r.statements, statement{query, args})
	return nil, nil
}

// richParams sets every field of a schedule; richBody is its body as the API reads it.
var richParams = punctual.ScheduleParams{
	Delay:        30 * time.Minute,
	Payload:      map[string]any{"order_id": 1234},
	Repeat:       &punctual.Repeat{Cron: "0 9 * * MON-FRI", TZ: "Europe/Paris", Times: 3},
	Tags:         []string{"order-1234", "orders"},
	MaxAttempts:  5,
	Backoff:      &punctual.Backoff{Initial: time.Second, Factor: 2, Max: time.Minute},
	IfExists:     "replace",
	Target:       &punctual.Target{URL: "https://shop.example/hooks/cancel", Method: "POST", Timeout: 10 * time.Second},
	Priority:     7,
	Debounce:     &punctual.Debounce{MaxWait: 5 * time.Minute},
	Group:        "merchant-42",
	UniqueFor:    &punctual.UniqueFor{Window: time.Hour},
	Calendar:     "office",
	Misfire:      punctual.MisfireSkip,
	MisfireAfter: 2 * time.Minute,
	Overlap:      punctual.OverlapQueue,
	Jitter:       5 * time.Second,
}

const richBody = `{
	"delay": 1800000,
	"payload": {"order_id": 1234},
	"repeat": {"cron": "0 9 * * MON-FRI", "tz": "Europe/Paris", "times": 3},
	"tags": ["order-1234", "orders"],
	"max_attempts": 5,
	"backoff": {"initial": 1000, "factor": 2, "max": 60000},
	"if_exists": "replace",
	"target": {"url": "https://shop.example/hooks/cancel", "method": "POST", "timeout": 10000},
	"priority": 7,
	"debounce": {"max_wait": 300000},
	"group": "merchant-42",
	"unique_for": 3600000,
	"calendar": "office",
	"misfire": "skip",
	"misfire_after": 120000,
	"overlap": "queue",
	"jitter": 5000
}`

func jsonValue(t *testing.T, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, text)
	}
	return v
}

// sentBody is the body punctual.Client.Schedule sends for p, caught by a test server.
func sentBody(t *testing.T, p punctual.ScheduleParams) string {
	t.Helper()
	bodies := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		bodies <- r.Method + " " + r.URL.Path + " " + string(data)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"outcome": "created", "task": null}`))
	}))
	defer srv.Close()
	if _, err := punctual.NewClient(punctual.WithServer(srv.URL), punctual.WithRetries(-1)).Schedule(context.Background(), "order.cancel", "order-1234", p); err != nil {
		t.Fatal(err)
	}
	request := <-bodies
	prefix := "PUT /v1/queues/order.cancel/tasks/order-1234 "
	if !strings.HasPrefix(request, prefix) {
		t.Fatalf("the client sent %q", request)
	}
	return strings.TrimPrefix(request, prefix)
}

func TestScheduleRowHoldsTheBodyTheClientSends(t *testing.T) {
	for _, dialect := range []outbox.Dialect{outbox.Postgres, outbox.MySQL} {
		var tx recorder
		if err := (outbox.Table{Dialect: dialect}).Schedule(context.Background(), &tx, "order.cancel", "order-1234", richParams); err != nil {
			t.Fatal(err)
		}
		if len(tx.statements) != 1 {
			t.Fatalf("%s: %d statements, want 1", dialect, len(tx.statements))
		}
		args := tx.statements[0].args
		if !reflect.DeepEqual(args[:3], []any{"order.cancel", "order-1234", "schedule"}) {
			t.Fatalf("%s: row %v", dialect, args[:3])
		}
		body, ok := args[3].(string)
		if !ok {
			t.Fatalf("%s: body %#v is not a string", dialect, args[3])
		}
		if got, want := jsonValue(t, body), jsonValue(t, sentBody(t, richParams)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the row's body %s is not what Client.Schedule sends", dialect, body)
		}
		if got, want := jsonValue(t, body), jsonValue(t, richBody); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the row's body %s, want %s", dialect, body, richBody)
		}
	}
}

func TestStatementsPerDialect(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		table outbox.Table
		want  string
	}{
		{outbox.Table{Dialect: outbox.Postgres}, "INSERT INTO punctual_outbox (queue, key, op, body) VALUES ($1, $2, $3, $4::jsonb)"},
		{outbox.Table{Dialect: outbox.MySQL}, "INSERT INTO punctual_outbox (queue, `key`, op, body) VALUES (?, ?, ?, ?)"},
		{outbox.Table{Dialect: outbox.Postgres, Name: "billing.outbox_2"}, "INSERT INTO billing.outbox_2 (queue, key, op, body) VALUES ($1, $2, $3, $4::jsonb)"},
	}
	for _, c := range cases {
		var tx recorder
		if err := c.table.Cancel(ctx, &tx, "order.cancel", "order-1234"); err != nil {
			t.Fatal(err)
		}
		if err := c.table.CancelTag(ctx, &tx, "order.cancel", "cart-9"); err != nil {
			t.Fatal(err)
		}
		for _, s := range tx.statements {
			if s.query != c.want {
				t.Fatalf("%+v: %q, want %q", c.table, s.query, c.want)
			}
		}
		want := [][]any{{"order.cancel", "order-1234", "cancel", nil}, {"order.cancel", "cart-9", "cancel_tag", nil}}
		if got := [][]any{tx.statements[0].args, tx.statements[1].args}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: rows %v, want %v", c.table, got, want)
		}
	}
}

func TestRefusedCallsRunNoStatement(t *testing.T) {
	ctx := context.Background()
	postgres := outbox.Table{Dialect: outbox.Postgres}
	refusals := []struct {
		what  string
		call  func(tx outbox.Execer) error
		field string // the punctual.ErrInvalidArgument's field; "" for another error
	}{
		{"empty queue", func(tx outbox.Execer) error { return postgres.Schedule(ctx, tx, "", "k", punctual.ScheduleParams{}) }, "queue"},
		{"empty key", func(tx outbox.Execer) error { return postgres.Schedule(ctx, tx, "q", "", punctual.ScheduleParams{}) }, "key"},
		{"empty cancel key", func(tx outbox.Execer) error { return postgres.Cancel(ctx, tx, "q", "") }, "key"},
		{"empty tag", func(tx outbox.Execer) error { return postgres.CancelTag(ctx, tx, "q", "") }, "tag"},
		{"a payload JSON cannot encode", func(tx outbox.Execer) error {
			return postgres.Schedule(ctx, tx, "q", "k", punctual.ScheduleParams{Payload: make(chan int)})
		}, ""},
		{"no dialect", func(tx outbox.Execer) error { return outbox.Table{}.Cancel(ctx, tx, "q", "k") }, ""},
		{"an unknown dialect", func(tx outbox.Execer) error { return outbox.Table{Dialect: "sqlite"}.Cancel(ctx, tx, "q", "k") }, ""},
		{"a table name with SQL in it", func(tx outbox.Execer) error {
			return outbox.Table{Dialect: outbox.MySQL, Name: "punctual_outbox; DROP TABLE orders"}.Cancel(ctx, tx, "q", "k")
		}, ""},
	}
	for _, r := range refusals {
		var tx recorder
		err := r.call(&tx)
		if err == nil {
			t.Fatalf("%s: accepted", r.what)
		}
		if len(tx.statements) != 0 {
			t.Fatalf("%s: ran %v", r.what, tx.statements)
		}
		var apiErr *punctual.Error
		if r.field != "" && (!errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &apiErr) || apiErr.Field != r.field) {
			t.Fatalf("%s: %v, want ErrInvalidArgument on field %s", r.what, err, r.field)
		}
	}
}

func TestTableNames(t *testing.T) {
	for _, name := range []string{"punctual_outbox", "_outbox", "Outbox2", "billing.punctual_outbox", strings.Repeat("a", 48)} {
		if !outbox.IsTableName(name) {
			t.Errorf("%q refused", name)
		}
	}
	for _, name := range []string{"", "2outbox", "a.b.c", ".outbox", "outbox.", "out-box", "out box", "`outbox`",
		`"outbox"`, "outbox;", "outbox--", "outbøx", strings.Repeat("a", 49)} {
		if outbox.IsTableName(name) {
			t.Errorf("%q taken", name)
		}
	}
}
