package punctual

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Logger receives the worker's log lines; *log.Logger satisfies it. Lines are
// "msg key=value …".
type Logger interface {
	Printf(format string, v ...any)
}

// WorkerOptions configure a Worker. Zero values take the defaults.
type WorkerOptions struct {
	LeaseFor     time.Duration // lease length, extended every LeaseFor/3 while a handler runs; default 30 s
	Wait         time.Duration // long-poll wait; default 20 s
	Grace        time.Duration // how long running handlers may finish after shutdown; default 10 s
	AckEvery     time.Duration // how long acks wait to be batched; default 50 ms
	ReconnectMin time.Duration // first reconnect backoff; default 200 ms
	ReconnectMax time.Duration // largest reconnect backoff; default 10 s
	Logger       Logger        // nil: no logs
}

// Delivery is one leased task handed to a handler. Attempt is 1 for the first try;
// DeliveryID is the same for every try of one occurrence (for idempotent handlers).
// ScheduledFor is the time that occurrence was scheduled for (before jitter, retries
// and misfires); Missed counts the later occurrences already due it stands in for.
type Delivery struct {
	LeaseID      string
	Attempt      int
	DeliveryID   string
	ScheduledFor time.Time
	Missed       int
	Task         Task
}

// DecodePayload unmarshals the task's payload into v.
func (d *Delivery) DecodePayload(v any) error { return d.Task.DecodePayload(v) }

// HandlerFunc handles a delivery and answers its Outcome: Done(), Retry(err),
// RetryAfter(d, err), Reschedule(after), RescheduleAt(t) or Fail(reason)
// (DoneOrRetry(err) turns a plain error into one). A panic is a retry with the panic's
// text. ctx is cancelled when the worker gives up on the handler (shutdown grace over).
type HandlerFunc func(ctx context.Context, d *Delivery) Outcome

type handler struct {
	queue       string
	fn          HandlerFunc
	concurrency int
}

// Worker leases tasks of its queues and runs their handlers.
type Worker struct {
	c        *Client
	opts     WorkerOptions
	handlers []handler

	mu   sync.Mutex
	down bool   // the server was unreachable at the last lease
	last string // the last non-transport lease error logged
}

// NewWorker makes a worker that leases through the client.
func NewWorker(c *Client, opts WorkerOptions) *Worker {
	if opts.LeaseFor == 0 {
		opts.LeaseFor = 30 * time.Second
	}
	if opts.Wait == 0 {
		opts.Wait = 20 * time.Second
	}
	if opts.Grace == 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.AckEvery == 0 {
		opts.AckEvery = 50 * time.Millisecond
	}
	if opts.ReconnectMin == 0 {
		opts.ReconnectMin = 200 * time.Millisecond
	}
	if opts.ReconnectMax == 0 {
		opts.ReconnectMax = 10 * time.Second
	}
	return &Worker{c: c, opts: opts}
}

// Handle registers the handler of a queue, run at most concurrency at once (≥ 1).
// Call it before Run.
func (w *Worker) Handle(queue string, fn HandlerFunc, concurrency int) {
	if concurrency < 1 {
		concurrency = 1
	}
	w.handlers = append(w.handlers, handler{queue: queue, fn: fn, concurrency: concurrency})
}

func (w *Worker) logf(format string, v ...any) {
	if w.opts.Logger != nil {
		w.opts.Logger.Printf(format, v...)
	}
}

// Run leases and handles tasks until ctx is cancelled, then stops leasing, gives
// running handlers Grace to finish (their acks are sent) and returns; handlers still
// running then have their ctx cancelled and are not acked: their leases expire and
// the tasks come back.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.handlers) == 0 {
		return errors.New("punctual: worker has no handlers")
	}
	hard, abandon := context.WithCancel(context.Background())
	defer abandon()
	acks := newAcker(w)
	go acks.loop()

	var running sync.WaitGroup
	var polls sync.WaitGroup
	for _, h := range w.handlers {
		polls.Add(1)
		go func(h handler) {
			defer polls.Done()
			w.poll(ctx, hard, h, acks, &running)
		}(h)
	}
	polls.Wait()

	finished := make(chan struct{})
	go func() { running.Wait(); close(finished) }()
	grace := time.NewTimer(w.opts.Grace)
	defer grace.Stop()
	select {
	case <-finished:
	case <-grace.C:
		w.logf("shutdown grace over; unfinished handlers are not acked grace=%s", w.opts.Grace)
		acks.close() // closed first: a handler returning from now on is not acked
		abandon()
	}
	acks.close()
	<-acks.done
	return nil
}

func (w *Worker) poll(ctx, hard context.Context, h handler, acks *acker, running *sync.WaitGroup) {
	slots := make(chan struct{}, h.concurrency)
	backoff := w.opts.ReconnectMin
	for {
		// Wait for a free slot, then ask for as many tasks as there are free slots.
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		n := 1
		for n < h.concurrency {
			select {
			case slots <- struct{}{}:
				n++
				continue
			default:
			}
			break
		}
		leases, err := w.c.lease(ctx, h.queue, LeaseParams{Max: n, Lease: w.opts.LeaseFor, Wait: w.opts.Wait}, false)
		if ctx.Err() != nil {
			// Stopping: the server releases leases whose answer we did not read.
			return
		}
		if err != nil {
			for i := 0; i < n; i++ {
				<-slots
			}
			w.leaseFailed(h.queue, err, backoff)
			if sleep(ctx, backoff) != nil {
				return
			}
			if backoff *= 2; backoff > w.opts.ReconnectMax {
				backoff = w.opts.ReconnectMax
			}
			continue
		}
		backoff = w.opts.ReconnectMin
		w.leaseSucceeded(h.queue)
		for i := len(leases); i < n; i++ {
			<-slots
		}
		for i := range leases {
			l := leases[i]
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-slots }()
				w.run(hard, h, l, acks)
			}()
		}
	}
}

func (w *Worker) leaseFailed(queue string, err error, backoff time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, ErrUnavailable) {
		if !w.down {
			w.down = true
			w.logf("server unreachable; reconnecting with backoff queue=%s error=%q", queue, err)
		}
		return
	}
	if msg := err.Error(); msg != w.last {
		w.last = msg
		w.logf("lease refused; retrying with backoff queue=%s backoff=%s error=%q", queue, backoff, err)
	}
}

func (w *Worker) leaseSucceeded(queue string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		w.down = false
		w.logf("reconnected queue=%s", queue)
	}
	w.last = ""
}

// run runs one handler, extending its lease while it runs, and queues its ack unless
// the worker gave up on it.
func (w *Worker) run(hard context.Context, h handler, l Lease, acks *acker) {
	hctx, cancel := context.WithCancel(hard)
	defer cancel()
	stopExtending := make(chan struct{})
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		w.extend(hctx, l, stopExtending)
	}()
	outcome := w.call(hctx, h.fn, &Delivery{
		LeaseID: l.LeaseID, Attempt: l.Attempt, DeliveryID: l.DeliveryID,
		ScheduledFor: l.ScheduledFor, Missed: l.Missed, Task: l.Task,
	})
	close(stopExtending)
	<-extended
	if hard.Err() != nil {
		return
	}
	acks.add(Ack{LeaseID: l.LeaseID, Outcome: outcome})
}

// call runs the handler; a panic is a retry with the panic's text.
func (w *Worker) call(ctx context.Context, fn HandlerFunc, d *Delivery) (outcome Outcome) {
	defer func() {
		if p := recover(); p != nil {
			w.logf("handler panicked queue=%s key=%s panic=%q", d.Task.Queue, d.Task.Key, fmt.Sprint(p))
			outcome = Retry(fmt.Errorf("handler panicked: %v", p))
		}
	}()
	return fn(ctx, d)
}

func (w *Worker) extend(ctx context.Context, l Lease, stop <-chan struct{}) {
	t := time.NewTicker(w.opts.LeaseFor / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
			if _, err := w.c.Extend(ctx, l.LeaseID, w.opts.LeaseFor); err != nil && ctx.Err() == nil {
				w.logf("lease extension failed queue=%s key=%s error=%q", l.Task.Queue, l.Task.Key, err)
				if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
					return // the lease is gone; the ack will say so
				}
			}
		}
	}
}

// acker batches acks and sends them with Client.Acks.
type acker struct {
	w       *Worker
	mu      sync.Mutex
	pending []Ack
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newAcker(w *Worker) *acker {
	return &acker{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues an ack; once the acker is closed it drops it (the handler outlasted the
// shutdown grace: its lease expires and the task comes back).
func (a *acker) add(ack Ack) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.pending = append(a.pending, ack)
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *acker) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		close(a.wake)
	}
}

func (a *acker) loop() {
	defer close(a.done)
	for {
		_, open := <-a.wake
		if open {
			// Let acks that finish together share one call.
			time.Sleep(a.w.opts.AckEvery)
		}
		a.mu.Lock()
		batch := a.pending
		a.pending = nil
		a.mu.Unlock()
		if len(batch) > 0 {
			a.send(batch)
		}
		if !open {
			return
		}
	}
}

func (a *acker) send(batch []Ack) {
	delay := a.w.opts.ReconnectMin
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), a.w.c.timeout)
		results, err := a.w.c.Acks(ctx, batch)
		cancel()
		if err == nil {
			for i, r := range results {
				if !r.Applied() && i < len(batch) {
					a.w.logf("ack refused lease=%s outcome=%s status=%d error=%q", batch[i].LeaseID, batch[i].Outcome.Kind(), r.Status, r.Error)
				}
			}
			return
		}
		// Not applied at all when the server could not be reached: a second send of
		// the same acks is safe then (an ack already applied answers 409 on its own).
		if !errors.Is(err, ErrUnavailable) || try >= 4 {
			a.w.logf("acks not sent count=%d error=%q", len(batch), err)
			return
		}
		time.Sleep(delay)
		delay *= 2
	}
}
