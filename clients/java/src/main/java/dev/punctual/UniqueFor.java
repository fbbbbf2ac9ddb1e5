package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A dedupe window: for {@code window} after the key's task completed (done; with
 * {@code dead}, also after it went dead), a schedule of the key creates nothing and
 * answers kept — after done with the {@link Completed} that kept it and no task, while a
 * dead task holds its key with that task, untouched. Set with
 * {@link TaskSpec#uniqueFor(Duration)}; read back with {@link #of(JsonNode)}.
 */
public record UniqueFor(Duration window, boolean dead) {
    private static final Pattern PART = Pattern.compile("(\\d+)(ms|d|h|m|s)");

    /**
     * The task's window as the server shows it (a duration, or {@code {"window", "dead":
     * true}}); null when the task has none.
     */
    public static UniqueFor of(JsonNode task) {
        JsonNode u = task.path("unique_for");
        if (u.isMissingNode() || u.isNull()) return null;
        if (u.isObject()) return new UniqueFor(duration(u.path("window")), u.path("dead").asBoolean(false));
        return new UniqueFor(duration(u), false);
    }

    /** The body's form: integer milliseconds, or {@code {"window": ms, "dead": true}}. */
    JsonNode toJson() {
        if (!dead) return PunctualClient.MAPPER.getNodeFactory().numberNode(window.toMillis());
        return PunctualClient.MAPPER.createObjectNode().put("window", window.toMillis()).put("dead", true);
    }

    /** A duration the server wrote: whole units, largest first ("1h 30m", "1s 500ms"), or milliseconds. */
    static Duration duration(JsonNode node) {
        if (node.isIntegralNumber()) return Duration.ofMillis(node.asLong());
        String text = node.isTextual() ? node.asText().replace(" ", "") : "";
        Matcher m = PART.matcher(text);
        Duration total = Duration.ZERO;
        int end = 0;
        while (m.find() && m.start() == end) {
            long n = Long.parseLong(m.group(1));
            total = total.plus(switch (m.group(2)) {
                case "d" -> Duration.ofDays(n);
                case "h" -> Duration.ofHours(n);
                case "m" -> Duration.ofMinutes(n);
                case "s" -> Duration.ofSeconds(n);
                default -> Duration.ofMillis(n);
            });
            end = m.end();
        }
        if (text.isEmpty() || end != text.length()) {
            throw new IllegalArgumentException("not a duration the server writes: " + node);
        }
        return total;
    }
}
