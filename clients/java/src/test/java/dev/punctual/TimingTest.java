package dev.punctual;

import static dev.punctual.ServerProcess.waitUntil;
import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scenario 17 of clients/SCENARIOS.md, missed occurrences, on a server of its own.
 * Guards against a client that drops a timing policy on the way to the server (a repeat
 * that catches up nothing, a late task that fires anyway), one that misreads the
 * policies a task shows, a repeat under {@link Overlap#ALLOW} whose occurrences do not
 * fire as tasks of their own, and a {@link Delivery} that does not say which occurrence
 * it stands for ({@code scheduledFor}) and how many it stands in for ({@code missed}).
 */
class TimingTest {
    static ServerProcess server;
    static PunctualClient client;

    @BeforeAll
    static void start(@TempDir Path dir) throws Exception {
        server = new ServerProcess(dir, List.of(), Map.of()).start();
        client = server.client();
    }

    @AfterAll
    static void stop() throws Exception { server.stop(); }

    static String unique(String prefix) { return prefix + UUID.randomUUID().toString().substring(0, 8); }

    static boolean gone(String q, String key) {
        try { client.get(q, key); return false; } catch (NotFoundException e) { return true; }
    }

    /** The occurrences of a repeat every second after {@code due} that are due at {@code at}. */
    static int ticksDue(Instant due, Instant at) {
        return at.isBefore(due) ? 0 : (int) (Duration.between(due, at).toMillis() / 1000);
    }

    /** A time as the server writes it in an occurrence's key: UTC, milliseconds, {@code Z}. */
    static final DateTimeFormatter RFC3339_MILLIS =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    @Test
    void s17MissedOccurrences() {
        String q = unique("java.");
        String office = unique("java-office-");
        client.putCalendar(office, CalendarSpec.in("Asia/Shanghai")
                .hours(EnumSet.range(DayOfWeek.MONDAY, DayOfWeek.FRIDAY), "09:00-18:00"), 0L);
        Task daily = client.schedule(q, "daily", TaskSpec.create().repeatEvery(Duration.ofDays(1))
                .calendar(office).misfire(Misfire.FIRE_ALL).catchUpMax(3).overlap(Overlap.QUEUE)
                .jitter(Duration.ofSeconds(30))).task();
        assertEquals(new Timing(office, Misfire.FIRE_ALL, Duration.ofMinutes(1), 3, Overlap.QUEUE, Duration.ofSeconds(30)),
                daily.timing());
        assertEquals(daily, client.get(q, "daily"));

        List<BatchResult> batch = client.scheduleMany(q, List.of(TaskSpec.key("digest").repeatEvery(Duration.ofDays(1))
                .misfire(Misfire.SKIP).misfireAfter(Duration.ofHours(2)).jitter(Duration.ofSeconds(30))));
        assertEquals(ScheduleOutcome.CREATED, batch.get(0).outcome(), String.valueOf(batch));
        Timing digest = client.get(q, "digest").timing();
        assertEquals(List.of(Misfire.SKIP, Duration.ofHours(2), Duration.ofSeconds(30)),
                List.of(digest.misfire(), digest.misfireAfter(), digest.jitter()));

        Task plain = client.schedule(q, "plain", TaskSpec.create().delay(Duration.ofHours(1))).task();
        assertEquals(new Timing(null, Misfire.FIRE_ONCE, Duration.ofMinutes(1), 10, Overlap.SKIP, null), plain.timing());

        // Overlap has no such constant: the server's refusal is seen through a raw body.
        InvalidArgumentException invalid = assertThrows(InvalidArgumentException.class,
                () -> client.putRaw(q, "sometimes", "{\"repeat\": {\"every\": \"1h\"}, \"overlap\": \"sometimes\"}"));
        assertEquals("overlap", invalid.getField());
        assertTrue(gone(q, "sometimes"));

        // Under allow each occurrence fires as a task of its own, and the repeat moves on.
        String allowQueue = q + ".allow";
        Task allowed = client.schedule(allowQueue, "tick", TaskSpec.create().payload(Map.of("n", 1))
                .repeatEvery(Duration.ofSeconds(1)).overlap(Overlap.ALLOW)).task();
        assertEquals(Overlap.ALLOW, allowed.overlap());
        assertEquals(Overlap.ALLOW, client.get(allowQueue, "tick").timing().overlap());
        List<Delivery> occurrences = new CopyOnWriteArrayList<>();
        waitUntil(Duration.ofSeconds(5), "an occurrence",
                () -> occurrences.addAll(client.lease(allowQueue, 1, Duration.ofSeconds(30), Duration.ofSeconds(1))));
        Delivery occurrence = occurrences.get(0);
        assertFalse(occurrence.scheduledFor().isBefore(allowed.dueAt()), occurrence.scheduledFor() + " before " + allowed.dueAt());
        assertEquals("tick@" + RFC3339_MILLIS.format(occurrence.scheduledFor()), occurrence.key());
        assertEquals(List.of(1, 0), List.of(occurrence.payloadJson().path("n").asInt(), occurrence.missed()));
        assertEquals(Map.of("n", 1), occurrence.payload(new TypeReference<Map<String, Integer>>() {}));
        Task repeat = client.get(allowQueue, "tick");
        assertEquals(TaskState.SCHEDULED, repeat.state());
        assertTrue(repeat.dueAt().isAfter(occurrence.scheduledFor()), repeat + " after " + occurrence.scheduledFor());

        // A due_at in the past means now: lateness takes real time, so the clock is waited on.
        String late = q + ".late";
        Task tick = client.schedule(late, "tick", TaskSpec.create().repeatEvery(Duration.ofSeconds(1))
                .misfire(Misfire.FIRE_ALL).catchUpMax(2)).task();
        Task skipped = client.schedule(late, "late", TaskSpec.create().misfire(Misfire.SKIP)
                .misfireAfter(Duration.ofSeconds(1))).task();
        Task once = client.schedule(late, "once", TaskSpec.create()).task();
        assertEquals(List.of(Misfire.SKIP, Duration.ofSeconds(1)),
                List.of(skipped.misfire(), skipped.misfireAfter()));
        Instant ready = once.dueAt().plusMillis(3_020);
        waitUntil(Duration.ofSeconds(10), "3 s past the due times", () -> Instant.now().isAfter(ready));

        Instant before = Instant.now();
        Map<String, Delivery> leases = client.lease(late, 10, Duration.ofSeconds(30), Duration.ZERO).stream()
                .collect(Collectors.toMap(Delivery::key, Function.identity()));
        Instant after = Instant.now();
        assertEquals(List.of("once", "tick"), leases.keySet().stream().sorted().toList(), "the late one under skip does not fire");
        assertTrue(gone(late, "late"), "a one-off skipped ends");
        assertEquals(List.of(once.dueAt(), 0), List.of(leases.get("once").scheduledFor(), leases.get("once").missed()));
        Delivery first = leases.get("tick");
        assertEquals(List.of(tick.dueAt(), 1), List.of(first.scheduledFor(), first.attempt()));
        int low = ticksDue(tick.dueAt(), before) - 2, high = ticksDue(tick.dueAt(), after) - 2;
        assertTrue(first.missed() >= Math.max(low, 1) && first.missed() <= high,
                first.missed() + " in [" + low + ", " + high + "]");
        client.ack(leases.get("once").leaseId(), Outcome.done());
        client.ack(first.leaseId(), Outcome.retry(Duration.ZERO, "again"));

        List<Delivery> got = new CopyOnWriteArrayList<>();
        PunctualWorker w = PunctualWorker.builder().client(client).pollWait(Duration.ofSeconds(1))
                .handle(late, d -> { got.add(d); return Outcome.fail("seen"); }, 1).build().start(); // dead: the repeat stops
        try {
            waitUntil(Duration.ofSeconds(10), "the retry's delivery", () -> !got.isEmpty());
        } finally {
            try { w.stop(Duration.ofSeconds(5)); } catch (InterruptedException e) { throw new AssertionError(e); }
        }
        Delivery again = got.get(0);
        assertEquals(List.of("tick", 2, first.deliveryId()), List.of(again.key(), again.attempt(), again.deliveryId()));
        assertEquals(List.of(tick.dueAt(), 0), List.of(again.scheduledFor(), again.missed()),
                "a retry stands for the same occurrence");
    }

    @Test
    void timingBodies() {
        JsonNode body = TaskSpec.key("k").repeatEvery(Duration.ofHours(1)).calendar("office").misfire(Misfire.FIRE_ALL)
                .catchUpMax(7).overlap(Overlap.QUEUE).jitter(Duration.ofSeconds(30)).toJson();
        assertEquals(List.of("office", "fire_all", 7, "queue", 30_000L), List.of(body.path("calendar").asText(),
                body.path("misfire").asText(), body.path("catch_up_max").asInt(), body.path("overlap").asText(),
                body.path("jitter").asLong()));
        assertEquals(7_200_000L, TaskSpec.create().misfire(Misfire.SKIP).misfireAfter(Duration.ofHours(2)).toJson()
                .path("misfire_after").asLong());
        assertThrows(IllegalArgumentException.class, () -> Misfire.fromWire("later"));
    }
}
