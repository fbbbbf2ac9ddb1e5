package punctual_test

// The If-Match of queue settings, which PutCalendar shares: 0 sends none, a version sends
// it, IfAbsent sends If-Match: 0 (create only), and any other negative ifVersion is sent
// as it is, refused by the server as before IfAbsent existed.

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestSettingsIfMatch(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("settings")
	one := map[string]any{"group_concurrency": 1}

	created, err := c.PutSettings(bg, q, one, punctual.IfAbsent)
	if err != nil || created.Version != 1 {
		t.Fatalf("put IfAbsent of a queue without settings: %v %+v", err, created)
	}
	if _, err := c.PutSettings(bg, q, one, punctual.IfAbsent); !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("put IfAbsent of a queue with settings: %v, want ErrConflict", err)
	}
	if _, err := c.PutSettings(bg, q, one, -2); !errors.Is(err, punctual.ErrInvalidArgument) {
		t.Fatalf("put with ifVersion -2: %v, want ErrInvalidArgument", err)
	}
	replaced, err := c.PutSettings(bg, q, map[string]any{"group_concurrency": 2}, created.Version)
	if err != nil || replaced.Version != 2 {
		t.Fatalf("put at version 1: %v %+v", err, replaced)
	}
	if _, err := c.PatchSettings(bg, q, map[string]any{"group_concurrency": 3}, created.Version); !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("patch at the stale version 1: %v, want ErrConflict", err)
	}
	patched, err := c.PatchSettings(bg, q, map[string]any{"group_concurrency": 3}, 0)
	if err != nil || patched.Version != 3 || patched.GroupConcurrency == nil || *patched.GroupConcurrency != 3 {
		t.Fatalf("patch without If-Match: %v %+v", err, patched)
	}
	if err := c.DeleteSettings(bg, q, replaced.Version); !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("delete at the stale version 2: %v, want ErrConflict", err)
	}
	if err := c.DeleteSettings(bg, q, patched.Version); err != nil {
		t.Fatalf("delete at version 3: %v", err)
	}
	if _, err := c.GetSettings(bg, q); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
}

// TestSettingsTyped reads a queue's defaults and action as typed values, and sends a
// read-back Settings again as PutSettings' body (the server ignores what only GET shows).
func TestSettingsTyped(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("settings.typed")
	put, err := c.PutSettings(bg, q, map[string]any{
		"defaults": map[string]any{"max_attempts": 5, "backoff": map[string]any{"initial": "2s", "factor": 3, "max": "1m"},
			"repeat": map[string]any{"every": "24h", "times": 3}},
		"action":     map[string]any{"kind": "webhook", "url": "https://shop.example/hooks/cancel", "timeout": "10s"},
		"group_rate": "10/1m",
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := punctual.QueueDefaults{MaxAttempts: 5, Backoff: punctual.Backoff{Initial: 2 * time.Second, Factor: 3, Max: time.Minute},
		Repeat: &punctual.Repeat{Every: 24 * time.Hour, Times: 3}}
	if put.Source != punctual.SourceAPI || !reflect.DeepEqual(put.Defaults, want) || put.GroupRate == nil || *put.GroupRate != "10/1m" {
		t.Fatalf("settings: %+v (defaults %+v)", put, put.Defaults)
	}
	var hook struct {
		URL string `json:"url"`
	}
	if put.Action == nil || put.Action.Kind != punctual.ActionWebhook || put.Action.Decode(&hook) != nil || hook.URL != "https://shop.example/hooks/cancel" {
		t.Fatalf("action: %+v", put.Action)
	}

	again, err := c.PutSettings(bg, q, put, put.Version)
	if err != nil || again.Version == put.Version || !reflect.DeepEqual(again.Defaults, put.Defaults) ||
		again.Action.Kind != punctual.ActionWebhook || *again.GroupRate != "10/1m" {
		t.Fatalf("put back: %v %+v", err, again)
	}
	if got, err := c.GetSettings(bg, q); err != nil || got.Version != again.Version {
		t.Fatalf("get: %v %+v", err, got)
	}
}
