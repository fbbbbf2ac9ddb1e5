package punctual_test

// Test helpers: the real `punctual serve` on a free port with a temporary data
// directory (PUNCTUAL_BIN, else <repo>/target/debug/punctual), a condition poller with
// a time limit, and a logger that keeps the worker's lines for tests to wait on.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func binary(t *testing.T) string {
	if b := os.Getenv("PUNCTUAL_BIN"); b != "" {
		return b
	}
	b, err := filepath.Abs("../../../target/debug/punctual")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

type server struct {
	t       *testing.T
	URL     string
	Port    int
	DataDir string
	args    []string
	env     []string
	cmd     *exec.Cmd
	exited  chan struct{}
	stderr  *bytes.Buffer
}

type serverOpts struct {
	args   []string
	env    []string
	config string
}

// startServer starts punctual serve and stops it when the test ends.
func startServer(t *testing.T, o serverOpts) *server {
	t.Helper()
	root := t.TempDir()
	s := &server{t: t, Port: freePort(t), DataDir: filepath.Join(root, "data"), env: o.env}
	s.args = append([]string{"--grace-period", "1s"}, o.args...)
	if o.config != "" {
		file := filepath.Join(root, "punctual.toml")
		if err := os.WriteFile(file, []byte(o.config), 0o600); err != nil {
			t.Fatal(err)
		}
		s.args = append(s.args, "--config", file)
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", s.Port)
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	args := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", s.Port), "--data", s.DataDir}, s.args...)
	s.cmd = exec.Command(binary(s.t), args...)
	s.cmd.Env = append(os.Environ(), s.env...)
	s.stderr = &bytes.Buffer{}
	s.cmd.Stderr = &lockedWriter{w: s.stderr}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting punctual: %v", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.exited)
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-s.exited:
			s.t.Fatalf("punctual exited: %s", s.stderr)
		default:
		}
		resp, err := http.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			s.t.Fatalf("punctual not ready at %s: %s", s.URL, s.stderr)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 10 s).
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *server) client(opts ...punctual.Option) *punctual.Client {
	return punctual.NewClient(append([]punctual.Option{punctual.WithServer(s.URL)}, opts...)...)
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

var queueSeq int64

func uniqueQueue(prefix string) string {
	return fmt.Sprintf("%s.%d.%d.%d", prefix, os.Getpid(), atomic.AddInt64(&queueSeq, 1), time.Now().UnixNano())
}

// recorder is a Logger keeping every line.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) Printf(format string, v ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, v...))
}

func (r *recorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// startWorker runs w; cancel asks it to stop, wait waits for Run to return.
func startWorker(t *testing.T, w *punctual.Worker) (cancel func(), wait func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	wait = func() {
		once.Do(func() {
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wait() })
	return cancel, wait
}

// runWorker runs w until the returned stop is called (or the test ends); stop waits
// for Run to return.
func runWorker(t *testing.T, w *punctual.Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// events collects deliveries seen by handlers.
type events struct {
	mu   sync.Mutex
	seen []punctual.Delivery
	at   []time.Time
}

func (e *events) add(d *punctual.Delivery) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen = append(e.seen, *d)
	e.at = append(e.at, time.Now())
}

func (e *events) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.seen)
}

func (e *events) get(i int) (punctual.Delivery, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[i], e.at[i]
}
