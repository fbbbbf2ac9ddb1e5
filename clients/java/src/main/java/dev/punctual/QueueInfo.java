package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;

/**
 * A queue's counts by state, its next due time (null when nothing is scheduled) and
 * whether it is paused. {@link PunctualClient#queue} adds how late its oldest due task is
 * ({@code oldestOverdue}), the recent fire lag ({@code lag}) and, when the server drains
 * an outbox, its backlog ({@code outbox}); {@link PunctualClient#queues} leaves those
 * null. {@link #json()} is the object as the server wrote it.
 */
public record QueueInfo(String name, long scheduled, long leased, long dead, Instant nextDueAt, boolean paused,
        Duration oldestOverdue, Lag lag, OutboxLag outbox, JsonNode json) {

    /** Fire lag (leased minus due time) over recent deliveries; each null before any. */
    public record Lag(Duration p50, Duration p99) {}

    /** The outbox rows not yet applied, and the age of the oldest (null when none waits). */
    public record OutboxLag(long rowsWaiting, Duration oldestAge) {}

    static QueueInfo of(JsonNode q) {
        JsonNode lag = Json.node(q, "lag_ms");
        JsonNode outbox = Json.node(q, "outbox");
        return new QueueInfo(Json.text(q, "name"), q.path("scheduled").asLong(), q.path("leased").asLong(),
                q.path("dead").asLong(), Json.instant(q, "next_due_at"), q.path("paused").asBoolean(),
                Json.millis(q, "oldest_overdue_ms"),
                lag == null ? null : new Lag(Json.millis(lag, "p50"), Json.millis(lag, "p99")),
                outbox == null ? null : new OutboxLag(outbox.path("rows_waiting").asLong(), Json.millis(outbox, "oldest_age_ms")),
                q);
    }
}
