package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.time.Instant;
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
 */
public final class PunctualClient {
    static final ObjectMapper MAPPER = new ObjectMapper();

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
        JsonNode r = call("PUT", tasks(queue) + "/" + seg(key), spec.toJson(), null, true, null);
        return scheduleResult(r);
    }

    /** Sends a raw JSON body as the task (for fields this client does not model yet). */
    public ScheduleResult putRaw(String queue, String key, String json) {
        JsonNode body;
        try {
            body = MAPPER.readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("not JSON: " + e.getMessage(), e);
        }
        JsonNode r = call("PUT", tasks(queue) + "/" + seg(key), body, null, true, null);
        return scheduleResult(r);
    }

    private static ScheduleResult scheduleResult(JsonNode r) {
        return new ScheduleResult(r.path("outcome").asText(), r.hasNonNull("task") ? r.get("task") : null,
                Completed.of(r));
    }

    /** {@code POST /v1/queues/{queue}/tasks}: many at once; each spec needs {@link TaskSpec#key(String)}. */
    public List<BatchResult> scheduleMany(String queue, List<TaskSpec> specs) {
        ObjectNode body = MAPPER.createObjectNode();
        ArrayNode arr = body.putArray("tasks");
        for (TaskSpec s : specs) arr.add(s.toJson());
        JsonNode r = call("POST", tasks(queue), body, null, true, null);
        List<BatchResult> out = new ArrayList<>();
        for (JsonNode item : r.path("results")) {
            JsonNode e = item.get("error");
            out.add(new BatchResult(item.path("key").asText(null), item.path("outcome").asText(null),
                    e == null || e.isNull() ? null : error(400, e), Completed.of(item)));
        }
        return out;
    }

    /** The task; {@link NotFoundException} when there is none. */
    public JsonNode get(String queue, String key) {
        return call("GET", tasks(queue) + "/" + seg(key), null, null, true, null);
    }

    /** Cancels the task (a leased one for good); {@link NotFoundException} when unknown. */
    public void cancel(String queue, String key) {
        call("DELETE", tasks(queue) + "/" + seg(key), null, null, true, null);
    }

    /** Cancels every task of the queue carrying {@code tag}; answers how many. */
    public long cancelByTag(String queue, String tag) {
        return call("DELETE", q(queue) + "/tags/" + seg(tag), null, null, true, null).path("cancelled").asLong();
    }

    /** One page of the queue's tasks in due order; state, tag, limit and cursor may be null. */
    public Page listPage(String queue, String state, String tag, Integer limit, String cursor) {
        return page(tasks(queue) + query("state", state, "tag", tag, "limit", limit == null ? null : limit.toString(), "cursor", cursor));
    }

    /** Every task of the queue (state and tag may be null), fetched page by page as the stream is read. */
    public Stream<JsonNode> list(String queue, String state, String tag) {
        return paged(cursor -> listPage(queue, state, tag, null, cursor));
    }

    // ---- queues ----

    /** {@code GET /v1/queues}: the array of queue objects. */
    public JsonNode queues() { return call("GET", "/v1/queues", null, null, true, null).path("queues"); }

    /** One queue's counts, lag and oldest overdue (zero counts when unknown). */
    public JsonNode queue(String queue) { return call("GET", q(queue), null, null, true, null); }

    /** One page of the queue's groups that have tasks, by name; limit and cursor may be null. */
    public GroupsPage groupsPage(String queue, Integer limit, String cursor) {
        String path = q(queue) + "/groups" + query("limit", limit == null ? null : limit.toString(), "cursor", cursor);
        JsonNode r = call("GET", path, null, null, true, null);
        List<GroupCounts> groups = new ArrayList<>();
        for (JsonNode g : r.path("groups")) {
            groups.add(new GroupCounts(g.path("group").asText(), g.path("scheduled").asLong(),
                    g.path("leased").asLong(), g.path("dead").asLong()));
        }
        JsonNode next = r.get("next_cursor");
        return new GroupsPage(groups, next == null || next.isNull() ? null : next.asText());
    }

    public JsonNode settings(String queue) { return call("GET", q(queue) + "/settings", null, null, true, null); }

    /** Creates or replaces the settings; {@code ifVersion} (may be null) makes it conditional. */
    public JsonNode putSettings(String queue, Object settings, Long ifVersion) {
        return call("PUT", q(queue) + "/settings", MAPPER.valueToTree(settings), ifVersion, true, null);
    }

    /** Merges the given top-level fields into the settings. */
    public JsonNode patchSettings(String queue, Object fields, Long ifVersion) {
        return call("PATCH", q(queue) + "/settings", MAPPER.valueToTree(fields), ifVersion, true, null);
    }

    public void deleteSettings(String queue, Long ifVersion) {
        call("DELETE", q(queue) + "/settings", null, ifVersion, true, null);
    }

    public JsonNode pause(String queue) { return call("POST", q(queue) + "/pause", null, null, true, null); }

    public JsonNode resume(String queue) { return call("POST", q(queue) + "/resume", null, null, true, null); }

    /** Cancels every task in {@code state} (scheduled, dead, all; null: all); answers how many. */
    public long purge(String queue, String state) {
        return call("DELETE", tasks(queue) + query("state", state), null, null, true, null).path("cancelled").asLong();
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
     * Creates or replaces the calendar; answers it as stored. {@code ifVersion} (may be
     * null) makes it conditional, {@link ConflictException} when the calendar is at
     * another version (0: only if it does not exist yet), as for a calendar of the
     * server's config file. Tasks already scheduled keep their due times.
     */
    public Calendar putCalendar(String name, CalendarSpec spec, Long ifVersion) {
        return Calendar.of(call("PUT", cal(name), spec.toJson(), ifVersion, true, null));
    }

    /** Removes the calendar; {@code ifVersion} as for {@link #putCalendar}; {@link NotFoundException} when unknown. */
    public void deleteCalendar(String name, Long ifVersion) {
        call("DELETE", cal(name), null, ifVersion, true, null);
    }

    // ---- dead tasks ----

    public Page deadPage(String queue, Integer limit, String cursor) {
        return page(q(queue) + "/dead" + query("limit", limit == null ? null : limit.toString(), "cursor", cursor));
    }

    public Stream<JsonNode> dead(String queue) { return paged(cursor -> deadPage(queue, null, cursor)); }

    /** Back to scheduled, due now, attempts reset; answers the task. */
    public JsonNode retryDead(String queue, String key) {
        return call("POST", q(queue) + "/dead/" + seg(key) + "/retry", null, null, true, null);
    }

    /** Retries the dead tasks with this tag, or these keys, or (both null) all of them. */
    public long retryDeadMany(String queue, String tag, List<String> keys) {
        ObjectNode body = MAPPER.createObjectNode();
        if (tag != null) body.put("tag", tag);
        if (keys != null) body.set("keys", MAPPER.valueToTree(keys));
        return call("POST", q(queue) + "/dead/retry", body, null, true, null).path("retried").asLong();
    }

    public void deleteDead(String queue, String key) {
        call("DELETE", q(queue) + "/dead/" + seg(key), null, null, true, null);
    }

    // ---- pull workers ----

    /** Leases up to {@code max} due tasks for {@code lease}, holding the request up to {@code wait}. Not retried. */
    public List<Delivery> lease(String queue, int max, Duration lease, Duration wait) {
        ObjectNode body = MAPPER.createObjectNode().put("max", max).put("lease", lease.toMillis()).put("wait", wait.toMillis());
        return leases(call("POST", q(queue) + "/lease", body, null, false, wait));
    }

    /** Like {@link #lease} but cancellable: cancelling the future aborts the request (the server then releases the leases). */
    CompletableFuture<List<Delivery>> leaseAsync(String queue, int max, Duration lease, Duration wait) {
        ObjectNode body = MAPPER.createObjectNode().put("max", max).put("lease", lease.toMillis()).put("wait", wait.toMillis());
        CompletableFuture<HttpResponse<byte[]>> exchange =
                http.sendAsync(request("POST", q(queue) + "/lease", body, null, wait), HttpResponse.BodyHandlers.ofByteArray());
        CompletableFuture<List<Delivery>> answer = exchange.thenApply(resp -> leases(decode(resp)));
        // Cancelling a dependent stage leaves its source running: without this the long
        // poll stays open on the server and leases what falls due to a worker that left.
        answer.whenComplete((leases, error) -> {
            if (answer.isCancelled()) exchange.cancel(true);
        });
        return answer;
    }

    public void ack(String leaseId, Outcome outcome) {
        call("POST", "/v1/leases/" + seg(leaseId) + "/ack", ackBody(null, outcome), null, true, null);
    }

    /** Many acks in one call, each applied or refused on its own. Not retried: resend what needs it. */
    public List<Ack.Result> acks(List<Ack> acks) {
        ObjectNode body = MAPPER.createObjectNode();
        ArrayNode arr = body.putArray("acks");
        for (Ack a : acks) arr.add(ackBody(a.leaseId(), a.outcome()));
        JsonNode r = call("POST", "/v1/acks", body, null, false, null);
        List<Ack.Result> out = new ArrayList<>();
        for (JsonNode item : r.path("results")) {
            int status = item.path("status").asInt();
            JsonNode e = item.get("error");
            out.add(new Ack.Result(item.path("lease_id").asText(null), status,
                    e == null || e.isNull() ? null : error(status, e)));
        }
        return out;
    }

    /** Extends a live lease to {@code lease} from now; answers the new expiry. */
    public Instant extend(String leaseId, Duration lease) {
        ObjectNode body = MAPPER.createObjectNode().put("lease", lease.toMillis());
        return Instant.parse(call("POST", "/v1/leases/" + seg(leaseId) + "/extend", body, null, true, null).path("expires_at").asText());
    }

    // ---- plumbing ----

    /** Decodes an API error body ({@code {"error": {...}}}) into its typed exception. */
    public static PunctualException decodeError(int status, String body) {
        try {
            JsonNode e = MAPPER.readTree(body).path("error");
            if (e.isObject()) return error(status, e);
        } catch (IOException ignored) {
            // not JSON: fall through to a generic error naming the status
        }
        return PunctualException.of(status, status == 503 ? "unavailable" : "http_" + status, "HTTP " + status + ": " + body, null);
    }

    private static PunctualException error(int status, JsonNode e) {
        JsonNode field = e.get("field");
        return PunctualException.of(status, e.path("code").asText(), e.path("message").asText(),
                field == null || field.isNull() ? null : field.asText());
    }

    private static ObjectNode ackBody(String leaseId, Outcome o) {
        ObjectNode b = MAPPER.createObjectNode();
        if (leaseId != null) b.put("lease_id", leaseId);
        b.put("outcome", o.kind().name().toLowerCase());
        if (o.delay() != null) b.put("delay", o.delay().toMillis());
        if (o.error() != null) b.put("error", o.error());
        return b;
    }

    private static List<Delivery> leases(JsonNode r) {
        List<Delivery> out = new ArrayList<>();
        for (JsonNode l : r.path("leases")) {
            JsonNode scheduledFor = l.path("scheduled_for");
            out.add(new Delivery(l.path("lease_id").asText(), Instant.parse(l.path("expires_at").asText()),
                    l.path("attempt").asInt(), l.path("delivery_id").asText(),
                    scheduledFor.isTextual() ? Instant.parse(scheduledFor.asText()) : null, l.path("missed").asInt(0),
                    l.path("task")));
        }
        return out;
    }

    private Page page(String path) {
        JsonNode r = call("GET", path, null, null, true, null);
        List<JsonNode> items = new ArrayList<>();
        r.path("tasks").forEach(items::add);
        JsonNode next = r.get("next_cursor");
        return new Page(items, next == null || next.isNull() ? null : next.asText());
    }

    private static Stream<JsonNode> paged(java.util.function.Function<String, Page> fetch) {
        Iterator<JsonNode> it = new Iterator<>() {
            Iterator<JsonNode> current = null;
            String cursor = null;
            boolean last = false;

            @Override
            public boolean hasNext() {
                while (current == null || !current.hasNext()) {
                    if (last) return false;
                    Page p = fetch.apply(cursor);
                    current = p.tasks().iterator();
                    cursor = p.nextCursor();
                    last = cursor == null;
                }
                return true;
            }

            @Override
            public JsonNode next() {
                if (!hasNext()) throw new NoSuchElementException();
                return current.next();
            }
        };
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(it, Spliterator.ORDERED), false);
    }

    private HttpRequest request(String method, String path, JsonNode body, Long ifVersion, Duration extraTimeout) {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(server + path))
                .timeout(extraTimeout == null ? timeout : timeout.plus(extraTimeout))
                .header("Accept", "application/json");
        if (token != null) rb.header("Authorization", "Bearer " + token);
        if (ifVersion != null) rb.header("If-Match", ifVersion.toString());
        if (body != null) {
            rb.header("Content-Type", "application/json");
            rb.method(method, HttpRequest.BodyPublishers.ofByteArray(body.toString().getBytes(StandardCharsets.UTF_8)));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return rb.build();
    }

    private JsonNode call(String method, String path, JsonNode body, Long ifVersion, boolean repeatable, Duration extraTimeout) {
        HttpRequest req = request(method, path, body, ifVersion, extraTimeout);
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
            if (text.isBlank()) return MAPPER.createObjectNode();
            try {
                return MAPPER.readTree(text);
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

    private static String cal(String name) { return "/v1/calendars/" + seg(name); }

    private static String seg(String s) { return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20"); }

    private static String query(String... kv) {
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
