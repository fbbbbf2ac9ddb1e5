package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;

/**
 * A dedupe window: for {@code window} after the key's task completed (done; with
 * {@code dead}, also after it went dead), a schedule of the key creates nothing and
 * answers kept — after done with the {@link Completed} that kept it and no task, while a
 * dead task holds its key with that task, untouched. Set with
 * {@link TaskSpec#uniqueFor(Duration)}; read back with {@link Task#uniqueFor()}.
 */
public record UniqueFor(Duration window, boolean dead) {

    /**
     * The window as the server shows it (a duration, or {@code {"window", "dead": true}});
     * null when there is none.
     */
    static UniqueFor of(JsonNode u) {
        if (u == null || u.isNull() || u.isMissingNode()) return null;
        if (u.isObject()) return new UniqueFor(Json.duration(u.path("window")), u.path("dead").asBoolean(false));
        return new UniqueFor(Json.duration(u), false);
    }

    /** The body's form: integer milliseconds, or {@code {"window": ms, "dead": true}}. */
    JsonNode toJson() {
        if (!dead) return Json.MAPPER.getNodeFactory().numberNode(window.toMillis());
        return Json.MAPPER.createObjectNode().put("window", window.toMillis()).put("dead", true);
    }
}
