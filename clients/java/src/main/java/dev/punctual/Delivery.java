package dev.punctual;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/**
 * One leased try of a task: {@code attempt} is this try's ordinal (1 for the first),
 * {@code deliveryId} is the same for every try of one occurrence. {@code scheduledFor}
 * is the time that occurrence was scheduled for (before jitter, retries and misfires);
 * {@code missed} counts the later occurrences of a repeat already due that will not fire
 * of their own, this firing standing in for them (0 when on time). The lease
 * ({@code leaseId}, {@code expiresAt}) is what {@link PunctualClient#ack} and
 * {@link PunctualClient#extend} take.
 */
public record Delivery(String leaseId, Instant expiresAt, int attempt, String deliveryId, Instant scheduledFor,
        int missed, Task task) {

    /** The lease this delivery holds. */
    public Lease lease() { return new Lease(leaseId, expiresAt); }

    public String queue() { return task.queue(); }
    public String key() { return task.key(); }

    /** The payload converted to {@code type} with the client's Jackson mapper. */
    public <T> T payload(Class<T> type) { return task.payload(type); }

    /** The payload converted to a generic type, e.g. {@code new TypeReference<List<Item>>() {}}. */
    public <T> T payload(TypeReference<T> type) { return task.payload(type); }

    /** The payload as the server holds it. */
    public JsonNode payloadJson() { return task.payloadJson(); }

    /** The task's priority, 0–9 (higher ones are leased first among due tasks). */
    public int priority() { return task.priority(); }

    /** The task's group; null when it has none. */
    public String group() { return task.group(); }

    /** The task's dedupe window; null when it has none. */
    public UniqueFor uniqueFor() { return task.uniqueFor(); }

    /** The W3C trace context the task was scheduled with, to continue; null without one. */
    public String traceparent() { return task.traceparent(); }

    /** The task's timing policies (calendar, misfire, overlap, jitter). */
    public Timing timing() { return task.timing(); }

    /** Decodes one item of the lease answer's {@code leases}. */
    static Delivery of(JsonNode l) {
        return new Delivery(Json.text(l, "lease_id"), Json.instant(l, "expires_at"), l.path("attempt").asInt(),
                Json.text(l, "delivery_id"), Json.instant(l, "scheduled_for"), l.path("missed").asInt(0),
                Task.of(l.path("task")));
    }
}
