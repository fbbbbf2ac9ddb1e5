package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;

/**
 * The task that completed under a key within its dedupe window, and so kept a schedule
 * of the key: until {@code uniqueUntil} ({@code completedAt} + the window) schedules of
 * the key create nothing. {@code attempts} counts the tries of its last occurrence that
 * failed or whose lease expired; {@code occurrence} is the one that completed, from 1.
 */
public record Completed(String queue, String key, long id, String state, Instant completedAt, int attempts,
        int occurrence, Instant uniqueUntil) {

    /** The {@code completed} member of an answer; null when it has none. */
    static Completed of(JsonNode answer) {
        JsonNode c = answer.path("completed");
        if (!c.isObject()) return null;
        return new Completed(Json.text(c, "queue"), Json.text(c, "key"), c.path("id").asLong(), Json.text(c, "state"),
                Json.instant(c, "completed_at"), c.path("attempts").asInt(), c.path("occurrence").asInt(),
                Json.instant(c, "unique_until"));
    }
}
