package dev.punctual;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scenario 14 of clients/SCENARIOS.md, groups, and the groups listing page by page, on a
 * server of their own. Guards against a client that drops {@code group} on the way to the
 * server or back, and a listing that loses a count or the cursor.
 */
class GroupsTest {
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
    void s14Groups() {
        String q = queue();
        QueueSettings settings = client.putSettings(q, Map.of("group_concurrency", 1));
        assertEquals(OptionalInt.of(1), settings.groupConcurrency());
        Instant now = Instant.now();
        List<String> keys = List.of("a1", "a2", "a3");
        for (int n = 0; n < keys.size(); n++) {
            client.schedule(q, keys.get(n), TaskSpec.create().payload(Map.of("n", n)).group("customer-a")
                    .dueAt(now.minusSeconds(3 - n)));
        }
        assertTrue(client.scheduleMany(q, List.of(TaskSpec.key("b1").group("customer-b"))).get(0).ok());
        assertEquals("customer-a", client.get(q, "a2").group());
        assertEquals("customer-b", client.get(q, "b1").group());

        List<Delivery> leases = client.lease(q, 10, Duration.ofSeconds(30), Duration.ZERO);
        Map<String, String> leased = leases.stream().collect(Collectors.toMap(Delivery::key, Delivery::group));
        assertEquals(Map.of("a1", "customer-a", "b1", "customer-b"), leased);

        GroupsPage page = client.groupsPage(q, PageOptions.create().limit(10));
        assertEquals(List.of(new GroupCounts("customer-a", 2, 1, 0), new GroupCounts("customer-b", 0, 1, 0)),
                page.groups());
        assertNull(page.nextCursor());

        Delivery a1 = leases.stream().filter(d -> d.key().equals("a1")).findFirst().orElseThrow();
        client.ack(a1.leaseId(), Outcome.done());
        List<Delivery> next = client.lease(q, 10, Duration.ofSeconds(30), Duration.ZERO);
        assertEquals(List.of("a2"), next.stream().map(Delivery::key).toList());

        InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                () -> client.schedule(q, "c1", TaskSpec.create().group("")));
        assertEquals(400, refused.status());
        assertEquals("group", refused.getField());
        assertThrows(NotFoundException.class, () -> client.get(q, "c1"));
    }

    @Test
    void groupsPageByPage() {
        String q = queue();
        List<String> groups = List.of("gamma", "alpha", "beta", "alpha");
        List<TaskSpec> specs = new java.util.ArrayList<>();
        for (int n = 0; n < groups.size(); n++) {
            specs.add(TaskSpec.key("k" + n).delay(Duration.ofHours(1)).group(groups.get(n)));
        }
        specs.add(TaskSpec.key("bad").delay(Duration.ofHours(1)).group("tenant\u0007"));
        List<BatchResult> results = client.scheduleMany(q, specs);
        assertTrue(results.get(0).ok());
        assertEquals("gamma", client.get(q, "k0").group());
        InvalidArgumentException bad = assertInstanceOf(InvalidArgumentException.class, results.get(4).error());
        assertEquals("tasks[4].group", bad.getField());

        GroupsPage first = client.groupsPage(q, PageOptions.create().limit(2));
        assertEquals(List.of(new GroupCounts("alpha", 2, 0, 0), new GroupCounts("beta", 1, 0, 0)), first.groups());
        assertNotNull(first.nextCursor());
        GroupsPage last = client.groupsPage(q, PageOptions.create().limit(2).cursor(first.nextCursor()));
        assertEquals(List.of(new GroupCounts("gamma", 1, 0, 0)), last.groups());
        assertNull(last.nextCursor());
        assertEquals(List.of(), client.groupsPage(q + ".none").groups());
        client.schedule(q, "plain", TaskSpec.create().delay(Duration.ofHours(1)));
        assertNull(client.get(q, "plain").group());
    }
}
