package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.DayOfWeek;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

/**
 * An extra working date of a calendar (a weekend day worked in exchange for a holiday,
 * 调休). With neither {@code as} nor {@code hours} it takes the hours most open weekdays
 * share; with {@code as} those of that weekday; with {@code hours} its own
 * ({@code "HH:MM-HH:MM"}). At most one of {@code as} and {@code hours} is set.
 */
public record Workday(LocalDate date, DayOfWeek as, List<String> hours) {
    public Workday {
        if (as != null && hours != null) throw new IllegalArgumentException("a workday takes as or hours, not both");
        hours = hours == null ? null : List.copyOf(hours);
    }

    /** The date, on the hours most open weekdays share. */
    public static Workday on(LocalDate date) { return new Workday(date, null, null); }

    /** The date, on the hours of weekday {@code as}. */
    public static Workday on(LocalDate date, DayOfWeek as) { return new Workday(date, as, null); }

    /** The date, on hours of its own. */
    public static Workday on(LocalDate date, String... hours) { return new Workday(date, null, List.of(hours)); }

    /** The API's form: the bare date, or {@code {"date", "as"}} or {@code {"date", "hours"}}. */
    JsonNode toJson() {
        if (as == null && hours == null) return Json.MAPPER.getNodeFactory().textNode(date.toString());
        ObjectNode o = Json.MAPPER.createObjectNode().put("date", date.toString());
        if (as != null) o.put("as", Calendar.dayName(as));
        if (hours != null) hours.forEach(o.putArray("hours")::add);
        return o;
    }

    static Workday of(JsonNode node) {
        if (node.isTextual()) return on(LocalDate.parse(node.asText()));
        LocalDate date = LocalDate.parse(node.path("date").asText());
        if (node.hasNonNull("as")) return on(date, Calendar.day(node.path("as").asText()));
        List<String> hours = new ArrayList<>();
        node.path("hours").forEach(h -> hours.add(h.asText()));
        return new Workday(date, null, hours);
    }
}
