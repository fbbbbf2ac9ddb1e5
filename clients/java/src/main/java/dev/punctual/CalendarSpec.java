package dev.punctual;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.DayOfWeek;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * A working-time calendar to put ({@link PunctualClient#putCalendar}): the zone, working
 * hours per weekday ({@code "HH:MM-HH:MM"}, ending after they start, {@code 24:00} for
 * midnight; a weekday given none is closed), holidays and extra working dates. Sent as
 * given: the server checks it ({@link InvalidArgumentException} naming the field).
 */
public final class CalendarSpec {
    private final String tz;
    private final Map<DayOfWeek, List<String>> hours = new EnumMap<>(DayOfWeek.class);
    private final List<String> holidays = new ArrayList<>();
    private final List<Workday> workdays = new ArrayList<>();

    private CalendarSpec(String tz) { this.tz = tz; }

    /** A calendar in IANA time zone {@code tz} (e.g. {@code Asia/Shanghai}). */
    public static CalendarSpec in(String tz) { return new CalendarSpec(tz); }

    /** Working hours of {@code day}, replacing those given before. */
    public CalendarSpec hours(DayOfWeek day, String... ranges) { hours.put(day, List.of(ranges)); return this; }

    /** The same working hours on each of {@code days}. */
    public CalendarSpec hours(Collection<DayOfWeek> days, String... ranges) {
        days.forEach(d -> hours(d, ranges));
        return this;
    }

    /** Closed dates or inclusive ranges as the API writes them: {@code "2026-06-19"}, {@code "2026-10-01/2026-10-07"}. */
    public CalendarSpec holidays(String... datesOrRanges) { holidays.addAll(List.of(datesOrRanges)); return this; }

    /** A closed date. */
    public CalendarSpec holiday(LocalDate date) { holidays.add(date.toString()); return this; }

    /** Closed dates from {@code first} to {@code last}, both included. */
    public CalendarSpec holidays(LocalDate first, LocalDate last) { holidays.add(first + "/" + last); return this; }

    /** Extra working dates ({@link Workday#on}). */
    public CalendarSpec workdays(Workday... days) { workdays.addAll(List.of(days)); return this; }

    ObjectNode toJson() {
        ObjectNode o = Json.MAPPER.createObjectNode().put("tz", tz);
        ObjectNode h = o.putObject("hours");
        hours.forEach((day, ranges) -> ranges.forEach(h.putArray(Calendar.dayName(day))::add));
        if (!holidays.isEmpty()) holidays.forEach(o.putArray("holidays")::add);
        if (!workdays.isEmpty()) {
            ArrayNode w = o.putArray("workdays");
            workdays.forEach(d -> w.add(d.toJson()));
        }
        return o;
    }
}
