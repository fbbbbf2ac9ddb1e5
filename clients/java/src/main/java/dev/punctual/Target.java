package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An HTTP target: the server delivers the task itself to {@code url} when due. When
 * scheduling, {@code method}, {@code headers}, {@code timeout} and {@code body} may be
 * null (the server's defaults: POST, none, 10 s, the task's delivery body); a
 * {@link Task} shows them with their effective values, {@code body} null unless the
 * task sends its own.
 */
public record Target(String url, String method, Map<String, String> headers, Duration timeout, JsonNode body) {
    public static Target post(String url) { return new Target(url, null, null, null, null); }

    /** The target of a task; null when it has none. */
    static Target of(JsonNode t) {
        if (t == null || !t.isObject()) return null;
        Map<String, String> headers = new LinkedHashMap<>();
        t.path("headers").fields().forEachRemaining(e -> headers.put(e.getKey(), e.getValue().asText()));
        return new Target(Json.text(t, "url"), Json.text(t, "method"), Map.copyOf(headers), Json.duration(t, "timeout"),
                Json.node(t, "body"));
    }
}
