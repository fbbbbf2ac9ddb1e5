package dev.punctual;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A task's history and the audit log against the real server, each test on a server of
 * its own (the audit log is the server's). Guards against a history or an audit entry
 * read wrong (an event's kind, its state after the event, what a replace changed, a
 * member the event leaves out that does not read as null or empty), a history of an
 * unknown key that is not a {@link NotFoundException}, and an audit log whose pages or
 * stream lose or repeat an entry.
 */
class HistoryTest {
    static String queue() { return "java.history." + UUID.randomUUID().toString().substring(0, 8); }

    @Test
    void scheduleReplaceCancelThenGone(@TempDir Path dir) throws Exception {
        try (ServerProcess server = new ServerProcess(dir, List.of(), Map.of()).start()) {
            PunctualClient client = server.client();
            String q = queue();
            Instant before = Instant.now().minusSeconds(1);
            client.schedule(q, "order/1", TaskSpec.create().delay(Duration.ofHours(1)).payload(Map.of("n", 1)));
            client.schedule(q, "order/1", TaskSpec.create().delay(Duration.ofHours(2)).payload(Map.of("n", 2)));
            client.cancel(q, "order/1");

            TaskHistory history = client.history(q, "order/1");
            assertEquals(List.of(q, "order/1", Duration.ofDays(7)), List.of(history.queue(), history.key(), history.retention()));
            assertEquals(List.of(HistoryEvent.Kind.CREATED, HistoryEvent.Kind.REPLACED, HistoryEvent.Kind.CANCELLED),
                    history.events().stream().map(HistoryEvent::event).collect(Collectors.toList()));
            assertEquals(List.of(HistoryEvent.State.SCHEDULED, HistoryEvent.State.SCHEDULED, HistoryEvent.State.GONE),
                    history.events().stream().map(HistoryEvent::state).collect(Collectors.toList()));
            HistoryEvent created = history.events().get(0), replaced = history.events().get(1),
                    cancelled = history.events().get(2);
            assertTrue(created.at().isAfter(before) && !cancelled.at().isBefore(created.at()));
            assertEquals(List.of(), created.changed());
            assertEquals(List.of("due_at", "payload"), replaced.changed().stream().sorted().collect(Collectors.toList()));
            assertTrue(Duration.between(created.dueAt(), replaced.dueAt()).compareTo(Duration.ofMinutes(59)) > 0);
            assertNull(cancelled.dueAt());
            for (HistoryEvent e : history.events()) {
                // A server without tokens names nobody; a schedule is neither a try nor a lease.
                assertNull(e.by());
                assertEquals(OptionalInt.empty(), e.attempt());
                assertEquals(OptionalLong.empty(), e.lease());
                assertEquals(OptionalInt.empty(), e.status());
                assertTrue(e.leaseExpiresAt() == null && e.outcome() == null && e.error() == null && e.tag() == null
                        && e.took() == null && e.answer() == null && e.node() == null && e.deliveryId() == null,
                        e.toString());
            }
            assertEquals("cancelled", cancelled.json().path("event").asText());

            assertThrows(NotFoundException.class, () -> client.get(q, "order/1"));
            NotFoundException unknown = assertThrows(NotFoundException.class, () -> client.history(q, "never-scheduled"));
            assertEquals(404, unknown.status());
        }
    }

    @Test
    void aFailedTryAndACancelByTag(@TempDir Path dir) throws Exception {
        try (ServerProcess server = new ServerProcess(dir, List.of(), Map.of()).start()) {
            PunctualClient client = server.client();
            String q = queue();
            client.schedule(q, "k", TaskSpec.create().maxAttempts(1));
            Delivery d = client.lease(q, 1, Duration.ofSeconds(30), Duration.ZERO).get(0);
            client.ack(d.leaseId(), Outcome.fail("card declined"));
            List<HistoryEvent> events = client.history(q, "k").events();
            assertEquals(List.of("created/scheduled", "leased/leased", "acked/dead"),
                    events.stream().map(e -> e.event().wire() + "/" + e.state().wire()).collect(Collectors.toList()));
            HistoryEvent leased = events.get(1), acked = events.get(2);
            assertEquals(OptionalInt.of(1), leased.attempt());
            assertTrue(leased.lease().isPresent());
            assertEquals(d.expiresAt(), leased.leaseExpiresAt());
            assertEquals(List.of(OptionalInt.of(1), leased.lease(), HistoryEvent.AckOutcome.DEAD, "card declined"),
                    List.of(acked.attempt(), acked.lease(), acked.outcome(), acked.error()));

            Instant due = Instant.now().plus(Duration.ofHours(1)).truncatedTo(ChronoUnit.MILLIS);
            client.schedule(q, "t", TaskSpec.create().dueAt(due).tag("a"));
            client.schedule(q, "t", TaskSpec.create().dueAt(due).tag("b"));
            assertEquals(1, client.cancelByTag(q, "b"));
            List<HistoryEvent> tagged = client.history(q, "t").events();
            assertEquals(List.of("tags"), tagged.get(1).changed());
            assertEquals(List.of(HistoryEvent.Kind.CANCELLED, HistoryEvent.State.GONE, "b"),
                    List.of(tagged.get(2).event(), tagged.get(2).state(), tagged.get(2).tag()));
        }
    }

    @Test
    void auditOfAPauseAndAResume(@TempDir Path dir) throws Exception {
        try (ServerProcess server = new ServerProcess(dir, List.of(), Map.of()).start()) {
            PunctualClient client = server.client();
            String q = queue();
            assertEquals(List.of(), client.auditPage().entries());
            client.pause(q);
            client.resume(q);

            AuditPage first = client.auditPage(PageOptions.create().limit(1));
            assertEquals(1, first.entries().size());
            AuditEntry resumed = first.entries().get(0);
            assertEquals(List.of(AuditEntry.Action.QUEUE_RESUME, q), List.of(resumed.action(), resumed.queue()));
            assertNotNull(first.nextCursor());
            AuditPage second = client.auditPage(PageOptions.create().limit(1).cursor(first.nextCursor()));
            AuditEntry paused = second.entries().get(0);
            assertEquals(List.of(AuditEntry.Action.QUEUE_PAUSE, q), List.of(paused.action(), paused.queue()));
            assertNull(paused.by());
            assertNull(paused.calendar());
            assertFalse(paused.at().isAfter(resumed.at()));
            assertEquals("queue.pause", paused.action().wire());

            assertEquals(List.of(resumed, paused), client.audit(PageOptions.create().limit(1)).collect(Collectors.toList()));
            assertEquals(List.of(paused), client.audit(PageOptions.create().limit(1).cursor(first.nextCursor()))
                    .collect(Collectors.toList()));

            client.putSettings(q, Map.of("group_concurrency", 2));
            AuditEntry settings = client.auditPage(PageOptions.create().limit(1)).entries().get(0);
            assertEquals(List.of(AuditEntry.Action.QUEUE_SETTINGS_SET, q), List.of(settings.action(), settings.queue()));
            assertEquals(2, settings.detail().path("group_concurrency").asInt());
            InvalidArgumentException refused = assertThrows(InvalidArgumentException.class,
                    () -> client.auditPage(PageOptions.create().limit(1001)));
            assertEquals("limit", refused.field());
        }
    }

    @Test
    void everyMemberOfAnEventRead() throws Exception {
        // The members the server tests do not reach (a token's name, a push delivery's answer).
        HistoryEvent e = HistoryEvent.of(Json.MAPPER.readTree("""
                {"at": "2026-12-06T05:56:06.219Z", "event": "acked", "by": "shop", "state": "scheduled",
                 "attempt": 2, "lease": 7, "due_at": "2026-12-06T06:00:00.000Z",
                 "lease_expires_at": "2026-12-06T05:56:36.219Z", "outcome": "retry", "error": "HTTP 503",
                 "changed": ["target"], "tag": "t", "took_ms": 1500, "status": 503, "answer": "busy"}"""));
        assertEquals(new HistoryEvent(Instant.parse("2026-12-06T05:56:06.219Z"), HistoryEvent.Kind.ACKED,
                HistoryEvent.State.SCHEDULED, "shop", OptionalInt.of(2), OptionalLong.of(7),
                Instant.parse("2026-12-06T06:00:00Z"), Instant.parse("2026-12-06T05:56:36.219Z"),
                HistoryEvent.AckOutcome.RETRY, "HTTP 503", List.of("target"), "t", Duration.ofMillis(1500),
                OptionalInt.of(503), "busy", null, null, e.json()), e);
        // The node and the delivery id come on a leased event only (null on the acked one above).
        HistoryEvent leased = HistoryEvent.of(Json.MAPPER.readTree("""
                {"at": "2026-12-06T05:56:06.219Z", "event": "leased", "state": "leased", "attempt": 2, "lease": 7,
                 "lease_expires_at": "2026-12-06T05:56:36.219Z", "node": "web-1:7575 (pid 4242)",
                 "delivery_id": "0000000000001-7f-1-1"}"""));
        assertEquals(List.of(HistoryEvent.Kind.LEASED, "web-1:7575 (pid 4242)", "0000000000001-7f-1-1"),
                List.of(leased.event(), leased.node(), leased.deliveryId()));
        AuditEntry a = AuditEntry.of(Json.MAPPER.readTree("""
                {"at": "2026-12-06T05:56:06.219Z", "by": "ops", "action": "calendar.set", "calendar": "cn-office",
                 "detail": {"version": 2}}"""));
        assertEquals(List.of("ops", AuditEntry.Action.CALENDAR_SET, "cn-office", 2),
                List.of(a.by(), a.action(), a.calendar(), a.detail().path("version").asInt()));
        assertNull(a.queue());
    }

    @Test
    void auditActionsByTheirWireNames() {
        for (AuditEntry.Action action : AuditEntry.Action.values()) {
            assertEquals(action, AuditEntry.Action.fromWire(action.wire()));
        }
        assertEquals("queue.settings.clear", AuditEntry.Action.QUEUE_SETTINGS_CLEAR.wire());
        assertThrows(IllegalArgumentException.class, () -> AuditEntry.Action.fromWire("queue_pause"));
    }
}
