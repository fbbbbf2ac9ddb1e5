// Package punctual is a client for the punctual HTTP API (schedule, inspect and cancel
// delayed tasks, manage queues and dead tasks), a pull Worker that runs handlers for
// leased tasks, and VerifySignature (VerifySignatureAny for several secrets) for
// webhook deliveries.
//
// Calls are safe to repeat (idempotent by key), so the client retries them with
// backoff on 503 and connection errors; batch acks are the exception and are sent once.
package punctual

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultServer is the server used when neither Options.Server nor PUNCTUAL_SERVER is set.
const DefaultServer = "http://127.0.0.1:7575"

// Options configure a Client. Zero values take the defaults.
type Options struct {
	Server  string        // default $PUNCTUAL_SERVER, else DefaultServer
	Token   string        // default $PUNCTUAL_TOKEN
	Timeout time.Duration // per attempt, on top of a long poll's wait; default 30 s
	Retries int           // extra attempts on 503 and connection errors; default 2, negative: none
	// HTTPClient sends the requests; default a client of its own.
	HTTPClient *http.Client
}

// Option changes Options.
type Option func(*Options)

// WithServer sets the server's base URL.
func WithServer(u string) Option { return func(o *Options) { o.Server = u } }

// WithToken sets the bearer token.
func WithToken(t string) Option { return func(o *Options) { o.Token = t } }

// WithTimeout sets the per-attempt timeout.
func WithTimeout(d time.Duration) Option { return func(o *Options) { o.Timeout = d } }

// WithRetries sets the number of extra attempts (negative: none).
func WithRetries(n int) Option { return func(o *Options) { o.Retries = n } }

// WithOptions replaces every option at once.
func WithOptions(opts Options) Option { return func(o *Options) { *o = opts } }

// Client calls the punctual API. It is safe for concurrent use.
type Client struct {
	base    string
	token   string
	timeout time.Duration
	retries int
	http    *http.Client
}

// NewClient makes a client from the options, defaulting from the environment.
func NewClient(opts ...Option) *Client {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	if o.Server == "" {
		o.Server = os.Getenv("PUNCTUAL_SERVER")
	}
	if o.Server == "" {
		o.Server = DefaultServer
	}
	if o.Token == "" {
		o.Token = os.Getenv("PUNCTUAL_TOKEN")
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	switch {
	case o.Retries == 0:
		o.Retries = 2
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return &Client{base: strings.TrimRight(o.Server, "/"), token: o.Token, timeout: o.Timeout, retries: o.Retries, http: o.HTTPClient}
}

// Server is the base URL the client talks to.
func (c *Client) Server() string { return c.base }

type call struct {
	method, path string
	query        url.Values
	body         any
	header       http.Header
	out          any
	retry        bool          // safe to repeat
	extra        time.Duration // added to the timeout (a long poll's wait)
}

// do sends a call, retrying it with backoff when it is safe to repeat. It returns the
// status of the answer.
func (c *Client) do(ctx context.Context, k call) (int, error) {
	var payload []byte
	if k.body != nil {
		var err error
		if payload, err = json.Marshal(k.body); err != nil {
			return 0, fmt.Errorf("punctual: encoding the request: %w", err)
		}
	}
	attempts := 1
	if k.retry {
		attempts += c.retries
	}
	var last error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if err := sleep(ctx, retryDelay(i)); err != nil {
				return 0, err
			}
		}
		status, err, transient := c.once(ctx, k, payload)
		if err == nil || !transient || ctx.Err() != nil {
			return status, err
		}
		last = err
	}
	return 0, last
}

func retryDelay(attempt int) time.Duration {
	d := 100 * time.Millisecond << (attempt - 1)
	if d > 2*time.Second {
		d = 2 * time.Second
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) once(ctx context.Context, k call, payload []byte) (status int, err error, transient bool) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+k.extra)
	defer cancel()
	u := c.base + k.path
	if len(k.query) > 0 {
		u += "?" + k.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u, body)
	if err != nil {
		return 0, fmt.Errorf("punctual: %w", err), false
	}
	for name, values := range k.header {
		req.Header[name] = values
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if parent := ctx.Err(); parent != nil && errors.Is(err, context.Canceled) {
			return 0, err, false
		}
		return 0, &Error{Code: "unavailable", Message: "server unreachable: " + err.Error(), Err: err}, true
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, &Error{Code: "unavailable", Message: "reading the answer: " + err.Error(), Err: err}, true
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, DecodeError(resp.StatusCode, data), resp.StatusCode == http.StatusServiceUnavailable
	}
	if k.out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, k.out); err != nil {
			return resp.StatusCode, fmt.Errorf("punctual: decoding the answer of %s %s: %w", k.method, k.path, err), false
		}
	}
	return resp.StatusCode, nil, false
}

func taskPath(queue, key string) string {
	return "/v1/queues/" + url.PathEscape(queue) + "/tasks/" + url.PathEscape(key)
}

func queuePath(queue string) string { return "/v1/queues/" + url.PathEscape(queue) }

// Schedule creates or updates one task.
func (c *Client) Schedule(ctx context.Context, queue, key string, p ScheduleParams) (*ScheduleResult, error) {
	var out ScheduleResult
	if _, err := c.do(ctx, call{method: "PUT", path: taskPath(queue, key), body: p, header: traceHeader(ctx), out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ScheduleMany schedules a batch; each item answers on its own, in order. Every task of
// the batch keeps ctx's trace context (see WithTraceparent).
func (c *Client) ScheduleMany(ctx context.Context, queue string, items []BatchItem) ([]BatchResult, error) {
	tasks := items
	if tasks == nil {
		tasks = []BatchItem{} // [], as for an empty batch
	}
	var out struct {
		Results []BatchResult `json:"results"`
	}
	if _, err := c.do(ctx, call{method: "POST", path: queuePath(queue) + "/tasks", body: map[string]any{"tasks": tasks}, header: traceHeader(ctx), out: &out, retry: true}); err != nil {
		return nil, err
	}
	return out.Results, nil
}

// Get reads one task; ErrNotFound when there is none.
func (c *Client) Get(ctx context.Context, queue, key string) (*Task, error) {
	var t Task
	if _, err := c.do(ctx, call{method: "GET", path: taskPath(queue, key), out: &t, retry: true}); err != nil {
		return nil, err
	}
	return &t, nil
}

// History reads what happened to a task, oldest first, also once it is gone (within
// the queue's history retention); ErrNotFound when there is no task and no history of
// the key.
func (c *Client) History(ctx context.Context, queue, key string) (*TaskHistory, error) {
	var h TaskHistory
	if _, err := c.do(ctx, call{method: "GET", path: taskPath(queue, key) + "/history", out: &h, retry: true}); err != nil {
		return nil, err
	}
	return &h, nil
}

// Cancel removes a task; ErrNotFound when there is none.
func (c *Client) Cancel(ctx context.Context, queue, key string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: taskPath(queue, key), retry: true})
	return err
}

// CancelTag cancels every task of the queue carrying the tag and says how many.
func (c *Client) CancelTag(ctx context.Context, queue, tag string) (int, error) {
	var out struct {
		Cancelled int `json:"cancelled"`
	}
	_, err := c.do(ctx, call{method: "DELETE", path: queuePath(queue) + "/tags/" + url.PathEscape(tag), out: &out, retry: true})
	return out.Cancelled, err
}

func (p ListParams) query() url.Values {
	q := url.Values{}
	if p.State != "" {
		q.Set("state", string(p.State))
	}
	if p.Tag != "" {
		q.Set("tag", p.Tag)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// List reads one page of a queue's tasks, in due order.
func (c *Client) List(ctx context.Context, queue string, p ListParams) (*Page, error) {
	var out Page
	if _, err := c.do(ctx, call{method: "GET", path: queuePath(queue) + "/tasks", query: p.query(), out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Groups reads one page of a queue's groups that have tasks, by name, with their counts.
func (c *Client) Groups(ctx context.Context, queue string, p GroupsParams) (*GroupsPage, error) {
	var out GroupsPage
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if _, err := c.do(ctx, call{method: "GET", path: queuePath(queue) + "/groups", query: q, out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Dead reads one page of a queue's dead tasks.
func (c *Client) Dead(ctx context.Context, queue string, p ListParams) (*Page, error) {
	var out Page
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if _, err := c.do(ctx, call{method: "GET", path: queuePath(queue) + "/dead", query: q, out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// pager walks the items of a paged list, fetching each page when the previous one is
// used up; the iterators (Iter, AuditIter) are made of it.
type pager[T any] struct {
	fetch func(ctx context.Context, cursor string) ([]T, *string, error)
	page  []T
	i     int
	next  *string
	done  bool
	err   error
	cur   T
}

// advance moves to the next item, fetching the next page when needed.
func (p *pager[T]) advance(ctx context.Context) bool {
	for p.i >= len(p.page) {
		if p.done || p.err != nil {
			return false
		}
		cursor := ""
		if p.next != nil {
			cursor = *p.next
		}
		items, next, err := p.fetch(ctx, cursor)
		if err != nil {
			p.err = err
			return false
		}
		p.page, p.i, p.next = items, 0, next
		p.done = next == nil || *next == ""
	}
	p.cur = p.page[p.i]
	p.i++
	return true
}

// Iter walks every task of a list, page by page:
//
//	it := client.Tasks(queue, punctual.ListParams{Tag: "flow-7"})
//	for it.Next(ctx) {
//		use(it.Task())
//	}
//	if err := it.Err(); err != nil { … }
type Iter struct {
	pager pager[Task]
}

func taskIter(fetch func(ctx context.Context, cursor string) (*Page, error)) *Iter {
	return &Iter{pager: pager[Task]{fetch: func(ctx context.Context, cursor string) ([]Task, *string, error) {
		p, err := fetch(ctx, cursor)
		if err != nil {
			return nil, nil, err
		}
		return p.Tasks, p.NextCursor, nil
	}}}
}

// Next moves to the next task, fetching the next page when needed.
func (it *Iter) Next(ctx context.Context) bool { return it.pager.advance(ctx) }

// Task is the current task.
func (it *Iter) Task() Task { return it.pager.cur }

// Err is the error that stopped the walk, if any.
func (it *Iter) Err() error { return it.pager.err }

// Tasks walks every task matching p (p.Cursor, when set, is where it starts).
func (c *Client) Tasks(queue string, p ListParams) *Iter {
	start := p.Cursor
	return taskIter(func(ctx context.Context, cursor string) (*Page, error) {
		q := p
		q.Cursor = cursor
		if cursor == "" {
			q.Cursor = start
		}
		return c.List(ctx, queue, q)
	})
}

// DeadTasks walks every dead task of a queue.
func (c *Client) DeadTasks(queue string, p ListParams) *Iter {
	return taskIter(func(ctx context.Context, cursor string) (*Page, error) {
		q := p
		if cursor != "" {
			q.Cursor = cursor
		}
		return c.Dead(ctx, queue, q)
	})
}

// Audit reads one page of the server's audit log, newest first (the server's 100
// entries unless p.Limit, at most 1000). It needs the admin permission.
func (c *Client) Audit(ctx context.Context, p AuditParams) (*AuditPage, error) {
	var out AuditPage
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/audit", query: q, out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// AuditIter walks the entries of the audit log, newest first, page by page:
//
//	it := client.AuditEntries(punctual.AuditParams{})
//	for it.Next(ctx) {
//		use(it.Entry())
//	}
//	if err := it.Err(); err != nil { … }
type AuditIter struct {
	pager pager[AuditEntry]
}

// Next moves to the next entry, fetching the next page when needed.
func (it *AuditIter) Next(ctx context.Context) bool { return it.pager.advance(ctx) }

// Entry is the current entry.
func (it *AuditIter) Entry() AuditEntry { return it.pager.cur }

// Err is the error that stopped the walk, if any.
func (it *AuditIter) Err() error { return it.pager.err }

// AuditEntries walks every entry of the audit log from p.Cursor (the newest when
// empty), p.Limit entries a page.
func (c *Client) AuditEntries(p AuditParams) *AuditIter {
	start := p.Cursor
	return &AuditIter{pager: pager[AuditEntry]{fetch: func(ctx context.Context, cursor string) ([]AuditEntry, *string, error) {
		q := p
		q.Cursor = cursor
		if cursor == "" {
			q.Cursor = start
		}
		page, err := c.Audit(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		return page.Entries, page.NextCursor, nil
	}}}
}

// Queues gives the counts of every queue.
func (c *Client) Queues(ctx context.Context) ([]QueueStats, error) {
	var out struct {
		Queues []QueueStats `json:"queues"`
	}
	_, err := c.do(ctx, call{method: "GET", path: "/v1/queues", out: &out, retry: true})
	return out.Queues, err
}

// Queue gives one queue's counts and lag (zero counts for an unknown queue).
func (c *Client) Queue(ctx context.Context, queue string) (*QueueStats, error) {
	var out QueueStats
	if _, err := c.do(ctx, call{method: "GET", path: queuePath(queue), out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryDead puts a dead task back to scheduled, due now, attempts reset.
func (c *Client) RetryDead(ctx context.Context, queue, key string) (*Task, error) {
	var t Task
	if _, err := c.do(ctx, call{method: "POST", path: queuePath(queue) + "/dead/" + url.PathEscape(key) + "/retry", out: &t, retry: true}); err != nil {
		return nil, err
	}
	return &t, nil
}

// DeadSelector picks dead tasks to retry: by Tag, by Keys, or (both empty) all.
type DeadSelector struct {
	Tag  string
	Keys []string
}

// RetryDeadMany retries many dead tasks at once and says how many.
func (c *Client) RetryDeadMany(ctx context.Context, queue string, sel DeadSelector) (int, error) {
	body := map[string]any{}
	if sel.Tag != "" {
		body["tag"] = sel.Tag
	}
	if sel.Keys != nil {
		body["keys"] = sel.Keys
	}
	var out struct {
		Retried int `json:"retried"`
	}
	_, err := c.do(ctx, call{method: "POST", path: queuePath(queue) + "/dead/retry", body: body, out: &out, retry: true})
	return out.Retried, err
}

// DeleteDead removes a dead task.
func (c *Client) DeleteDead(ctx context.Context, queue, key string) error {
	_, err := c.do(ctx, call{method: "DELETE", path: queuePath(queue) + "/dead/" + url.PathEscape(key), retry: true})
	return err
}

// GetSettings reads a queue's settings; ErrNotFound when it has none.
func (c *Client) GetSettings(ctx context.Context, queue string) (*Settings, error) {
	var s Settings
	if _, err := c.do(ctx, call{method: "GET", path: queuePath(queue) + "/settings", out: &s, retry: true}); err != nil {
		return nil, err
	}
	return &s, nil
}

// ifMatch is the If-Match of an ifVersion: none for 0, "0" (only if absent) for
// IfAbsent, the number as it is otherwise (another negative one is the server's 400,
// as it was before IfAbsent).
func ifMatch(version int64) http.Header {
	switch version {
	case 0:
		return nil
	case IfAbsent:
		return http.Header{"If-Match": {"0"}}
	}
	return http.Header{"If-Match": {strconv.FormatInt(version, 10)}}
}

// PutSettings creates or replaces a queue's settings (any JSON object, e.g. a
// map[string]any). A non-zero ifVersion makes it conditional (ErrConflict when the
// version moved); IfAbsent creates them only if the queue has none (ErrConflict when
// it has).
func (c *Client) PutSettings(ctx context.Context, queue string, settings any, ifVersion int64) (*Settings, error) {
	var s Settings
	if _, err := c.do(ctx, call{method: "PUT", path: queuePath(queue) + "/settings", body: settings, header: ifMatch(ifVersion), out: &s, retry: true}); err != nil {
		return nil, err
	}
	return &s, nil
}

// PatchSettings merges the given top-level fields into a queue's settings (ErrNotFound
// when it has none). A non-zero ifVersion makes it conditional, as for PutSettings.
func (c *Client) PatchSettings(ctx context.Context, queue string, fields any, ifVersion int64) (*Settings, error) {
	var s Settings
	if _, err := c.do(ctx, call{method: "PATCH", path: queuePath(queue) + "/settings", body: fields, header: ifMatch(ifVersion), out: &s, retry: true}); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSettings removes a queue's settings. A non-zero ifVersion makes it
// conditional, as for PutSettings.
func (c *Client) DeleteSettings(ctx context.Context, queue string, ifVersion int64) error {
	_, err := c.do(ctx, call{method: "DELETE", path: queuePath(queue) + "/settings", header: ifMatch(ifVersion), retry: true})
	return err
}

// Pause stops leasing and delivering a queue's tasks.
func (c *Client) Pause(ctx context.Context, queue string) (*Settings, error) {
	var s Settings
	if _, err := c.do(ctx, call{method: "POST", path: queuePath(queue) + "/pause", out: &s, retry: true}); err != nil {
		return nil, err
	}
	return &s, nil
}

// Resume undoes Pause.
func (c *Client) Resume(ctx context.Context, queue string) (*Settings, error) {
	var s Settings
	if _, err := c.do(ctx, call{method: "POST", path: queuePath(queue) + "/resume", out: &s, retry: true}); err != nil {
		return nil, err
	}
	return &s, nil
}

// Purge cancels every task of the queue in state (StateScheduled, StateDead, or ""
// for both) and says how many.
func (c *Client) Purge(ctx context.Context, queue string, state TaskState) (int, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", string(state))
	}
	var out struct {
		Cancelled int `json:"cancelled"`
	}
	_, err := c.do(ctx, call{method: "DELETE", path: queuePath(queue) + "/tasks", query: q, out: &out, retry: true})
	return out.Cancelled, err
}

func (p LeaseParams) body() map[string]any {
	m := map[string]any{}
	if p.Max != 0 {
		m["max"] = p.Max
	}
	if p.Lease != 0 {
		m["lease"] = p.Lease.Milliseconds()
	}
	if p.Wait != 0 {
		m["wait"] = p.Wait.Milliseconds()
	}
	return m
}

// Lease takes up to p.Max due tasks, waiting up to p.Wait for one (long poll).
func (c *Client) Lease(ctx context.Context, queue string, p LeaseParams) ([]Lease, error) {
	return c.lease(ctx, queue, p, true)
}

func (c *Client) lease(ctx context.Context, queue string, p LeaseParams, retry bool) ([]Lease, error) {
	var out struct {
		Leases []Lease `json:"leases"`
	}
	_, err := c.do(ctx, call{method: "POST", path: queuePath(queue) + "/lease", body: p.body(), out: &out, retry: retry, extra: p.Wait})
	return out.Leases, err
}

// Ack acknowledges one lease with its outcome. ErrConflict: the lease expired or the
// task changed meanwhile, and nothing was changed; ErrNotFound: no such lease.
func (c *Client) Ack(ctx context.Context, leaseID string, o Outcome) error {
	_, err := c.do(ctx, call{method: "POST", path: "/v1/leases/" + url.PathEscape(leaseID) + "/ack", body: o, retry: true})
	return err
}

// Acks acknowledges many leases in one call, each on its own. It is sent once, never
// retried: the per-item results say what was applied.
func (c *Client) Acks(ctx context.Context, acks []Ack) ([]AckResult, error) {
	var out struct {
		Results []AckResult `json:"results"`
	}
	_, err := c.do(ctx, call{method: "POST", path: "/v1/acks", body: map[string]any{"acks": acks}, out: &out})
	for i := range out.Results {
		if e := out.Results[i].Error; e != nil {
			e.Status = out.Results[i].Status
		}
	}
	return out.Results, err
}

// Extend renews a live lease for d and gives its new expiry; ErrConflict when the
// lease is no longer live.
func (c *Client) Extend(ctx context.Context, leaseID string, d time.Duration) (time.Time, error) {
	var out struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	_, err := c.do(ctx, call{method: "POST", path: "/v1/leases/" + url.PathEscape(leaseID) + "/extend", body: map[string]any{"lease": d.Milliseconds()}, out: &out, retry: true})
	return out.ExpiresAt, err
}

// traceKey is the context key of WithTraceparent.
type traceKey struct{}

// WithTraceparent returns a context whose schedules (Schedule, ScheduleMany) send
// traceparent, a W3C trace context ("00-<trace id>-<span id>-<flags>"), as the
// traceparent header: the task keeps it (or, when the server exports traces, its
// schedule span's), every delivery continues that trace, and a leased task shows it
// (Task.Traceparent). With OpenTelemetry, pass the current span's: propagation.TraceContext{}
// injected into a carrier gives it.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, traceKey{}, traceparent)
}

// traceHeader is the traceparent header of ctx's trace context, nil without one.
func traceHeader(ctx context.Context) http.Header {
	traceparent, _ := ctx.Value(traceKey{}).(string)
	if traceparent == "" {
		return nil
	}
	return http.Header{"Traceparent": {traceparent}}
}
