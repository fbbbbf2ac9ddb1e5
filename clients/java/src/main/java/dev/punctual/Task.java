package dev.punctual;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * A task as the server shows it (API.md, "Task object"): what {@link PunctualClient#get},
 * the lists, {@link ScheduleResult#task()} and a {@link Delivery} carry.
 *
 * <p>The payload stays the JSON the server holds: read it as your type with
 * {@link #payload(Class)} or {@link #payload(TypeReference)}, or as a tree with
 * {@link #payloadJson()}. {@link #json()} is the whole object as the server wrote it, for
 * a member this record does not model. Members that may be absent are null
 * ({@code group}, {@code repeat}, {@code leaseExpiresAt}, {@code lastError},
 * {@code target}, {@code uniqueFor}, {@code calendar}, {@code jitter}); the timing
 * policies hold their effective values (see {@link Timing}).
 *
 * @param attempts tries of the current occurrence that failed or whose lease expired
 * @param version  bumped by every change of the task
 */
public record Task(String queue, String key, TaskState state, Instant dueAt, JsonNode payloadJson, int attempts,
        int maxAttempts, Backoff backoff, Repeat repeat, List<String> tags, int priority, String group, long version,
        Instant createdAt, Instant updatedAt, Instant leaseExpiresAt, String lastError, Target target,
        UniqueFor uniqueFor, String calendar, Misfire misfire, Duration misfireAfter, int catchUpMax, Overlap overlap,
        Duration jitter, JsonNode json) {

    /** The payload converted to {@code type} with the client's Jackson mapper (null for a null payload). */
    public <T> T payload(Class<T> type) { return Json.MAPPER.convertValue(payloadJson, type); }

    /** The payload converted to a generic type, e.g. {@code new TypeReference<List<Item>>() {}}. */
    public <T> T payload(TypeReference<T> type) { return Json.MAPPER.convertValue(payloadJson, type); }

    /** The W3C trace context the task was scheduled with (a handler continues that trace); null without one. */
    public String traceparent() { return Json.text(json, "traceparent"); }

    /** The timing policies together: calendar, misfire, misfire after, catch-up max, overlap, jitter. */
    public Timing timing() { return new Timing(calendar, misfire, misfireAfter, catchUpMax, overlap, jitter); }

    /** Decodes the server's task object. A timing policy the server does not show reads as its default. */
    static Task of(JsonNode t) {
        Misfire misfire = Json.enumOf(Misfire.class, t, "misfire");
        Duration misfireAfter = Json.duration(t, "misfire_after");
        Overlap overlap = Json.enumOf(Overlap.class, t, "overlap");
        return new Task(Json.text(t, "queue"), Json.text(t, "key"), Json.enumOf(TaskState.class, t, "state"),
                Json.instant(t, "due_at"), t.path("payload").isMissingNode() ? Json.MAPPER.nullNode() : t.get("payload"),
                t.path("attempts").asInt(), t.path("max_attempts").asInt(),
                t.hasNonNull("backoff") ? Backoff.of(t.get("backoff")) : null, Repeat.of(t.get("repeat")),
                Json.texts(t, "tags"), t.path("priority").asInt(0), Json.text(t, "group"), t.path("version").asLong(),
                Json.instant(t, "created_at"), Json.instant(t, "updated_at"), Json.instant(t, "lease_expires_at"),
                Json.text(t, "last_error"), Target.of(t.get("target")), UniqueFor.of(t.get("unique_for")),
                Json.text(t, "calendar"), misfire == null ? Misfire.FIRE_ONCE : misfire,
                misfireAfter == null ? Duration.ofMinutes(1) : misfireAfter, t.path("catch_up_max").asInt(10),
                overlap == null ? Overlap.SKIP : overlap, Json.duration(t, "jitter"), t);
    }
}
