package punctual_test

// The If-Match of queue settings, which PutCalendar shares: 0 sends none, a version sends
// it, IfAbsent sends If-Match: 0 (create only), and any other negative ifVersion is sent
// as it is, refused by the server as before IfAbsent existed.

import (
	"errors"
	"testing"

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
