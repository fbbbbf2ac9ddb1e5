package dev.punctual;

import static dev.punctual.ServerProcess.waitUntil;
import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.sun.net.httpserver.HttpServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Scenarios 1–13 of clients/SCENARIOS.md against the real `punctual serve` (14 in GroupsTest, 15 in DedupeTest, 16 in CalendarsTest). */
class ScenariosTest {
    static ServerProcess shared;
    static PunctualClient client;

    @BeforeAll
    static void startShared(@TempDir Path dir) throws Exception {
        shared = new ServerProcess(dir, List.of(), Map.of()).start();
        client = shared.client();
    }

    @AfterAll
    static void stopShared() throws Exception { shared.stop(); }

    static String queue() { return "java." + UUID.randomUUID().toString().substring(0, 8); }

    static PunctualWorker.Builder worker(PunctualClient c) {
        return PunctualWorker.builder().client(c).pollWait(Duration.ofSeconds(2)).maxBackoff(Duration.ofMillis(500));
    }

    /** The payload of the scenarios' orders, read with {@link Delivery#payload(Class)}. */
    record OrderRef(@JsonProperty("order_id") long orderId) {}

    static boolean gone(PunctualClient c, String q, String key) {
        try { c.get(q, key); return false; } catch (NotFoundException e) { return true; }
    }

    @Test
    void s01ScheduleLeaseAck() throws Exception {
        String q = queue();
        client.schedule(q, "k1", TaskSpec.create().payload(Map.of("order_id", 1234)).tag("t1"));
        assertEquals(TaskState.SCHEDULED, client.get(q, "k1").state());
        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(client).handle(q, d -> { got.add(d); return Outcome.done(); }, 2).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "task gone", () -> !got.isEmpty() && gone(client, q, "k1"));
            Delivery d = got.get(0);
            assertEquals(new OrderRef(1234), d.payload(OrderRef.class));
            assertEquals(1234, d.payloadJson().path("order_id").asInt());
            assertEquals(1, d.attempt());
            assertFalse(d.deliveryId().isEmpty());
            assertEquals("k1", d.key());
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s02RetryWithBackoff() throws Exception {
        String q = queue();
        client.schedule(q, "k", TaskSpec.create().backoff(Duration.ofSeconds(1), 2, Duration.ofSeconds(1)));
        List<Delivery> got = new CopyOnWriteArrayList<>();
        List<Long> at = new CopyOnWriteArrayList<>();
        List<String> lastError = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(client).handle(q, d -> {
            got.add(d);
            at.add(System.nanoTime());
            if (d.attempt() == 1) throw new IllegalStateException("boom on first try");
            lastError.add(d.task().lastError());
            return Outcome.done();
        }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "second try done", () -> got.size() >= 2 && gone(client, q, "k"));
            assertEquals(2, got.get(1).attempt());
            assertEquals(got.get(0).deliveryId(), got.get(1).deliveryId());
            assertTrue(at.get(1) - at.get(0) >= 800_000_000L, "retried too soon");
            assertTrue(lastError.get(0).contains("boom on first try"), lastError.get(0));
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s03Reschedule() throws Exception {
        String q = queue();
        client.schedule(q, "k", TaskSpec.create());
        List<Delivery> got = new CopyOnWriteArrayList<>();
        CountDownLatch firstAcked = new CountDownLatch(1);
        PunctualWorker w = worker(client).handle(q, d -> {
            got.add(d);
            return got.size() == 1 ? Outcome.reschedule(Duration.ofSeconds(1)) : Outcome.done();
        }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "rescheduled", () -> {
                if (got.isEmpty()) return false;
                if (got.size() >= 2) return true;
                try {
                    Task t = client.get(q, "k");
                    if (t.state() != TaskState.SCHEDULED) return false;
                    assertEquals(0, t.attempts());
                    long ms = t.dueAt().toEpochMilli() - Instant.now().toEpochMilli();
                    assertTrue(ms <= 1100, "due_at too late: " + ms);
                    firstAcked.countDown();
                    return true;
                } catch (NotFoundException e) { return false; }
            });
            waitUntil(Duration.ofSeconds(10), "second delivery", () -> got.size() >= 2 && gone(client, q, "k"));
            assertNotEquals(got.get(0).deliveryId(), got.get(1).deliveryId());
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s04FailDeadRetry() throws Exception {
        String q = queue();
        client.schedule(q, "k", TaskSpec.create());
        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(client).handle(q, d -> {
            got.add(d);
            return got.size() == 1 ? Outcome.fail("order not found") : Outcome.done();
        }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "dead", () -> {
                try { return client.get(q, "k").state() == TaskState.DEAD; } catch (NotFoundException e) { return false; }
            });
            assertEquals("order not found", client.get(q, "k").lastError());
            assertTrue(client.dead(q).anyMatch(t -> t.key().equals("k")));
            assertEquals(List.of("k"), client.deadPage(q, PageOptions.create().limit(10)).tasks().stream().map(Task::key).toList());
            Task retried = client.retryDead(q, "k");
            assertEquals(List.of(TaskState.SCHEDULED, 0), List.of(retried.state(), retried.attempts()));
            waitUntil(Duration.ofSeconds(10), "delivered again", () -> got.size() >= 2 && gone(client, q, "k"));
            assertEquals(1, got.get(1).attempt());
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s05HandlerLongerThanLease() throws Exception {
        String q = queue();
        client.schedule(q, "k", TaskSpec.create());
        List<Delivery> got = new CopyOnWriteArrayList<>();
        AtomicBoolean finished = new AtomicBoolean();
        PunctualWorker w = worker(client).leaseFor(Duration.ofSeconds(2)).handle(q, d -> {
            got.add(d);
            long end = System.nanoTime() + 5_000_000_000L;
            while (System.nanoTime() < end) Thread.onSpinWait(); // the handler's "work": 5 s busy
            finished.set(true);
            return Outcome.done();
        }, 2).build().start();
        try {
            waitUntil(Duration.ofSeconds(15), "done", () -> finished.get() && gone(client, q, "k"));
            assertEquals(1, got.size());
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s06WorkerKilledMidHandler() throws Exception {
        String q = queue();
        client.schedule(q, "k", TaskSpec.create());
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                "dev.punctual.KilledWorkerMain", shared.url(), q).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line;
            while ((line = out.readLine()) != null && !line.startsWith("HANDLING")) { /* skip logs */ }
            assertEquals("HANDLING k 1", line);
            assertEquals(TaskState.LEASED, client.get(q, "k").state());
        } finally {
            child.destroyForcibly(); // SIGKILL
            child.waitFor(10, TimeUnit.SECONDS);
        }
        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(client).handle(q, d -> { got.add(d); return Outcome.done(); }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(15), "redelivered", () -> !got.isEmpty() && gone(client, q, "k"));
            assertEquals(2, got.get(0).attempt());
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s07ServerRestartedWhileLongPolling(@TempDir Path dir) throws Exception {
        ServerProcess srv = new ServerProcess(dir, List.of(), Map.of()).start();
        PunctualClient c = PunctualClient.builder().server(srv.url()).retries(0).build();
        String q = queue();
        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(c).handle(q, d -> { got.add(d); return Outcome.done(); }, 1).build().start();
        try {
            client.queues(); // the worker is idle, long-polling
            srv.stop();
            srv.start();
            PunctualClient after = srv.client();
            after.schedule(q, "after-restart", TaskSpec.create());
            waitUntil(Duration.ofSeconds(20), "handled after restart", () -> !got.isEmpty() && gone(after, q, "after-restart"));
        } finally {
            w.stop(Duration.ofSeconds(2));
            srv.stop();
        }
    }

    @Test
    void s08GracefulShutdown() throws Exception {
        String q = queue();
        // a running handler finishes within the grace period and is acked
        client.schedule(q, "short", TaskSpec.create());
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        PunctualWorker w = worker(client).handle(q, d -> { running.countDown(); release.await(); return Outcome.done(); }, 2).build().start();
        assertTrue(running.await(10, TimeUnit.SECONDS));
        Thread stopper = new Thread(() -> { try { w.stop(Duration.ofSeconds(10)); } catch (InterruptedException ignored) { } });
        stopper.start();
        waitUntil(Duration.ofSeconds(5), "stopping", w::isStopping);
        client.schedule(q, "late", TaskSpec.create());
        release.countDown();
        stopper.join(15_000);
        assertFalse(stopper.isAlive());
        assertTrue(gone(client, q, "short"), "the finished handler was acked");
        // not leased by the stopping worker; a poll the server answered as the worker
        // hung up is released by the server at once, well inside the 30 s lease
        waitUntil(Duration.ofSeconds(5), "late is scheduled", () -> client.get(q, "late").state() == TaskState.SCHEDULED);
        client.cancel(q, "late");

        // a handler outlasting the grace period is not acked; the task comes back
        String q2 = queue();
        client.schedule(q2, "long", TaskSpec.create());
        CountDownLatch running2 = new CountDownLatch(1);
        PunctualWorker w2 = worker(client).leaseFor(Duration.ofSeconds(2)).handle(q2, d -> {
            running2.countDown();
            new CountDownLatch(1).await(); // until interrupted
            return Outcome.done();
        }, 1).build().start();
        assertTrue(running2.await(10, TimeUnit.SECONDS));
        w2.stop(Duration.ofMillis(300));
        assertEquals(TaskState.LEASED, client.get(q2, "long").state());
        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w3 = worker(client).handle(q2, d -> { got.add(d); return Outcome.done(); }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "came back", () -> !got.isEmpty() && gone(client, q2, "long"));
            assertEquals(2, got.get(0).attempt());
        } finally { w3.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void s09SignatureVerification(@TempDir Path dir) throws Exception {
        List<byte[]> bodies = new CopyOnWriteArrayList<>();
        List<String> headers = new CopyOnWriteArrayList<>();
        HttpServer receiver = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        receiver.createContext("/hook", ex -> {
            bodies.add(ex.getRequestBody().readAllBytes());
            headers.add(ex.getRequestHeaders().getFirst("Punctual-Signature"));
            ex.sendResponseHeaders(204, -1);
            ex.close();
        });
        receiver.start();
        String q = queue();
        String secret = "whsec-java-" + q;
        Path config = dir.resolve("punctual.toml");
        Files.writeString(config, "[egress]\nallow = [\"127.0.0.1\"]\n\n[queues.\"" + q + "\".action]\nkind = \"webhook\"\n"
                + "url = \"http://127.0.0.1:" + receiver.getAddress().getPort() + "/hook\"\nsecret_env = \"JAVA_HOOK_SECRET\"\ntimeout = \"5s\"\n");
        ServerProcess srv = new ServerProcess(dir, List.of("--config", config.toString()), Map.of("JAVA_HOOK_SECRET", secret));
        try {
            srv.start();
            PunctualClient c = srv.client();
            c.schedule(q, "signed", TaskSpec.create().payload(Map.of("order_id", 1234)));
            waitUntil(Duration.ofSeconds(10), "delivery", () -> !bodies.isEmpty());
            byte[] body = bodies.get(0);
            String header = headers.get(0);
            assertNotNull(header);
            long t = Long.parseLong(header.split(",")[0].substring(2));
            Instant now = Instant.ofEpochSecond(t);
            Duration tol = Duration.ofMinutes(5);
            assertTrue(Signatures.verify(body, header, secret, tol, now));
            assertTrue(Signatures.verify(body, header, secret));
            byte[] modified = new String(body, StandardCharsets.UTF_8).replace("1234", "1235").getBytes(StandardCharsets.UTF_8);
            assertFalse(Signatures.verify(modified, header, secret, tol, now));
            assertFalse(Signatures.verify(body, header, secret, tol, now.plusSeconds(301)));
            assertTrue(Signatures.verify(body, header, secret, tol, now.plusSeconds(299)));
            assertFalse(Signatures.verify(body, header, "wrong-secret", tol, now));
            waitUntil(Duration.ofSeconds(10), "done", () -> gone(c, q, "signed"));
        } finally {
            srv.stop();
            receiver.stop(0);
        }
    }

    @Test
    void s10EveryErrorCodeMapped(@TempDir Path dir) throws Exception {
        String q = queue();
        assertThrows(NotFoundException.class, () -> client.get(q, "missing"));
        client.schedule(q, "k", TaskSpec.create().delay(Duration.ofHours(1)));
        ConflictException ce = assertThrows(ConflictException.class,
                () -> client.schedule(q, "k", TaskSpec.create().ifExists(TaskSpec.IfExists.ERROR)));
        assertEquals(409, ce.status());
        InvalidArgumentException ie = assertThrows(InvalidArgumentException.class,
                () -> client.putRaw(q, "bad", "{\"delay\": \"soon\"}"));
        assertEquals("delay", ie.getField());

        ServerProcess authed = new ServerProcess(dir, List.of("--token", "s3cret"), Map.of());
        try {
            authed.start();
            UnauthorizedException ue = assertThrows(UnauthorizedException.class, () -> authed.client().get(q, "k"));
            assertEquals(401, ue.status());
            PunctualClient withToken = PunctualClient.builder().server(authed.url()).token("s3cret").build();
            assertThrows(NotFoundException.class, () -> withToken.get(q, "k"));
        } finally { authed.stop(); }

        PunctualClient nowhere = PunctualClient.builder().server("http://127.0.0.1:" + ServerProcess.freePort())
                .retries(2).retryBackoff(Duration.ofMillis(10)).build();
        UnavailableException un = assertThrows(UnavailableException.class, () -> nowhere.get(q, "k"));
        assertEquals(0, un.status());

        PunctualException fe = PunctualClient.decodeError(403,
                "{\"error\": {\"code\": \"forbidden\", \"message\": \"the token lacks the admin permission for queue x\"}}");
        assertTrue(fe instanceof ForbiddenException);
        assertEquals(403, fe.status());
        assertTrue(fe.getMessage().contains("admin"));
    }

    @Test
    void s11ScopedToken(@TempDir Path dir) throws Exception {
        String id = UUID.randomUUID().toString().substring(0, 8);
        String fullToken = "full-" + id;
        String readerToken = "reader-" + id;
        String scoped = "scoped." + queue();
        String other = queue();
        Path config = dir.resolve("scoped.toml");
        Files.writeString(config, "tokens = [\"" + fullToken + "\"]\n\n[[access]]\ntoken = \"" + readerToken
                + "\"\npermissions = [\"read\"]\nqueues = [\"scoped.*\"]\n");
        ServerProcess srv = new ServerProcess(dir, List.of("--config", config.toString()), Map.of());
        try {
            srv.start();
            PunctualClient full = PunctualClient.builder().server(srv.url()).token(fullToken).build();
            PunctualClient reader = PunctualClient.builder().server(srv.url()).token(readerToken).build();

            full.schedule(scoped, "readable", TaskSpec.create().payload(Map.of("v", 1)).delay(Duration.ofHours(1)));
            Task task = reader.get(scoped, "readable");
            assertEquals("readable", task.key());
            assertEquals(TaskState.SCHEDULED, task.state());
            assertEquals(Map.of("v", 1), task.payload(Map.class));

            ForbiddenException refused = assertThrows(ForbiddenException.class,
                    () -> reader.schedule(scoped, "refused", TaskSpec.create().payload(Map.of("v", 2))));
            assertEquals(403, refused.status());
            assertEquals("forbidden", refused.code());
            assertTrue(refused.getMessage().contains("schedule permission"), refused.getMessage());
            assertTrue(refused.getMessage().contains("'" + scoped + "'"), refused.getMessage());
            assertThrows(NotFoundException.class, () -> full.get(scoped, "refused"));

            ForbiddenException replaced = assertThrows(ForbiddenException.class,
                    () -> reader.schedule(scoped, "readable", TaskSpec.create().payload(Map.of("v", 3))));
            assertEquals(403, replaced.status());
            assertEquals(1, full.get(scoped, "readable").payloadJson().path("v").asInt());

            full.schedule(other, "elsewhere", TaskSpec.create().delay(Duration.ofHours(1)));
            assertEquals(TaskState.SCHEDULED, full.get(other, "elsewhere").state());
            ForbiddenException unread = assertThrows(ForbiddenException.class, () -> reader.get(other, "elsewhere"));
            assertEquals(403, unread.status());
            assertEquals("forbidden", unread.code());
            assertTrue(unread.getMessage().contains("read permission"), unread.getMessage());
            assertTrue(unread.getMessage().contains("'" + other + "'"), unread.getMessage());
        } finally { srv.stop(); }
    }

    @Test
    void s12Priorities() throws Exception {
        String q = queue();
        client.schedule(q, "low", TaskSpec.create().payload(Map.of("p", "low")));
        client.schedule(q, "high", TaskSpec.create().payload(Map.of("p", "high")).priority(9));
        client.schedule(q, "mid", TaskSpec.create().payload(Map.of("p", "mid")).priority(5));
        assertEquals(9, client.get(q, "high").priority());
        Task low = client.get(q, "low");
        assertEquals(0, low.priority());
        assertEquals(TaskState.SCHEDULED, low.state());

        InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                () -> client.schedule(q, "low", TaskSpec.create().payload(Map.of("p", "changed")).priority(10)));
        assertEquals(400, refused.status());
        assertEquals("priority", refused.getField());
        Task unchanged = client.get(q, "low");
        assertEquals(0, unchanged.priority());
        assertEquals("low", unchanged.payloadJson().path("p").asText());
        assertEquals(low.version(), unchanged.version());
        assertThrows(InvalidArgumentException.class, () -> client.schedule(q, "urgent", TaskSpec.create().priority(10)));
        assertTrue(gone(client, q, "urgent"), "a refused new key is not stored");

        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(client).handle(q, d -> { got.add(d); return Outcome.done(); }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "three deliveries", () -> got.size() == 3);
            assertEquals(List.of("high", "mid", "low"), got.stream().map(Delivery::key).toList());
            assertEquals(List.of(9, 5, 0), got.stream().map(Delivery::priority).toList());
            waitUntil(Duration.ofSeconds(10), "every task acked away",
                    () -> gone(client, q, "high") && gone(client, q, "mid") && gone(client, q, "low"));
        } finally { w.stop(Duration.ofSeconds(2)); }
    }

    @Test
    void priorityInABatch() {
        String q = queue();
        List<BatchResult> results = client.scheduleMany(q, List.of(
                TaskSpec.key("p7").delay(Duration.ofHours(1)).priority(7),
                TaskSpec.key("p10").delay(Duration.ofHours(1)).priority(10)));
        assertEquals(2, results.size());
        assertTrue(results.get(0).ok());
        assertEquals(7, client.get(q, "p7").priority());
        InvalidArgumentException refused = assertInstanceOf(InvalidArgumentException.class, results.get(1).error());
        assertEquals("tasks[1].priority", refused.getField());
    }

    @Test
    void s13Debounce() throws Exception {
        String q = queue();
        Duration maxWait = Duration.ofSeconds(3);
        ScheduleResult first = client.schedule(q, "order-1",
                TaskSpec.create().delay(Duration.ofSeconds(2)).payload(Map.of("status", 1)).debounce(maxWait));
        ScheduleResult second = client.schedule(q, "order-1",
                TaskSpec.create().delay(Duration.ofSeconds(2)).payload(Map.of("status", 2)).debounce(maxWait));
        // Without debounce this one would be due 5 s from now, past the burst's bound.
        ScheduleResult third = client.schedule(q, "order-1",
                TaskSpec.create().delay(Duration.ofSeconds(5)).payload(Map.of("status", 3)).debounce(maxWait));
        assertEquals(List.of(ScheduleOutcome.CREATED, ScheduleOutcome.REPLACED, ScheduleOutcome.REPLACED),
                List.of(first.outcome(), second.outcome(), third.outcome()));
        Instant bound = first.task().createdAt().plus(maxWait);
        List<Instant> due = List.of(first, second, third).stream().map(r -> r.task().dueAt()).toList();
        for (int i = 1; i < 3; i++) {
            assertFalse(due.get(i).isBefore(due.get(i - 1)), "answer " + (i + 1) + " due earlier: " + due);
            assertFalse(due.get(i).isAfter(bound), "answer " + (i + 1) + " due past " + bound + ": " + due);
        }
        assertEquals(3, third.task().payloadJson().path("status").asInt());

        InvalidArgumentException refused = assertThrows(InvalidArgumentException.class, () -> client.schedule(q,
                "order-1", TaskSpec.create().payload(Map.of("status", 4)).debounce(Duration.ZERO)));
        assertEquals(400, refused.status());
        assertEquals("debounce.max_wait", refused.getField());
        assertEquals(3, client.get(q, "order-1").payloadJson().path("status").asInt());

        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = worker(client).handle(q, d -> { got.add(d); return Outcome.done(); }, 1).build().start();
        try {
            waitUntil(Duration.ofSeconds(10), "the debounced delivery", () -> !got.isEmpty());
            assertEquals("order-1", got.get(0).key());
            assertEquals(3, got.get(0).payloadJson().path("status").asInt());
            waitUntil(Duration.ofSeconds(10), "order-1 acked away", () -> gone(client, q, "order-1"));
        } finally { w.stop(Duration.ofSeconds(2)); }
        assertEquals(1, got.size(), "delivered exactly once");
    }

    @Test
    void debounceInABatch() {
        String q = queue();
        Duration maxWait = Duration.ofMinutes(10);
        assertTrue(client.scheduleMany(q, List.of(TaskSpec.key("d1").delay(Duration.ofHours(1)).debounce(maxWait)))
                .get(0).ok());
        Instant created = client.get(q, "d1").createdAt();
        List<BatchResult> results = client.scheduleMany(q, List.of(
                TaskSpec.key("d1").delay(Duration.ofHours(2)).payload(Map.of("n", 2)).debounce(maxWait),
                TaskSpec.key("d2").delay(Duration.ofHours(1)).debounce(Duration.ZERO),
                TaskSpec.key("d3").delay(Duration.ofHours(1)).debounce(maxWait).ifExists(TaskSpec.IfExists.KEEP)));
        assertEquals(3, results.size());
        assertTrue(results.get(0).ok());
        Task moved = client.get(q, "d1");
        assertEquals(2, moved.payloadJson().path("n").asInt());
        assertFalse(moved.dueAt().isAfter(created.plus(maxWait)));
        InvalidArgumentException zero = assertInstanceOf(InvalidArgumentException.class, results.get(1).error());
        assertEquals("tasks[1].debounce.max_wait", zero.getField());
        InvalidArgumentException keep = assertInstanceOf(InvalidArgumentException.class, results.get(2).error());
        assertEquals("tasks[2].debounce", keep.getField());
    }

    @Test
    void signatureTestVector() {
        String header = "t=1700000000,v1=7d44587dddbaf4c7f70fef20f48cd594834ffea1641e3ac227b84408298738af";
        byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
        assertTrue(Signatures.verify(body, header, "whsec", Duration.ofMinutes(5), Instant.ofEpochSecond(1700000000)));
        assertEquals(header, Signatures.sign(body, "whsec", 1700000000));
    }

    /** A server rotating its secret signs with both, the new first; a receiver rotating its own checks both. */
    @Test
    void signatureWithRotatedSecrets() {
        byte[] body = "{\"key\":\"order-1\"}".getBytes(StandardCharsets.UTF_8);
        long t = 1700000000;
        Duration tol = Duration.ofMinutes(5);
        Instant now = Instant.ofEpochSecond(t);
        String both = Signatures.sign(body, List.of("whsec-new", "whsec-old"), t);
        assertEquals(Signatures.sign(body, "whsec-new", t) + "," + Signatures.sign(body, "whsec-old", t).split(",")[1], both);
        assertTrue(Signatures.verify(body, both, List.of("whsec-new"), tol, now));
        assertTrue(Signatures.verify(body, both, List.of("whsec-old"), tol, now));
        assertTrue(Signatures.verify(body, both, List.of("whsec-new", "whsec-old"), tol, now));
        assertTrue(Signatures.verify(body, both, "whsec-old", tol, now));
        assertFalse(Signatures.verify(body, both, List.of("whsec-other"), tol, now));
        assertFalse(Signatures.verify(body, both, List.of(), tol, now));
        assertFalse(Signatures.verify(body, both, "", tol, now));
        String single = Signatures.sign(body, "whsec-new", t);
        assertTrue(Signatures.verify(body, single, List.of("whsec-other", "whsec-new"), tol, now));
        assertTrue(Signatures.verify(body, single + ",v2=abc,x", List.of("whsec-new"), tol, now), "unknown fields ignored");
        byte[] modified = "{\"key\":\"order-2\"}".getBytes(StandardCharsets.UTF_8);
        assertFalse(Signatures.verify(modified, both, List.of("whsec-new", "whsec-old"), tol, now));
        assertFalse(Signatures.verify(body, both, List.of("whsec-new", "whsec-old"), tol, now.plusSeconds(301)));
        assertFalse(Signatures.verify(body, "t=" + t, List.of("whsec-new"), tol, now));
        assertFalse(Signatures.verify(body, both.substring(both.indexOf(',') + 1), List.of("whsec-new"), tol, now));
    }
}
