package dev.punctual;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The typed answers against the real server, on a server of their own: every member of a
 * task, the lease and its extension, the list filters and pages, the queue's counts and
 * settings with their versions, the dead tasks' retries, purges by state and the token's
 * access. Guards against a record that misreads or drops a member of the server's
 * answer, and an option that is not sent.
 */
class TypedAnswersTest {
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

    record Order(long id, String customer) {}

    @Test
    void everyMemberOfATask() {
        String q = queue();
        Instant due = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
        Target hook = new Target("https://shop.example.com/hooks/cancel", "PUT", Map.of("X-Shop", "7"),
                Duration.ofSeconds(3), null);
        ScheduleResult created = client.schedule(q, "full", TaskSpec.create().dueAt(due).payload(new Order(7, "ana"))
                .tag("wf-1", "eu").maxAttempts(5).backoff(Duration.ofSeconds(2), 3, Duration.ofMinutes(5))
                .repeatEvery(Duration.ofMinutes(90), 4).priority(3).group("customer-7")
                .uniqueFor(Duration.ofHours(2), true).jitter(Duration.ofMillis(1500)).target(hook));
        assertEquals(ScheduleOutcome.CREATED, created.outcome());
        Task t = created.task();
        assertEquals(List.of(q, "full", TaskState.SCHEDULED), List.of(t.queue(), t.key(), t.state()));
        assertTrue(!t.dueAt().isBefore(due) && t.dueAt().isBefore(due.plusMillis(1500)), t.dueAt() + ": jittered " + due);
        assertEquals(new Order(7, "ana"), t.payload(Order.class));
        assertEquals("ana", t.payloadJson().path("customer").asText());
        assertEquals(List.of(0, 5, 3, 1L), List.of(t.attempts(), t.maxAttempts(), t.priority(), t.version()));
        assertEquals(new Backoff(Duration.ofSeconds(2), 3, Duration.ofMinutes(5)), t.backoff());
        assertEquals(new Repeat(Duration.ofMinutes(90), null, null, null, OptionalInt.of(4), null), t.repeat());
        assertEquals(List.of("eu", "wf-1"), t.tags()); // the server keeps them sorted
        assertEquals("customer-7", t.group());
        assertNotNull(t.createdAt());
        assertEquals(t.createdAt(), t.updatedAt());
        assertNull(t.leaseExpiresAt());
        assertNull(t.lastError());
        assertEquals(hook, t.target());
        assertEquals(new UniqueFor(Duration.ofHours(2), true), t.uniqueFor());
        assertEquals(new Timing(null, Misfire.FIRE_ONCE, Duration.ofMinutes(1), 10, Overlap.SKIP, Duration.ofMillis(1500)),
                t.timing());
        assertEquals("full", t.json().path("key").asText());
        assertEquals(t, client.get(q, "full"));

        Task plain = client.schedule(q, "plain", TaskSpec.create()).task();
        assertEquals(List.of(20, 0), List.of(plain.maxAttempts(), plain.priority()));
        assertTrue(plain.payloadJson().isNull());
        assertNull(plain.payload(Order.class));
        assertEquals(List.of(), plain.tags());
        assertNull(plain.repeat());
        assertNull(plain.target());
        assertNull(plain.uniqueFor());
    }

    @Test
    void aLeaseAndItsExtension() {
        String q = queue();
        client.schedule(q, "k", TaskSpec.create().payload(new Order(1, "bo")));
        Delivery d = client.lease(q, 1, Duration.ofSeconds(30), Duration.ZERO).get(0);
        assertEquals(List.of(q, "k", TaskState.LEASED), List.of(d.queue(), d.key(), d.task().state()));
        assertEquals(new Order(1, "bo"), d.payload(Order.class));
        assertEquals(d.expiresAt(), d.task().leaseExpiresAt());
        assertEquals(new Lease(d.leaseId(), d.expiresAt()), d.lease());

        Lease extended = client.extend(d.leaseId(), Duration.ofMinutes(5));
        assertEquals(d.leaseId(), extended.id());
        assertTrue(extended.expiresAt().isAfter(d.expiresAt()), extended + " after " + d.expiresAt());
        assertEquals(extended.expiresAt(), client.get(q, "k").leaseExpiresAt());
        client.ack(d.leaseId(), Outcome.done());
        assertThrows(NotFoundException.class, () -> client.get(q, "k"));
    }

    @Test
    void listFiltersAndPages() {
        String q = queue();
        for (String key : List.of("a", "b", "c")) {
            client.schedule(q, key, TaskSpec.create().delay(Duration.ofMinutes(key.charAt(0))).tag(key.equals("b") ? "odd" : "even"));
        }
        client.schedule(q, "gone-wrong", TaskSpec.create());
        Delivery d = client.lease(q, 1, Duration.ofSeconds(30), Duration.ZERO).get(0);
        client.ack(d.leaseId(), Outcome.fail("no such order"));

        assertEquals(List.of("gone-wrong", "a", "b", "c"), client.list(q).map(Task::key).toList());
        assertEquals(List.of("a", "c"), client.list(q, ListOptions.create().tag("even")).map(Task::key).toList());
        assertEquals(List.of("a", "b", "c"),
                client.list(q, ListOptions.create().state(TaskState.SCHEDULED).limit(1)).map(Task::key).toList());
        assertEquals(List.of("gone-wrong"), client.list(q, ListOptions.create().state(TaskState.DEAD)).map(Task::key).toList());

        Page first = client.listPage(q, ListOptions.create().state(TaskState.SCHEDULED).limit(2));
        assertEquals(List.of("a", "b"), first.tasks().stream().map(Task::key).toList());
        assertNotNull(first.nextCursor());
        ListOptions rest = ListOptions.create().state(TaskState.SCHEDULED).limit(2).cursor(first.nextCursor());
        Page last = client.listPage(q, rest);
        assertEquals(List.of("c"), last.tasks().stream().map(Task::key).toList());
        assertNull(last.nextCursor());
        assertEquals(List.of("c"), client.list(q, rest).map(Task::key).toList());
        assertThrows(InvalidArgumentException.class, () -> client.listPage(q, ListOptions.create().limit(0)));

        Page dead = client.deadPage(q);
        assertEquals(List.of("gone-wrong"), dead.tasks().stream().map(Task::key).toList());
        assertEquals("no such order", dead.tasks().get(0).lastError());
        assertNull(dead.nextCursor());
    }

    @Test
    void queueCountsAndSettings() {
        String q = queue();
        client.schedule(q, "now", TaskSpec.create());
        client.schedule(q, "later", TaskSpec.create().delay(Duration.ofHours(1)));
        QueueInfo listed = client.queues().stream().filter(i -> i.name().equals(q)).findFirst().orElseThrow();
        assertEquals(List.of(2L, 0L, 0L, false), List.of(listed.scheduled(), listed.leased(), listed.dead(), listed.paused()));
        assertNotNull(listed.nextDueAt());
        assertNull(listed.lag());
        QueueInfo one = client.queue(q);
        assertEquals(List.of(q, 2L), List.of(one.name(), one.scheduled()));
        assertNotNull(one.oldestOverdue());
        assertNotNull(one.lag());
        assertNull(one.outbox());

        assertThrows(NotFoundException.class, () -> client.settings(q));
        QueueSettings put = client.putSettings(q, Map.of("group_concurrency", 2, "group_rate", "5/1s"), 0L);
        assertEquals(List.of(q, Source.API, 1L, false), List.of(put.queue(), put.source(), put.version(), put.paused()));
        assertEquals(OptionalInt.of(2), put.groupConcurrency());
        assertEquals("5/1s", put.groupRate());
        assertNull(put.action());
        assertNull(put.rate());
        assertEquals(20, put.defaults().maxAttempts());
        assertNull(put.defaults().repeat());
        assertThrows(ConflictException.class, () -> client.putSettings(q, Map.of("group_concurrency", 3), 0L));

        QueueSettings patched = client.patchSettings(q, Map.of("rate", "20/1m"), put.version());
        assertEquals(List.of(2L, "20/1m"), List.of(patched.version(), patched.rate()));
        assertEquals(OptionalInt.of(2), patched.groupConcurrency());
        assertThrows(ConflictException.class, () -> client.patchSettings(q, Map.of("rate", "1/1s"), put.version()));
        assertEquals(OptionalInt.empty(),
                client.patchSettings(q, Collections.singletonMap("group_concurrency", null)).groupConcurrency());

        assertTrue(client.pause(q).paused());
        assertTrue(client.queue(q).paused());
        assertFalse(client.resume(q).paused());
        QueueSettings now = client.settings(q);
        assertThrows(ConflictException.class, () -> client.deleteSettings(q, put.version()));
        client.deleteSettings(q, now.version());
        assertThrows(NotFoundException.class, () -> client.settings(q));
        client.putSettings(q, Map.of("rate", "1/1s"));
        client.deleteSettings(q);
        assertThrows(NotFoundException.class, () -> client.settings(q));
    }

    @Test
    void deadRetriesAndPurges() {
        String q = queue();
        List<String> keys = List.of("d1", "d2", "d3");
        for (String key : keys) client.schedule(q, key, TaskSpec.create().tag(key.equals("d1") ? "first" : "rest"));
        for (Delivery d : client.lease(q, 10, Duration.ofSeconds(30), Duration.ZERO)) client.ack(d.leaseId(), Outcome.fail("x"));
        assertEquals(keys, client.dead(q).map(Task::key).sorted().toList());

        assertEquals(1, client.retryDeadByTag(q, "first"));
        assertEquals(1, client.retryDeadMany(q, List.of("d2")));
        assertEquals(List.of("d3"), client.dead(q, PageOptions.create().limit(1)).map(Task::key).toList());
        assertEquals(1, client.retryAllDead(q));
        assertEquals(0, client.dead(q).count());

        client.lease(q, 1, Duration.ofSeconds(30), Duration.ZERO).forEach(d -> client.ack(d.leaseId(), Outcome.fail("x")));
        assertEquals(1, client.purge(q, PurgeState.DEAD));
        assertEquals(2, client.purge(q, PurgeState.SCHEDULED));
        client.schedule(q, "last", TaskSpec.create());
        assertEquals(1, client.purge(q));
        assertEquals(0, client.list(q).count());
    }

    @Test
    void theTokensAccess() {
        assertEquals(new Access("anyone", List.of("read", "schedule", "work", "admin"), List.of("*")), client.access());
    }
}
