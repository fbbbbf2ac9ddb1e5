package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;

/**
 * How long a task waits before each retry: {@code initial}, multiplied by {@code factor}
 * after each failed try, at most {@code max}. Set with {@link TaskSpec#backoff}.
 */
public record Backoff(Duration initial, double factor, Duration max) {
    static Backoff of(JsonNode b) {
        return new Backoff(Json.duration(b, "initial"), b.path("factor").asDouble(), Json.duration(b, "max"));
    }
}
