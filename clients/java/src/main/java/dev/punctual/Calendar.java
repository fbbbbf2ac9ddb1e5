package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A working-time calendar as the server holds it: working {@code hours} per weekday in
 * zone {@code tz} ({@code "HH:MM-HH:MM"}; a weekday absent is closed), {@code holidays}
 * (dates and inclusive ranges {@code start/end}) and extra {@code workdays}. Tasks name
 * it with {@link TaskSpec#calendar(String)}. {@code source} is {@link Source#API} or
 * {@link Source#CONFIG} (set in the server's config file, version 0, changed only there);
 * {@code holidayYears}, {@code enteredUntil} (null: none entered) and {@code notice}
 * (null unless the entered years run out within 30 days, ran out, or none are entered)
 * say how far the holidays reach. {@code version} is what
 * {@link PunctualClient#putCalendar} and {@link PunctualClient#deleteCalendar} take as
 * {@code ifVersion}.
 */
public record Calendar(String name, Source source, String tz, Map<DayOfWeek, List<String>> hours,
        List<String> holidays, List<Workday> workdays, List<Integer> holidayYears, Instant enteredUntil,
        String notice, long version, Instant updatedAt) {

    /** The calendar's zone. */
    public ZoneId zone() { return ZoneId.of(tz); }

    static Calendar of(JsonNode c) {
        Map<DayOfWeek, List<String>> hours = new EnumMap<>(DayOfWeek.class);
        c.path("hours").fields().forEachRemaining(e -> hours.put(day(e.getKey()), Json.texts(e.getValue())));
        List<Workday> workdays = new ArrayList<>();
        c.path("workdays").forEach(w -> workdays.add(Workday.of(w)));
        List<Integer> years = new ArrayList<>();
        c.path("holiday_years").forEach(y -> years.add(y.asInt()));
        return new Calendar(Json.text(c, "name"), Json.enumOf(Source.class, c, "source"), Json.text(c, "tz"),
                Collections.unmodifiableMap(hours), Json.texts(c, "holidays"), List.copyOf(workdays), List.copyOf(years),
                Json.instant(c, "entered_until"), Json.text(c, "notice"), c.path("version").asLong(),
                Json.instant(c, "updated_at"));
    }

    /** The API's name of a weekday: {@code mon} … {@code sun}. */
    static String dayName(DayOfWeek day) { return day.name().substring(0, 3).toLowerCase(Locale.ROOT); }

    static DayOfWeek day(String name) {
        for (DayOfWeek d : DayOfWeek.values()) {
            if (dayName(d).equals(name)) return d;
        }
        throw new IllegalArgumentException("not a weekday of the API: " + name);
    }
}
