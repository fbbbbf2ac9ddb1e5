package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/**
 * One leased try of a task: {@code attempt} is this try's ordinal (1 for the first),
 * {@code deliveryId} is the same for every try of one occurrence. {@code scheduledFor}
 * is the time that occurrence was scheduled for (before jitter, retries and misfires);
 * {@code missed} counts the later occurrences of a repeat already due that will not fire
 * of their own, this firing standing in for them (0 when on time).
 */
public record Delivery(String leaseId, Instant expiresAt, int attempt, String deliveryId, Instant scheduledFor,
        int missed, JsonNode task) {
    public String queue() { return task.path("queue").asText(); }
    public String key() { return task.path("key").asText(); }
    public JsonNode payload() { return task.path("payload"); }
    /** The task's priority, 0–9 (higher ones are leased first among due tasks). */
    public int priority() { return task.path("priority").asInt(0); }
    /** The task's group; null when it has none. */
    public String group() { return task.path("group").isTextual() ? task.path("group").asText() : null; }

    /** The task's dedupe window; null when it has none. */
    public UniqueFor uniqueFor() { return UniqueFor.of(task); }

    /** The task's timing policies (calendar, misfire, overlap, jitter). */
    public Timing timing() { return Timing.of(task); }

    /** The payload converted to {@code type} with the client's Jackson mapper. */
    public <T> T payloadAs(Class<T> type) {
        return PunctualClient.MAPPER.convertValue(payload(), type);
    }
}
