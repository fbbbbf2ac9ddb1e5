package dev.punctual;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scenario 15 of clients/SCENARIOS.md, a dedupe window, and unique_for in a batch, on a
 * server of their own. Guards against a client that drops {@code unique_for} on the way
 * to the server or back, and one that mistakes a schedule kept by a completion (no task,
 * the completion instead) for a created one or for an error.
 */
class DedupeTest {
    static ServerProcess server;
    static PunctualClient client;

    @BeforeAll
    static void start(@TempDir Path dir) throws Exception {
        server = new ServerProcess(dir, List.of(), Map.of()).start();
        client = server.client();
    }

    @AfterAll
    static void stop() throws Exception { server.stop(); }

    static String queue() { return "java." + UUID.randomUUID().toString().substring(0, 8); }

    @Test
    void s15DedupeWindow() {
        String q = queue();
        Duration hour = Duration.ofHours(1);
        ScheduleResult first = client.schedule(q, "order-1", TaskSpec.create().payload(Map.of("n", 1)).uniqueFor(hour));
        assertEquals(ScheduleOutcome.CREATED, first.outcome());
        assertNull(first.completed());
        assertEquals(new UniqueFor(hour, false), client.get(q, "order-1").uniqueFor());

        List<Delivery> leases = client.lease(q, 10, Duration.ofSeconds(30), Duration.ZERO);
        assertEquals(1, leases.size());
        assertEquals("order-1", leases.get(0).key());
        assertEquals(new UniqueFor(hour, false), leases.get(0).uniqueFor());
        client.ack(leases.get(0).leaseId(), Outcome.done());

        ScheduleResult kept = client.schedule(q, "order-1", TaskSpec.create().payload(Map.of("n", 2)).uniqueFor(hour));
        assertEquals(ScheduleOutcome.KEPT, kept.outcome());
        assertNull(kept.task());
        Completed done = kept.completed();
        assertNotNull(done);
        assertEquals(List.of(q, "order-1", "done", 0, 1),
                List.of(done.queue(), done.key(), done.state(), done.attempts(), done.occurrence()));
        assertEquals(done.completedAt().plus(hour), done.uniqueUntil());
        assertThrows(NotFoundException.class, () -> client.get(q, "order-1"));
        assertEquals(List.of(), client.lease(q, 10, Duration.ofSeconds(30), Duration.ZERO));

        List<BatchResult> batch = client.scheduleMany(q, List.of(
                TaskSpec.key("order-1").payload(Map.of("n", 3)).uniqueFor(hour),
                TaskSpec.key("order-2").payload(Map.of("n", 1)).uniqueFor(hour)));
        assertEquals(List.of(new BatchResult("order-1", ScheduleOutcome.KEPT, null, done),
                        new BatchResult("order-2", ScheduleOutcome.CREATED, null, null)),
                batch);

        client.schedule(q, "order-3", TaskSpec.create().delay(hour).uniqueFor(hour, true));
        assertEquals(new UniqueFor(hour, true), client.get(q, "order-3").uniqueFor());

        InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                () -> client.schedule(q, "order-4", TaskSpec.create().uniqueFor(Duration.ZERO)));
        assertEquals(400, refused.status());
        assertEquals("unique_for", refused.getField());
        assertThrows(NotFoundException.class, () -> client.get(q, "order-4"));
    }

    @Test
    void uniqueForInABatch() {
        String q = queue();
        List<BatchResult> results = client.scheduleMany(q, List.of(
                TaskSpec.key("u1").delay(Duration.ofHours(1)).uniqueFor(Duration.ofMinutes(90), true),
                TaskSpec.key("u2").delay(Duration.ofHours(1)).uniqueFor(Duration.ZERO),
                TaskSpec.key("u3").delay(Duration.ofHours(1))));
        assertEquals(new BatchResult("u1", ScheduleOutcome.CREATED, null, null), results.get(0));
        assertEquals(new UniqueFor(Duration.ofMinutes(90), true), client.get(q, "u1").uniqueFor());
        InvalidArgumentException bad = assertInstanceOf(InvalidArgumentException.class, results.get(1).error());
        assertEquals("tasks[1].unique_for", bad.getField());
        assertNull(client.get(q, "u3").uniqueFor());
    }

    @Test
    void durationsAsTheServerWritesThem() {
        assertEquals(Duration.ofSeconds(90), Json.duration(Json.MAPPER.getNodeFactory().textNode("1m 30s")));
        assertEquals(Duration.parse("P1DT2H3M4.005S"),
                Json.duration(Json.MAPPER.getNodeFactory().textNode("1d 2h 3m 4s 5ms")));
        assertEquals(Duration.ofMillis(1500), Json.duration(Json.MAPPER.getNodeFactory().numberNode(1500)));
        for (String bad : List.of("", "soon", "1h x", "1.5h")) {
            assertThrows(IllegalArgumentException.class,
                    () -> Json.duration(Json.MAPPER.getNodeFactory().textNode(bad)), bad);
        }
    }
}
