package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The client's one Jackson mapper and the readers of the values the server writes:
 * times (RFC 3339), durations ({@code "1h 30m"} or milliseconds), and optional members
 * (absent or JSON null both read as "none"). Every typed answer is decoded with these.
 */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private static final Pattern DURATION_PART = Pattern.compile("(\\d+)(ms|d|h|m|s)");

    private Json() {}

    /** The member's text; null when absent or null. */
    static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    /** The member as a time; null when absent or null. */
    static Instant instant(JsonNode node, String field) {
        String v = text(node, field);
        return v == null ? null : Instant.parse(v);
    }

    /** The member as a duration; null when absent or null. */
    static Duration duration(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : duration(v);
    }

    /** The member as milliseconds; null when absent or null. */
    static Duration millis(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : Duration.ofMillis(v.asLong());
    }

    /** The member as an integer; empty when absent or null. */
    static OptionalInt optionalInt(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? OptionalInt.empty() : OptionalInt.of(v.asInt());
    }

    /** The member's strings; empty when absent. */
    static List<String> texts(JsonNode node, String field) { return texts(node.path(field)); }

    /** The array's strings. */
    static List<String> texts(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(t -> out.add(t.asText()));
        return List.copyOf(out);
    }

    /** The member itself; null when absent or null. */
    static JsonNode node(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v;
    }

    /** An enum constant's name in the API: its name in lower case ({@code FIRE_ONCE} is {@code fire_once}). */
    static String wire(Enum<?> constant) { return constant.name().toLowerCase(Locale.ROOT); }

    /** The constant of {@code type} the API names {@code wire}; an unknown name is an {@link IllegalArgumentException}. */
    static <E extends Enum<E>> E fromWire(Class<E> type, String wire) {
        for (E constant : type.getEnumConstants()) {
            if (wire(constant).equals(wire)) return constant;
        }
        throw new IllegalArgumentException("unknown " + type.getSimpleName() + ": " + wire);
    }

    /** The member as a constant of {@code type}; null when absent or null. */
    static <E extends Enum<E>> E enumOf(Class<E> type, JsonNode node, String field) {
        String v = text(node, field);
        return v == null ? null : fromWire(type, v);
    }

    /** A duration the server wrote: whole units, largest first ("1h 30m", "1s 500ms"), or milliseconds. */
    static Duration duration(JsonNode node) {
        if (node.isIntegralNumber()) return Duration.ofMillis(node.asLong());
        String text = node.isTextual() ? node.asText().replace(" ", "") : "";
        Matcher m = DURATION_PART.matcher(text);
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
