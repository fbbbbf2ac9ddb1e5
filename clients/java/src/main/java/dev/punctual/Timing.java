package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;

/**
 * A task's timing policies as the server shows them, each with its effective value (the
 * default where none was given): the working-time {@code calendar} (null without one),
 * {@code misfire} ({@link Misfire#FIRE_ONCE}), {@code misfireAfter} (1 minute; it
 * applies under {@link Misfire#SKIP}), {@code catchUpMax} (10; it applies under
 * {@link Misfire#FIRE_ALL}), {@code overlap} ({@link Overlap#SKIP}) and {@code jitter}
 * (null without one). Set with {@link TaskSpec}'s {@code calendar}, {@code misfire},
 * {@code misfireAfter}, {@code catchUpMax}, {@code overlap} and {@code jitter}.
 */
public record Timing(String calendar, Misfire misfire, Duration misfireAfter, int catchUpMax, Overlap overlap,
        Duration jitter) {

    /** The policies of a task (the {@code task} of an answer, a list or a {@link Delivery}). */
    public static Timing of(JsonNode task) {
        JsonNode calendar = task.path("calendar");
        JsonNode misfire = task.path("misfire");
        JsonNode after = task.path("misfire_after");
        JsonNode overlap = task.path("overlap");
        JsonNode jitter = task.path("jitter");
        return new Timing(calendar.isTextual() ? calendar.asText() : null,
                misfire.isTextual() ? Misfire.fromWire(misfire.asText()) : Misfire.FIRE_ONCE,
                after.isMissingNode() || after.isNull() ? Duration.ofMinutes(1) : UniqueFor.duration(after),
                task.path("catch_up_max").asInt(10),
                overlap.isTextual() ? Overlap.fromWire(overlap.asText()) : Overlap.SKIP,
                jitter.isMissingNode() || jitter.isNull() ? null : UniqueFor.duration(jitter));
    }
}
