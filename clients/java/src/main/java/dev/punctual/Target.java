package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Map;

/**
 * An HTTP target: the server delivers the task itself to {@code url} when due.
 * {@code method}, {@code headers}, {@code timeout} and {@code body} may be null.
 */
public record Target(String url, String method, Map<String, String> headers, Duration timeout, JsonNode body) {
    public static Target post(String url) { return new Target(url, null, null, null, null); }
}
