package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * A client for the whole punctual HTTP API (see API.md). Thread-safe; make one and share
 * it (in Spring: a {@code @Bean}).
 *
 * <p>Calls that are safe to repeat (every call but the batch ack, which answers per
 * item, and the lease, which the worker retries itself) are retried with exponential
 * backoff on {@code 503} and connection errors; after the last try a connection error
 * is an {@link UnavailableException} with status 0.
 *
 * <p>Answers are typed records ({@link Task}, {@link Delivery}, {@link QueueInfo},
 * {@link QueueSettings}, …), each keeping the server's JSON for what it does not model.
 * What a call may leave out is an overload or an option value ({@link ListOptions},
 * {@link PageOptions}), never a null number.
 */
public final class PunctualClient {
    private final String server;
    private final String token;
    private final Duration timeout;
    private final int retries;
    private final Duration retryBackoff;
    private final HttpClient http;

    private PunctualClient(Builder b) {
        String s = b.server;
        this.server = s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
        this.token = b.token == null || b.token.isEmpty() ? null : b.token;
        this.timeout = b.timeout;
        this.retries = b.retries;
        this.retryBackoff = b.retryBackoff;
        this.http = HttpClient.newBuilder().connectTimeout(b.connectTimeout).version(HttpClient.Version.HTTP_1_1).build();
    }

    /** A client for {@code PUNCTUAL_SERVER} (default http://127.0.0.1:7575) with {@code PUNCTUAL_TOKEN}. */
    public static PunctualClient fromEnv() { return builder().build(); }

    public static Builder builder() { return new Builder(); }

    public static final class Builder {
        private String server = envOr("PUNCTUAL_SERVER", "http://127.0.0.1:7575");
        private String token = System.getenv("PUNCTUAL_TOKEN");
        private Duration timeout = Duration.ofSeconds(30);
        private Duration connectTimeout = Duration.ofSeconds(5);
        private int retries = 3;
        private Duration retryBackoff = Duration.ofMillis(100);

        public Builder server(String server) { this.server = server; return this; }
        public Builder token(String token) { this.token = token; return this; }
        /** Time limit of one request (a long poll adds its wait). */
        public Builder timeout(Duration timeout) { this.timeout = timeout; return this; }
        public Builder connectTimeout(Duration connectTimeout) { this.connectTimeout = connectTimeout; return this; }
        /** Retries after the first try of a repeatable call (0: none). */
        public Builder retries(int retries) { this.retries = retries; return this; }
        /** The first retry's wait; doubled for each next one, with jitter. */
        public Builder retryBackoff(Duration retryBackoff) { this.retryBackoff = retryBackoff; return this; }
        public PunctualClient build() { return new PunctualClient(this); }

        private static String envOr(String name, String fallback) {
            String v = System.getenv(name);
            return v == null || v.isEmpty() ? fallback : v;
        }
    }

    public String server() { return server; }

    // ---- tasks ----

    /** {@code PUT /v1/queues/{queue}/tasks/{key}}: create or update one task. */
    public ScheduleResult schedule(String queue, String key, TaskSpec spec) {
        return schedule(queue, key, spec, null);
    }

    /**
     * {@link #schedule(String, String, TaskSpec)} in a trace: {@code traceparent}, a W3C trace
     * context ({@code 00-<trace id>-<span id>-<flags>}; null: none), is sent as the header of that
     * name. The task keeps it (or, when the server exports traces, its schedule span's), every
     * delivery continues that trace, and a leased task shows it ({@link Task#traceparent()}).
     */
    public ScheduleResult schedule(String queue, String key, TaskSpec spec, String traceparent) {
        return scheduleResult(call("PUT", taskPath(queue, key), spec.toJson(), null, true, null, traceparent));
    }

    /** Sends a raw JSON body as the task (for fields this client does not model yet). */
    public ScheduleResult putRaw(String queue, String key, String json) {
        JsonNode body;
        try {
            body = Json.MAPPER.readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("not JSON: " + e.getMessage(), e);
        }
        return scheduleResult(call("PUT", taskPath(queue, key), body, null, true, null));
    }

    private static ScheduleResult scheduleResult(JsonNode r) {
        JsonNode task = Json.node(r, "task");
        return new ScheduleResult(Json.enumOf(ScheduleOutcome.class, r, "outcome"), task == null ? null : Task.of(task),
                Completed.of(r));
    }

    /** {@code POST /v1/queues/{queue}/tasks}: many at once; each spec needs {@link TaskSpec#key(String)}. */
    public List<BatchResult> scheduleMany(String queue, List<TaskSpec> specs) {
        return scheduleMany(queue, specs, null);
    }

    /** {@link #scheduleMany(String, List)} in a trace: every task keeps {@code traceparent} (see {@link #schedule(String, String, TaskSpec, String)}). */
    public List<BatchResult> scheduleMany(String queue, List<TaskSpec> specs, String traceparent) {
        ObjectNode body = Json.MAPPER.createObjectNode();
        ArrayNode arr = body.putArray("tasks");
        for (TaskSpec s : specs) arr.add(s.toJson());
        JsonNode r = call("POST", tasks(queue), body, null, true, null, traceparent);
        List<BatchResult> out = new ArrayList<>();
        for (JsonNode item : r.path("results")) {
            JsonNode e = Json.node(item, "error");
            out.add(new BatchResult(Json.text(item, "key"), Json.enumOf(ScheduleOutcome.class, item, "outcome"),
                    e == null ? null : error(400, e), Completed.of(item)));
        }
        return out;
    }

    /** The task; {@link NotFoundException} when there is none. */
    public Task get(String queue, String key) {
        return Task.of(call("GET", taskPath(queue, key), null, null, true, null));
    }

    /**
     * What happened to the task, oldest first, also once it is gone (within the queue's
     * history retention); {@link NotFoundException} when there is no task and no history
     * of the key.
     */
    public TaskHistory history(String queue, String key) {
        return TaskHistory.of(call("GET", taskPath(queue, key) + "/history", null, null, true, null));
    }

    /** Cancels the task (a leased one for good); {@link NotFoundException} when unknown. */
    public void cancel(String queue, String key) {
        call("DELETE", taskPath(queue, key), null, null, true, null);
    }

    /** Cancels every task of the queue carrying {@code tag}; answers how many. */
    public long cancelByTag(String queue, String tag) {
        return call("DELETE", q(queue) + "/tags/" + seg(tag), null, null, true, null).path("cancelled").asLong();
    }

    /** The first page of the queue's tasks in due order. */
    public Page listPage(String queue) { return listPage(queue, ListOptions.create()); }

    /** One page of the queue's tasks in due order: those {@code options} select, from its cursor. */
    public Page listPage(String queue, ListOptions options) {
        return taskPage(tasks(queue) + options.query(options.cursor()));
    }

    /** Every task of the queue, fetched page by page as the stream is read. */
    public Stream<Task> list(String queue) { return list(queue, ListOptions.create()); }

    /** The tasks {@code options} select, from its cursor on, fetched page by page as the stream is read. */
    public Stream<Task> list(String queue, ListOptions options) {
        return paged(options.cursor(), cursor -> {
            Page p = taskPage(tasks(queue) + options.query(cursor));
            return new Chunk<>(p.tasks(), p.nextCursor());
        });
    }

    // ---- queues ----

    /** {@code GET /v1/queues}: every queue with tasks or settings, with its counts. */
    public List<QueueInfo> queues() {
        List<QueueInfo> out = new ArrayList<>();
        call("GET", "/v1/queues", null, null, true, null).path("queues").forEach(q -> out.add(QueueInfo.of(q)));
        return out;
    }

    /** One queue's counts, lag and oldest overdue (zero counts when unknown). */
    public QueueInfo queue(String queue) { return QueueInfo.of(call("GET", q(queue), null, null, true, null)); }

    /** The first page of the queue's groups that have tasks, by name. */
    public GroupsPage groupsPage(String queue) { return groupsPage(queue, PageOptions.create()); }

    /** One page of the queue's groups that have tasks, by name. */
    public GroupsPage groupsPage(String queue, PageOptions page) {
        JsonNode r = call("GET", q(queue) + "/groups" + page.query(page.cursor()), null, null, true, null);
        List<GroupCounts> groups = new ArrayList<>();
        for (JsonNode g : r.path("groups")) {
            groups.add(new GroupCounts(g.path("group").asText(), g.path("scheduled").asLong(),
                    g.path("leased").asLong(), g.path("dead").asLong()));
        }
        return new GroupsPage(groups, Json.text(r, "next_cursor"));
    }

    /** The queue's settings; {@link NotFoundException} when it has none. */
    public QueueSettings settings(String queue) {
        return QueueSettings.of(call("GET", q(queue) + "/settings", null, null, true, null));
    }

    /** Creates or replaces the settings ({@code settings}: a Map, a record, a JsonNode). */
    public QueueSettings putSettings(String queue, Object settings) {
        return settingsCall("PUT", queue, settings, null);
    }

    /**
     * Creates or replaces the settings if they are at {@code ifVersion} (sent as
     * {@code If-Match}; 0: only if there are none yet), else {@link ConflictException}.
     */
    public QueueSettings putSettings(String queue, Object settings, long ifVersion) {
        return settingsCall("PUT", queue, settings, ifVersion);
    }

    /** Merges the given top-level fields into the settings. */
    public QueueSettings patchSettings(String queue, Object fields) {
        return settingsCall("PATCH", queue, fields, null);
    }

    /** Merges the given top-level fields into the settings if they are at {@code ifVersion}. */
    public QueueSettings patchSettings(String queue, Object fields, long ifVersion) {
        return settingsCall("PATCH", queue, fields, ifVersion);
    }

    private QueueSettings settingsCall(String method, String queue, Object body, Long ifVersion) {
        return QueueSettings.of(call(method, q(queue) + "/settings", Json.MAPPER.valueToTree(body), ifVersion, true, null));
    }

    /** Removes the settings: the queue's tasks stay and take the built-in defaults. */
    public void deleteSettings(String queue) {
        call("DELETE", q(queue) + "/settings", null, null, true, null);
    }

    /** Removes the settings if they are at {@code ifVersion}, else {@link ConflictException}. */
    public void deleteSettings(String queue, long ifVersion) {
        call("DELETE", q(queue) + "/settings", null, ifVersion, true, null);
    }

    /** Stops leasing and delivering the queue's tasks (schedules and reads go on); answers the settings. */
    public QueueSettings pause(String queue) {
        return QueueSettings.of(call("POST", q(queue) + "/pause", null, null, true, null));
    }

    /** Leases and delivers the queue's tasks again, the due ones in due order; answers the settings. */
    public QueueSettings resume(String queue) {
        return QueueSettings.of(call("POST", q(queue) + "/resume", null, null, true, null));
    }

    /** Cancels every task of the queue; answers how many. */
    public long purge(String queue) { return purge(queue, PurgeState.ALL); }

    /** Cancels every task of the queue in {@code state}; answers how many. */
    public long purge(String queue, PurgeState state) {
        String path = tasks(queue) + query("state", Json.wire(state));
        return call("DELETE", path, null, null, true, null).path("cancelled").asLong();
    }

    // ---- calendars ----

    /** {@code GET /v1/calendars}: every working-time calendar, by name (those of the config file too). */
    public List<Calendar> calendars() {
        List<Calendar> out = new ArrayList<>();
        call("GET", "/v1/calendars", null, null, true, null).path("calendars").forEach(c -> out.add(Calendar.of(c)));
        return out;
    }

    /** The calendar; {@link NotFoundException} when there is none. */
    public Calendar calendar(String name) {
        return Calendar.of(call("GET", cal(name), null, null, true, null));
    }

    /**
     * Creates or replaces the calendar; answers it as stored. Tasks already scheduled keep
     * their due times. A calendar of the server's config file is a {@link ConflictException}.
     */
    public Calendar putCalendar(String name, CalendarSpec spec) {
        return Calendar.of(call("PUT", cal(name), spec.toJson(), null, true, null));
    }

    /**
     * Creates or replaces the calendar if it is at {@code ifVersion} (sent as
     * {@code If-Match}; 0: only if it does not exist yet), else {@link ConflictException}.
     */
    public Calendar putCalendar(String name, CalendarSpec spec, long ifVersion) {
        return Calendar.of(call("PUT", cal(name), spec.toJson(), ifVersion, true, null));
    }

    /** Removes the calendar; {@link NotFoundException} when unknown. */
    public void deleteCalendar(String name) {
        call("DELETE", cal(name), null, null, true, null);
    }

    /** Removes the calendar if it is at {@code ifVersion}, else {@link ConflictException}. */
    public void deleteCalendar(String name, long ifVersion) {
        call("DELETE", cal(name), null, ifVersion, true, null);
    }

    // ---- dead tasks ----

    /** The first page of the queue's dead tasks. */
    public Page deadPage(String queue) { return deadPage(queue, PageOptions.create()); }

    /** One page of the queue's dead tasks. */
    public Page deadPage(String queue, PageOptions page) {
        return taskPage(q(queue) + "/dead" + page.query(page.cursor()));
    }

    /** Every dead task of the queue, fetched page by page as the stream is read. */
    public Stream<Task> dead(String queue) { return dead(queue, PageOptions.create()); }

    /** The queue's dead tasks from the page's cursor on, fetched page by page as the stream is read. */
    public Stream<Task> dead(String queue, PageOptions page) {
        return paged(page.cursor(), cursor -> {
            Page p = taskPage(q(queue) + "/dead" + page.query(cursor));
            return new Chunk<>(p.tasks(), p.nextCursor());
        });
    }

    /** Back to scheduled, due now, attempts reset; answers the task. */
    public Task retryDead(String queue, String key) {
        return Task.of(call("POST", q(queue) + "/dead/" + seg(key) + "/retry", null, null, true, null));
    }

    /** Retries every dead task of the queue; answers how many. */
    public long retryAllDead(String queue) { return retryDeadWhere(queue, Json.MAPPER.createObjectNode()); }

    /** Retries the queue's dead tasks carrying {@code tag}; answers how many. */
    public long retryDeadByTag(String queue, String tag) {
        return retryDeadWhere(queue, Json.MAPPER.createObjectNode().put("tag", tag));
    }

    /** Retries the queue's dead tasks among {@code keys}; answers how many. */
    public long retryDeadMany(String queue, List<String> keys) {
        ObjectNode body = Json.MAPPER.createObjectNode();
        body.set("keys", Json.MAPPER.valueToTree(keys));
        return retryDeadWhere(queue, body);
    }

    private long retryDeadWhere(String queue, ObjectNode body) {
        return call("POST", q(queue) + "/dead/retry", body, null, true, null).path("retried").asLong();
    }

    public void deleteDead(String queue, String key) {
        call("DELETE", q(queue) + "/dead/" + seg(key), null, null, true, null);
    }

    // ---- access ----

    /** {@code GET /v1/access}: the permissions and queues of this client's token. */
    public Access access() { return Access.of(call("GET", "/v1/access", null, null, true, null)); }

    // ---- audit ----

    /** The first page of the audit log, newest first (the server's 100 entries). Needs the admin permission. */
    public AuditPage auditPage() { return auditPage(PageOptions.create()); }

    /** One page of the audit log, newest first (at most 1000 entries). Needs the admin permission. */
    public AuditPage auditPage(PageOptions page) { return auditPageAt(page.query(page.cursor())); }

    /** Every entry of the audit log, newest first, fetched page by page as the stream is read. */
    public Stream<AuditEntry> audit() { return audit(PageOptions.create()); }

    /** The audit log's entries from the page's cursor on, newest first, fetched page by page as the stream is read. */
    public Stream<AuditEntry> audit(PageOptions page) {
        return paged(page.cursor(), cursor -> {
            AuditPage p = auditPageAt(page.query(cursor));
            return new Chunk<>(p.entries(), p.nextCursor());
        });
    }

    private AuditPage auditPageAt(String query) {
        JsonNode r = call("GET", "/v1/audit" + query, null, null, true, null);
        List<AuditEntry> entries = new ArrayList<>();
        r.path("entries").forEach(e -> entries.add(AuditEntry.of(e)));
        return new AuditPage(entries, Json.text(r, "next_cursor"));
    }

    // ---- pull workers ----

    /** Leases up to {@code max} due tasks for {@code lease}, holding the request up to {@code wait}. Not retried. */
    public List<Delivery> lease(String queue, int max, Duration lease, Duration wait) {
        return deliveries(call("POST", q(queue) + "/lease", leaseBody(max, lease, wait), null, false, wait));
    }

    /** Like {@link #lease} but cancellable: cancelling the future aborts the request (the server then releases the leases). */
    CompletableFuture<List<Delivery>> leaseAsync(String queue, int max, Duration lease, Duration wait) {
        CompletableFuture<HttpResponse<byte[]>> exchange = http.sendAsync(
                request("POST", q(queue) + "/lease", leaseBody(max, lease, wait), null, wait, null),
                HttpResponse.BodyHandlers.ofByteArray());
        CompletableFuture<List<Delivery>> answer = exchange.thenApply(resp -> deliveries(decode(resp)));
        // Cancelling a dependent stage leaves its source running: without this the long
        // poll stays open on the server and leases what falls due to a worker that left.
        answer.whenComplete((leases, error) -> {
            if (answer.isCancelled()) exchange.cancel(true);
        });
        return answer;
    }

    private static ObjectNode leaseBody(int max, Duration lease, Duration wait) {
        return Json.MAPPER.createObjectNode().put("max", max).put("lease", lease.toMillis()).put("wait", wait.toMillis());
    }

    public void ack(String leaseId, Outcome outcome) {
        call("POST", "/v1/leases/" + seg(leaseId) + "/ack", ackBody(null, outcome), null, true, null);
    }

    /** Many acks in one call, each applied or refused on its own. Not retried: resend what needs it. */
    public List<Ack.Result> acks(List<Ack> acks) {
        ObjectNode body = Json.MAPPER.createObjectNode();
        ArrayNode arr = body.putArray("acks");
        for (Ack a : acks) arr.add(ackBody(a.leaseId(), a.outcome()));
        JsonNode r = call("POST", "/v1/acks", body, null, false, null);
        List<Ack.Result> out = new ArrayList<>();
        for (JsonNode item : r.path("results")) {
            int status = item.path("status").asInt();
            JsonNode e = Json.node(item, "error");
            out.add(new Ack.Result(Json.text(item, "lease_id"), status, e == null ? null : error(status, e)));
        }
        return out;
    }

    /** Extends a live lease to {@code lease} from now; answers it with its new expiry. */
    public Lease extend(String leaseId, Duration lease) {
        ObjectNode body = Json.MAPPER.createObjectNode().put("lease", lease.toMillis());
        JsonNode r = call("POST", "/v1/leases/" + seg(leaseId) + "/extend", body, null, true, null);
        return new Lease(Json.text(r, "lease_id"), Json.instant(r, "expires_at"));
    }

    // ---- plumbing ----

    /** Decodes an API error body ({@code {"error": {...}}}) into its typed exception. */
    public static PunctualException decodeError(int status, String body) {
        try {
            JsonNode e = Json.MAPPER.readTree(body).path("error");
            if (e.isObject()) return error(status, e);
        } catch (IOException ignored) {
            // not JSON: fall through to a generic error naming the status
        }
        return PunctualException.of(status, status == 503 ? "unavailable" : "http_" + status, "HTTP " + status + ": " + body, null);
    }

    private static PunctualException error(int status, JsonNode e) {
        return PunctualException.of(status, e.path("code").asText(), e.path("message").asText(), Json.text(e, "field"));
    }

    private static ObjectNode ackBody(String leaseId, Outcome o) {
        ObjectNode b = Json.MAPPER.createObjectNode();
        if (leaseId != null) b.put("lease_id", leaseId);
        b.put("outcome", Json.wire(o.kind()));
        if (o.delay() != null) b.put("delay", o.delay().toMillis());
        if (o.error() != null) b.put("error", o.error());
        return b;
    }

    private static List<Delivery> deliveries(JsonNode r) {
        List<Delivery> out = new ArrayList<>();
        r.path("leases").forEach(l -> out.add(Delivery.of(l)));
        return out;
    }

    private Page taskPage(String path) {
        JsonNode r = call("GET", path, null, null, true, null);
        List<Task> tasks = new ArrayList<>();
        r.path("tasks").forEach(t -> tasks.add(Task.of(t)));
        return new Page(tasks, Json.text(r, "next_cursor"));
    }

    /** One page of a paged list: its items and the cursor of the next (null at the end). */
    private record Chunk<T>(List<T> items, String nextCursor) {}

    /** The items of the pages {@code fetch} answers, from {@code cursor} (null: the first page) on, fetched as read. */
    private static <T> Stream<T> paged(String cursor, Function<String, Chunk<T>> fetch) {
        Iterator<T> it = new Iterator<>() {
            Iterator<T> current = null;
            String next = cursor;
            boolean last = false;

            @Override
            public boolean hasNext() {
                while (current == null || !current.hasNext()) {
                    if (last) return false;
                    Chunk<T> page = fetch.apply(next);
                    current = page.items().iterator();
                    next = page.nextCursor();
                    last = next == null;
                }
                return true;
            }

            @Override
            public T next() {
                if (!hasNext()) throw new NoSuchElementException();
                return current.next();
            }
        };
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(it, Spliterator.ORDERED), false);
    }

    private HttpRequest request(String method, String path, JsonNode body, Long ifVersion, Duration extraTimeout,
            String traceparent) {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(server + path))
                .timeout(extraTimeout == null ? timeout : timeout.plus(extraTimeout))
                .header("Accept", "application/json");
        if (token != null) rb.header("Authorization", "Bearer " + token);
        if (ifVersion != null) rb.header("If-Match", ifVersion.toString());
        if (traceparent != null) rb.header("traceparent", traceparent);
        if (body != null) {
            rb.header("Content-Type", "application/json");
            rb.method(method, HttpRequest.BodyPublishers.ofByteArray(body.toString().getBytes(StandardCharsets.UTF_8)));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return rb.build();
    }

    private JsonNode call(String method, String path, JsonNode body, Long ifVersion, boolean repeatable, Duration extraTimeout) {
        return call(method, path, body, ifVersion, repeatable, extraTimeout, null);
    }

    private JsonNode call(String method, String path, JsonNode body, Long ifVersion, boolean repeatable, Duration extraTimeout,
            String traceparent) {
        HttpRequest req = request(method, path, body, ifVersion, extraTimeout, traceparent);
        int tries = repeatable ? retries + 1 : 1;
        for (int attempt = 1; ; attempt++) {
            try {
                HttpResponse<byte[]> resp = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
                if (resp.statusCode() == 503 && attempt < tries) {
                    pause(attempt);
                    continue;
                }
                return decode(resp);
            } catch (IOException e) {
                if (attempt >= tries) {
                    throw new UnavailableException(0, "cannot reach punctual at " + server + ": " + e, e);
                }
                pause(attempt);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new UnavailableException(0, "interrupted while calling " + server, e);
            }
        }
    }

    private static JsonNode decode(HttpResponse<byte[]> resp) {
        int status = resp.statusCode();
        String text = new String(resp.body(), StandardCharsets.UTF_8);
        if (status >= 200 && status < 300) {
            if (text.isBlank()) return Json.MAPPER.createObjectNode();
            try {
                return Json.MAPPER.readTree(text);
            } catch (IOException e) {
                throw new PunctualException(status, "internal", "unreadable answer: " + e.getMessage(), null, e);
            }
        }
        throw decodeError(status, text);
    }

    private void pause(int attempt) {
        long base = retryBackoff.toMillis() << Math.min(attempt - 1, 10);
        long wait = base / 2 + ThreadLocalRandom.current().nextLong(base / 2 + 1);
        try {
            Thread.sleep(wait); // backoff between retries of a failed request (library code, not a test)
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new UnavailableException(0, "interrupted while retrying " + server, e);
        }
    }

    private static String q(String queue) { return "/v1/queues/" + seg(queue); }

    private static String tasks(String queue) { return q(queue) + "/tasks"; }

    private static String taskPath(String queue, String key) { return tasks(queue) + "/" + seg(key); }

    private static String cal(String name) { return "/v1/calendars/" + seg(name); }

    private static String seg(String s) { return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20"); }

    /** A query string of the pairs whose value is not null ({@code ""} when none is). */
    static String query(String... kv) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] == null) continue;
            sb.append(sb.length() == 0 ? '?' : '&').append(kv[i]).append('=').append(seg(kv[i + 1]));
        }
        return sb.toString();
    }

    static <T> T join(CompletableFuture<T> f) throws InterruptedException {
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof PunctualException pe) throw pe;
            throw new UnavailableException(0, "lease failed: " + c, c);
        } catch (CancellationException e) {
            throw new InterruptedException("lease cancelled");
        }
    }
}
