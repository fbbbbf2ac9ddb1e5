package punctual_test

// Scenarios 1–11 of clients/SCENARIOS.md, against the real `punctual serve`
// (scenario 12 is in priorities_test.go, scenario 13 in debounce_test.go, scenario 14
// in groups_test.go).

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

var bg = context.Background()

func TestS01ScheduleLeaseAck(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s01")
	if _, err := c.Schedule(bg, q, "k1", punctual.ScheduleParams{Payload: map[string]any{"order_id": 1234}, Tags: []string{"pi-9"}}); err != nil {
		t.Fatal(err)
	}
	task, err := c.Get(bg, q, "k1")
	if err != nil || task.State != punctual.StateScheduled {
		t.Fatalf("get: %v %+v", err, task)
	}
	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome { ev.add(d); return punctual.Done() }, 2)
	runWorker(t, w)
	waitUntil(t, "the delivery", 10*time.Second, func() bool { return ev.len() == 1 })
	d, _ := ev.get(0)
	var p struct {
		OrderID int `json:"order_id"`
	}
	if err := d.DecodePayload(&p); err != nil || p.OrderID != 1234 || d.Attempt != 1 || d.DeliveryID == "" {
		t.Fatalf("delivery %+v payload %+v err %v", d, p, err)
	}
	waitUntil(t, "the task gone", 10*time.Second, func() bool {
		_, err := c.Get(bg, q, "k1")
		return errors.Is(err, punctual.ErrNotFound)
	})
}

func TestS02RetryWithBackoff(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s02")
	_, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{Backoff: &punctual.Backoff{Initial: time.Second, Factor: 2, Max: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	var lastError string
	var mu sync.Mutex
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		if d.Attempt == 2 {
			if t, err := c.Get(ctx, q, "k"); err == nil && t.LastError != nil {
				mu.Lock()
				lastError = *t.LastError
				mu.Unlock()
			}
		}
		ev.add(d)
		if d.Attempt == 1 {
			return punctual.Retry(errors.New("smtp timeout"))
		}
		return punctual.Done()
	}, 1)
	runWorker(t, w)
	waitUntil(t, "two deliveries", 10*time.Second, func() bool { return ev.len() == 2 })
	d1, t1 := ev.get(0)
	d2, t2 := ev.get(1)
	if d2.Attempt != 2 || d2.DeliveryID != d1.DeliveryID {
		t.Fatalf("second delivery %+v, first %+v", d2, d1)
	}
	if gap := t2.Sub(t1); gap < 800*time.Millisecond {
		t.Fatalf("second try after %s, sooner than the backoff", gap)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(lastError, "smtp timeout") {
		t.Fatalf("last_error %q", lastError)
	}
}

func TestS03Reschedule(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s03")
	if _, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		ev.add(d)
		if d.Attempt == 1 && ev.len() == 1 {
			return punctual.Reschedule(time.Second)
		}
		return punctual.Done()
	}, 1)
	runWorker(t, w)
	waitUntil(t, "the first delivery", 10*time.Second, func() bool { return ev.len() >= 1 })
	_, t1 := ev.get(0)
	var task *punctual.Task
	waitUntil(t, "the task rescheduled", 5*time.Second, func() bool {
		tk, err := c.Get(bg, q, "k")
		if err == nil && tk.State == punctual.StateScheduled && tk.DueAt.After(t1.Add(500*time.Millisecond)) {
			task = tk
			return true
		}
		return ev.len() >= 2
	})
	if task != nil {
		if task.Attempts != 0 || task.DueAt.Sub(t1) > 2*time.Second {
			t.Fatalf("rescheduled task %+v (first delivery at %s)", task, t1)
		}
	}
	waitUntil(t, "the second delivery", 10*time.Second, func() bool { return ev.len() == 2 })
	d1, _ := ev.get(0)
	d2, t2 := ev.get(1)
	if d2.DeliveryID == d1.DeliveryID || d2.Attempt != 1 || t2.Sub(t1) < 800*time.Millisecond {
		t.Fatalf("second delivery %+v after %s, first %+v", d2, t2.Sub(t1), d1)
	}
}

func TestS04FailDeadRetry(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s04")
	if _, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		ev.add(d)
		if ev.len() == 1 {
			return punctual.Fail("order not found")
		}
		return punctual.Done()
	}, 1)
	runWorker(t, w)
	waitUntil(t, "the task dead", 10*time.Second, func() bool {
		tk, err := c.Get(bg, q, "k")
		return err == nil && tk.State == punctual.StateDead
	})
	tk, _ := c.Get(bg, q, "k")
	if tk.LastError == nil || *tk.LastError != "order not found" {
		t.Fatalf("last_error %v", tk.LastError)
	}
	var dead []string
	it := c.DeadTasks(q, punctual.ListParams{Limit: 1})
	for it.Next(bg) {
		dead = append(dead, it.Task().Key)
	}
	if it.Err() != nil || len(dead) != 1 || dead[0] != "k" {
		t.Fatalf("dead list %v %v", dead, it.Err())
	}
	if _, err := c.RetryDead(bg, q, "k"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the second delivery", 10*time.Second, func() bool { return ev.len() == 2 })
	if d, _ := ev.get(1); d.Attempt != 1 {
		t.Fatalf("after retry: attempt %d", d.Attempt)
	}
}

func TestS05HandlerLongerThanLease(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s05")
	if _, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	var ev events
	done := make(chan struct{})
	w := punctual.NewWorker(c, punctual.WorkerOptions{LeaseFor: 2 * time.Second, Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		ev.add(d)
		select {
		case <-time.After(5 * time.Second): // the handler's work: longer than its lease
		case <-ctx.Done():
			return punctual.Retry(ctx.Err())
		}
		close(done)
		return punctual.Done()
	}, 2)
	runWorker(t, w)
	waitUntil(t, "the handler to finish", 10*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	waitUntil(t, "the ack", 5*time.Second, func() bool {
		_, err := c.Get(bg, q, "k")
		return errors.Is(err, punctual.ErrNotFound)
	})
	if ev.len() != 1 {
		t.Fatalf("delivered %d times", ev.len())
	}
}

// TestHelperWorkerProcess is the child of scenario 6: a worker whose handler reports
// the delivery on stdout and never returns, until the parent kills it with SIGKILL.
func TestHelperWorkerProcess(t *testing.T) {
	if os.Getenv("PUNCTUAL_HELPER_QUEUE") == "" {
		t.Skip("the child process of TestS06")
	}
	c := punctual.NewClient(punctual.WithServer(os.Getenv("PUNCTUAL_HELPER_SERVER")))
	w := punctual.NewWorker(c, punctual.WorkerOptions{LeaseFor: 2 * time.Second, Wait: time.Second})
	w.Handle(os.Getenv("PUNCTUAL_HELPER_QUEUE"), func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		fmt.Printf("leased attempt=%d\n", d.Attempt)
		<-ctx.Done()
		return punctual.Done()
	}, 1)
	_ = w.Run(bg)
}

func TestS06WorkerKilledMidHandler(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s06")
	if _, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestHelperWorkerProcess$")
	child.Env = append(os.Environ(), "PUNCTUAL_HELPER_QUEUE="+q, "PUNCTUAL_HELPER_SERVER="+s.URL)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "leased attempt=1" {
			t.Fatalf("child said %q", l)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the child never leased the task")
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL: no ack, no release
		t.Fatal(err)
	}
	_ = child.Wait()
	go func() { _, _ = io.Copy(io.Discard, out) }()

	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome { ev.add(d); return punctual.Done() }, 1)
	runWorker(t, w)
	waitUntil(t, "the task leased again", 10*time.Second, func() bool { return ev.len() == 1 })
	if d, _ := ev.get(0); d.Attempt != 2 {
		t.Fatalf("redelivered with attempt %d", d.Attempt)
	}
}

func TestS07ServerRestartedWhileLongPolling(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s07")
	log := &recorder{}
	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: 2 * time.Second, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 400 * time.Millisecond, Logger: log})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome { ev.add(d); return punctual.Done() }, 1)
	runWorker(t, w)
	if _, err := c.Schedule(bg, q, "before", punctual.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a task before the restart", 10*time.Second, func() bool { return ev.len() == 1 })

	s.stop()
	waitUntil(t, "the worker to notice", 10*time.Second, func() bool { return log.count("server unreachable") == 1 })
	s.start()
	if _, err := c.Schedule(bg, q, "after", punctual.ScheduleParams{Payload: "restart"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a task after the restart", 10*time.Second, func() bool { return ev.len() == 2 })
	if d, _ := ev.get(1); d.Task.Key != "after" {
		t.Fatalf("after the restart: %q", d.Task.Key)
	}
	if n, m := log.count("server unreachable"), log.count("reconnected"); n != 1 || m != 1 {
		t.Fatalf("log lines: %d unreachable, %d reconnected: %q", n, m, log.lines)
	}
}

func TestS08GracefulShutdown(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()

	t.Run("finishes within grace", func(t *testing.T) {
		q := uniqueQueue("s08a")
		if _, err := c.Schedule(bg, q, "running", punctual.ScheduleParams{}); err != nil {
			t.Fatal(err)
		}
		started, release := make(chan struct{}), make(chan struct{})
		var ev events
		w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second, Grace: 5 * time.Second})
		w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
			ev.add(d)
			close(started)
			<-release
			return punctual.Done()
		}, 2)
		cancel, wait := startWorker(t, w)
		<-started
		cancel() // the stop request: leasing stops at once
		stopped := make(chan struct{})
		go func() { wait(); close(stopped) }()
		// A task scheduled after the stop request stays scheduled.
		if _, err := c.Schedule(bg, q, "later", punctual.ScheduleParams{}); err != nil {
			t.Fatal(err)
		}
		close(release)
		<-stopped
		if _, err := c.Get(bg, q, "running"); !errors.Is(err, punctual.ErrNotFound) {
			t.Fatalf("the finished handler was not acked: %v", err)
		}
		tk, err := c.Get(bg, q, "later")
		if err != nil || tk.State != punctual.StateScheduled || ev.len() != 1 {
			t.Fatalf("later: %+v %v, deliveries %d", tk, err, ev.len())
		}
	})

	t.Run("outlasts grace", func(t *testing.T) {
		q := uniqueQueue("s08b")
		if _, err := c.Schedule(bg, q, "slow", punctual.ScheduleParams{}); err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		w := punctual.NewWorker(c, punctual.WorkerOptions{LeaseFor: 2 * time.Second, Wait: time.Second, Grace: 300 * time.Millisecond})
		w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
			close(started)
			<-ctx.Done() // outlasts the grace period
			return punctual.Done()
		}, 1)
		stop := runWorker(t, w)
		<-started
		stop()
		tk, err := c.Get(bg, q, "slow")
		if err != nil || tk.State != punctual.StateLeased {
			t.Fatalf("after stop: %+v %v", tk, err)
		}
		waitUntil(t, "the lease to expire", 10*time.Second, func() bool {
			tk, err := c.Get(bg, q, "slow")
			return err == nil && tk.State == punctual.StateScheduled && tk.Attempts == 1
		})
	})
}

func TestS09SignatureVerification(t *testing.T) {
	const secret = "whsec-scenario-9"
	type got struct {
		body   []byte
		header string
	}
	received := make(chan got, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- got{b, r.Header.Get("Punctual-Signature")}
	}))
	defer hook.Close()
	s := startServer(t, serverOpts{env: []string{"S09_HOOK_SECRET=" + secret}, config: fmt.Sprintf(`
[egress]
allow = ["127.0.0.1"]

[queues."s09.hook".action]
kind = "webhook"
url = "%s/hook"
secret_env = "S09_HOOK_SECRET"
timeout = "5s"
`, hook.URL)})
	c := s.client()
	if _, err := c.Schedule(bg, "s09.hook", "order-1", punctual.ScheduleParams{Payload: map[string]any{"order_id": 1, "note": "é ✓"}}); err != nil {
		t.Fatal(err)
	}
	var d got
	select {
	case d = <-received:
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery")
	}
	if err := punctual.VerifySignature(d.body, d.header, secret, 0, time.Time{}); err != nil {
		t.Fatalf("the real server's signature: %v (%q)", err, d.header)
	}
	modified := []byte(strings.Replace(string(d.body), `"order_id":1`, `"order_id":2`, 1))
	if string(modified) == string(d.body) {
		t.Fatalf("body not modified: %s", d.body)
	}
	if err := punctual.VerifySignature(modified, d.header, secret, 0, time.Time{}); !errors.Is(err, punctual.ErrSignatureMismatch) {
		t.Fatalf("modified body: %v", err)
	}
	var ts int64
	for _, p := range strings.Split(d.header, ",") {
		if strings.HasPrefix(p, "t=") {
			ts, _ = strconv.ParseInt(p[2:], 10, 64)
		}
	}
	if err := punctual.VerifySignature(d.body, d.header, secret, 5*time.Minute, time.Unix(ts+301, 0)); !errors.Is(err, punctual.ErrSignatureExpired) {
		t.Fatalf("older than the tolerance: %v", err)
	}
	if err := punctual.VerifySignature(d.body, d.header, secret, 5*time.Minute, time.Unix(ts+299, 0)); err != nil {
		t.Fatalf("within the tolerance: %v", err)
	}
	if err := punctual.VerifySignature(d.body, d.header, "whsec-wrong", 0, time.Time{}); !errors.Is(err, punctual.ErrSignatureMismatch) {
		t.Fatalf("wrong secret: %v", err)
	}
}

func TestS09DocsTestVector(t *testing.T) {
	h := "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af"
	if err := punctual.VerifySignature([]byte("{}"), h, "whsec", 0, time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"t=1700000000", "garbage", "t=1700000000,v1=00"} {
		if err := punctual.VerifySignature([]byte("{}"), bad, "whsec", 0, time.Unix(1700000000, 0)); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// signed is the header a server rotating its secret sends: one v1 per secret, in order.
func signed(body []byte, secrets []string, ts int64) string {
	header := "t=" + strconv.FormatInt(ts, 10)
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		fmt.Fprintf(mac, "%d.%s", ts, body)
		header += ",v1=" + hex.EncodeToString(mac.Sum(nil))
	}
	return header
}

func TestS09RotatedSecrets(t *testing.T) {
	if h := signed([]byte("{}"), []string{"whsec"}, 1700000000); h != "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af" {
		t.Fatalf("the test's signer disagrees with the docs: %s", h)
	}
	body := []byte(`{"key":"order-1"}`)
	const ts = 1700000000
	now := time.Unix(ts, 0)
	both := signed(body, []string{"whsec-new", "whsec-old"}, ts)
	single := signed(body, []string{"whsec-new"}, ts)
	valid := []struct {
		what    string
		header  string
		secrets []string
	}{
		{"two v1, the new secret", both, []string{"whsec-new"}},
		{"two v1, the old secret", both, []string{"whsec-old"}},
		{"two v1, both secrets", both, []string{"whsec-new", "whsec-old"}},
		{"one v1, the receiver's second secret", single, []string{"whsec-other", "whsec-new"}},
		{"unknown fields and a v1 that is not hex ignored", "v2=abc,x,v1=zz," + single, []string{"whsec-new"}},
	}
	for _, c := range valid {
		if err := punctual.VerifySignatureAny(body, c.header, c.secrets, 0, now); err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if err := punctual.VerifySignature(body, both, "whsec-old", 0, now); err != nil {
		t.Errorf("two v1, VerifySignature with the old secret: %v", err)
	}
	invalid := []struct {
		what    string
		body    []byte
		header  string
		secrets []string
		now     time.Time
		want    error
	}{
		{"another secret", body, both, []string{"whsec-other"}, now, punctual.ErrSignatureMismatch},
		{"no secrets", body, both, nil, now, punctual.ErrSignatureMismatch},
		{"modified body", []byte(`{"key":"order-2"}`), both, []string{"whsec-new", "whsec-old"}, now, punctual.ErrSignatureMismatch},
		{"stale", body, both, []string{"whsec-new", "whsec-old"}, now.Add(301 * time.Second), punctual.ErrSignatureExpired},
		{"no t", body, both[strings.Index(both, ",")+1:], []string{"whsec-new"}, now, punctual.ErrSignatureMalformed},
		{"no v1", body, "t=1700000000", []string{"whsec-new"}, now, punctual.ErrSignatureMalformed},
		{"a v1 with a stray character", body, single + "0", []string{"whsec-new"}, now, punctual.ErrSignatureMismatch},
	}
	for _, c := range invalid {
		if err := punctual.VerifySignatureAny(c.body, c.header, c.secrets, 5*time.Minute, c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
		}
	}
}

func TestS10EveryErrorCodeMapped(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s10")
	var e *punctual.Error

	_, err := c.Get(bg, q, "missing")
	if !errors.Is(err, punctual.ErrNotFound) || !errors.As(err, &e) || e.Status != 404 {
		t.Fatalf("not_found: %v", err)
	}
	if _, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Schedule(bg, q, "k", punctual.ScheduleParams{IfExists: punctual.IfExistsError})
	if !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("conflict: %v", err)
	}
	// A bad delay (negative), field delay.
	_, err = c.Schedule(bg, q, "neg", punctual.ScheduleParams{Delay: -time.Second})
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != "delay" {
		t.Fatalf("invalid_argument: %v", err)
	}

	secured := startServer(t, serverOpts{args: []string{"--token", "s3cret"}})
	_, err = secured.client(punctual.WithToken("")).Get(bg, q, "k")
	if !errors.Is(err, punctual.ErrUnauthorized) {
		t.Fatalf("unauthorized: %v", err)
	}
	if _, err := secured.client(punctual.WithToken("s3cret")).Queues(bg); err != nil {
		t.Fatalf("with the token: %v", err)
	}

	nobody := punctual.NewClient(punctual.WithServer(fmt.Sprintf("http://127.0.0.1:%d", freePort(t))), punctual.WithRetries(2))
	_, err = nobody.Get(bg, q, "k")
	if !errors.Is(err, punctual.ErrUnavailable) || !errors.As(err, &e) || e.Status != 0 {
		t.Fatalf("unavailable: %v", err)
	}

	// The decoder's mapping of a 403 (TestS11ScopedToken gets one from the server).
	f := punctual.DecodeError(403, []byte(`{"error":{"code":"forbidden","message":"this token lacks the schedule permission on queue q"}}`))
	if !errors.Is(f, punctual.ErrForbidden) || f.Message != "this token lacks the schedule permission on queue q" || f.Status != 403 {
		t.Fatalf("forbidden: %v", f)
	}
	if u := punctual.DecodeError(503, []byte("down")); !errors.Is(u, punctual.ErrUnavailable) {
		t.Fatalf("503: %v", u)
	}
}

func TestS11ScopedToken(t *testing.T) {
	id := strconv.FormatInt(time.Now().UnixNano(), 36)
	fullToken, readerToken := "full-"+id, "reader-"+id
	s := startServer(t, serverOpts{config: fmt.Sprintf(`tokens = [%q]

[[access]]
token = %q
permissions = ["read"]
queues = ["scoped.*"]
`, fullToken, readerToken)})
	full := s.client(punctual.WithToken(fullToken))
	reader := s.client(punctual.WithToken(readerToken))
	scoped := uniqueQueue("scoped.go")
	other := uniqueQueue("go.s11")

	if _, err := full.Schedule(bg, scoped, "readable", punctual.ScheduleParams{Payload: map[string]int{"v": 1}, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	task, err := reader.Get(bg, scoped, "readable")
	if err != nil {
		t.Fatalf("the scoped token reads its queue: %v", err)
	}
	if task.Key != "readable" || task.State != punctual.StateScheduled || string(task.Payload) != `{"v":1}` {
		t.Fatalf("task: %+v (payload %s)", task, task.Payload)
	}

	// forbidden checks err is the client's forbidden error: ErrForbidden under
	// errors.Is, an *Error with status 403, code forbidden, naming what and queue.
	forbidden := func(what string, err error, permission, queue string) {
		t.Helper()
		var e *punctual.Error
		if !errors.Is(err, punctual.ErrForbidden) || !errors.As(err, &e) {
			t.Fatalf("%s: want the forbidden error, got %v", what, err)
		}
		if e.Status != 403 || e.Code != "forbidden" {
			t.Fatalf("%s: status %d code %q", what, e.Status, e.Code)
		}
		if !strings.Contains(e.Message, permission+" permission") || !strings.Contains(e.Message, "'"+queue+"'") {
			t.Fatalf("%s: the message names neither %s nor %s: %q", what, permission, queue, e.Message)
		}
	}

	_, err = reader.Schedule(bg, scoped, "refused", punctual.ScheduleParams{Payload: map[string]int{"v": 2}})
	forbidden("schedule with the scoped token", err, "schedule", scoped)
	if _, err := full.Get(bg, scoped, "refused"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("the refused task was stored: %v", err)
	}
	_, err = reader.Schedule(bg, scoped, "readable", punctual.ScheduleParams{Payload: map[string]int{"v": 3}})
	forbidden("replace with the scoped token", err, "schedule", scoped)
	if got, err := full.Get(bg, scoped, "readable"); err != nil || string(got.Payload) != `{"v":1}` {
		t.Fatalf("after the refused replacement: %v %v", got, err)
	}

	if _, err := full.Schedule(bg, other, "elsewhere", punctual.ScheduleParams{Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got, err := full.Get(bg, other, "elsewhere"); err != nil || got.State != punctual.StateScheduled {
		t.Fatalf("the full token reads %s: %v %v", other, got, err)
	}
	_, err = reader.Get(bg, other, "elsewhere")
	forbidden("get outside the grant", err, "read", other)
}
