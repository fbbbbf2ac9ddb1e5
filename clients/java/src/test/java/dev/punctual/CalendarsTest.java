package dev.punctual;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scenario 16 of clients/SCENARIOS.md, business time, on a server of its own. Guards
 * against a client that drops {@code calendar}, {@code align} or {@code cron_syntax} on
 * the way to the server (the task would be due at a plain 8 hours, or its Spring cron
 * refused as Vixie), one that loses the If-Match of a calendar's put or delete, and one
 * that misreads a calendar's answer.
 */
class CalendarsTest {
    static final ZoneId SHANGHAI = ZoneId.of("Asia/Shanghai");
    static final EnumSet<DayOfWeek> WEEKDAYS = EnumSet.range(DayOfWeek.MONDAY, DayOfWeek.FRIDAY);

    static ServerProcess server;
    static PunctualClient client;

    @BeforeAll
    static void start(@TempDir Path dir) throws Exception {
        server = new ServerProcess(dir, List.of(), Map.of()).start();
        client = server.client();
    }

    @AfterAll
    static void stop() throws Exception { server.stop(); }

    static String unique(String prefix) { return prefix + UUID.randomUUID().toString().substring(0, 8); }

    /** Within the office's hours, Monday to Friday 09:00-12:00 and 13:30-18:00 in Shanghai, the ends included. */
    static boolean inOfficeHours(Instant at) {
        ZonedDateTime local = at.atZone(SHANGHAI);
        LocalTime t = local.toLocalTime();
        boolean morning = !t.isBefore(LocalTime.of(9, 0)) && !t.isAfter(LocalTime.of(12, 0));
        boolean afternoon = !t.isBefore(LocalTime.of(13, 30)) && !t.isAfter(LocalTime.of(18, 0));
        return WEEKDAYS.contains(local.getDayOfWeek()) && (morning || afternoon);
    }

    @Test
    void s16BusinessTime() {
        String q = "java." + UUID.randomUUID().toString().substring(0, 8);
        String name = unique("java-office-");
        CalendarSpec office = CalendarSpec.in("Asia/Shanghai").hours(WEEKDAYS, "09:00-12:00", "13:30-18:00");
        Calendar created = client.putCalendar(name, office, 0L);
        assertEquals(List.of(name, Source.API, "Asia/Shanghai", 1L),
                List.of(created.name(), created.source(), created.tz(), created.version()));
        assertEquals(SHANGHAI, created.zone());
        assertEquals(WEEKDAYS, created.hours().keySet());
        assertEquals(List.of("09:00-12:00", "13:30-18:00"), created.hours().get(DayOfWeek.WEDNESDAY));
        assertTrue(client.calendars().stream().anyMatch(c -> c.name().equals(name)));

        // A working day holds 7.5 working hours, so 8 of them always span more than 8 hours.
        Instant before = Instant.now();
        Task task = client.schedule(q, "remind", TaskSpec.create().delay(Duration.ofHours(8)).calendar(name)).task();
        Instant due = task.dueAt();
        assertTrue(inOfficeHours(due), "due " + due.atZone(SHANGHAI));
        assertTrue(due.isAfter(before.plus(Duration.ofHours(8))), "due " + due + ", asked at " + before);
        assertEquals(task.dueAt(), client.get(q, "remind").dueAt());
        assertEquals(name, task.calendar());

        Instant asked = Instant.now();
        Task aligned = client.schedule(q, "standup",
                TaskSpec.create().dueAt(asked).calendar(name).align(TaskSpec.Align.NEXT_OPEN)).task();
        Instant alignedDue = aligned.dueAt();
        assertTrue(inOfficeHours(alignedDue), "aligned to " + alignedDue.atZone(SHANGHAI));
        assertFalse(alignedDue.isBefore(asked.truncatedTo(ChronoUnit.MILLIS)));

        InvalidArgumentException unknown = assertThrows(InvalidArgumentException.class,
                () -> client.schedule(q, "nowhere", TaskSpec.create().delay(Duration.ofHours(8)).calendar(unique("none-"))));
        assertEquals("calendar", unknown.getField());

        Calendar replaced = client.putCalendar(name, CalendarSpec.in("Asia/Shanghai")
                .hours(WEEKDAYS, "09:00-12:00", "13:30-18:00").holidays("2026-10-01/2026-10-07")
                .workdays(Workday.on(LocalDate.parse("2026-09-27")), Workday.on(LocalDate.parse("2026-10-10"), DayOfWeek.FRIDAY)),
                created.version());
        assertEquals(2, replaced.version());
        assertEquals(List.of("2026-10-01/2026-10-07"), replaced.holidays());
        assertEquals(List.of(Workday.on(LocalDate.parse("2026-09-27")), Workday.on(LocalDate.parse("2026-10-10"), DayOfWeek.FRIDAY)),
                replaced.workdays());
        assertEquals(List.of(2026), replaced.holidayYears());

        ConflictException stalePut = assertThrows(ConflictException.class,
                () -> client.putCalendar(name, CalendarSpec.in("UTC").hours(DayOfWeek.MONDAY, "09:00-17:00"), created.version()));
        assertEquals(409, stalePut.status());
        assertThrows(ConflictException.class, () -> client.deleteCalendar(name, created.version()));
        assertEquals(replaced, client.calendar(name));

        client.deleteCalendar(name, replaced.version());
        assertThrows(NotFoundException.class, () -> client.calendar(name));
        assertTrue(client.calendars().stream().noneMatch(c -> c.name().equals(name)));

        client.schedule(q, "weekday", TaskSpec.create().repeatCron("0 0 9 ? * MON-FRI", "Asia/Shanghai", CronSyntax.SPRING));
        Task weekday = client.get(q, "weekday");
        assertEquals(CronSyntax.SPRING, weekday.repeat().cronSyntax());
        assertEquals("spring", weekday.json().path("repeat").path("cron_syntax").asText());
        assertEquals(List.of("0 0 9 ? * MON-FRI", "Asia/Shanghai"), List.of(weekday.repeat().cron(), weekday.repeat().tz()));
        assertNull(weekday.repeat().every());
        ZonedDateTime next = weekday.dueAt().atZone(SHANGHAI);
        assertTrue(WEEKDAYS.contains(next.getDayOfWeek()), "next " + next);
        assertEquals(LocalTime.of(9, 0), next.toLocalTime());
    }

    @Test
    void cronSyntaxReadBack() {
        String q = "java." + UUID.randomUUID().toString().substring(0, 8);
        client.schedule(q, "vixie", TaskSpec.create().repeatCron("0 9 * * 1-5", "UTC"));
        client.schedule(q, "quartz", TaskSpec.create().repeatCron("0 0 18 L * ?", "Europe/Berlin", CronSyntax.QUARTZ));
        client.schedule(q, "every", TaskSpec.create().repeatEvery(Duration.ofHours(1)));
        assertEquals(CronSyntax.VIXIE, client.get(q, "vixie").repeat().cronSyntax());
        assertEquals(CronSyntax.QUARTZ, client.get(q, "quartz").repeat().cronSyntax());
        Repeat every = client.get(q, "every").repeat();
        assertEquals(Duration.ofHours(1), every.every());
        assertNull(every.cronSyntax());
        InvalidArgumentException vixie = assertThrows(InvalidArgumentException.class,
                () -> client.schedule(q, "refused", TaskSpec.create().repeatCron("0 0 9 ? * MON-FRI", "UTC", CronSyntax.VIXIE)));
        assertEquals("repeat.cron", vixie.getField());
    }
}
