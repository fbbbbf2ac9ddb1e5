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
 * A schedule's trace, on a server of its own (traces off: it keeps the header as given).
 * Guards against a client that drops the traceparent on the way to the server (one task
 * or a batch) or back (a task's, a leased task's).
 */
class TraceparentTest {
    static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    static ServerProcess server;
    static PunctualClient client;

    @BeforeAll
    static void start(@TempDir Path dir) throws Exception {
        server = new ServerProcess(dir, List.of(), Map.of()).start();
        client = server.client();
    }

    @AfterAll
    static void stop() throws Exception { server.stop(); }

    @Test
    void aTraceparentIsKeptWithTheTaskAndALeasedTaskShowsIt() {
        String q = "java." + UUID.randomUUID().toString().substring(0, 8);
        ScheduleResult created = client.schedule(q, "traced", TaskSpec.create().payload(Map.of("n", 1)), TRACEPARENT);
        assertEquals(TRACEPARENT, created.task().traceparent());
        assertEquals(TRACEPARENT, client.get(q, "traced").traceparent());
        assertNull(client.schedule(q, "plain", TaskSpec.create().delay(Duration.ofHours(1))).task().traceparent());
        String other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        client.scheduleMany(q, List.of(TaskSpec.create().key("b1").delay(Duration.ofHours(1))), other);
        assertEquals(other, client.get(q, "b1").traceparent());
        List<Delivery> leases = client.lease(q, 10, Duration.ofSeconds(30), Duration.ZERO);
        assertEquals(1, leases.size());
        assertEquals(List.of("traced", TRACEPARENT), List.of(leases.get(0).key(), leases.get(0).traceparent()));
    }
}
