package dev.punctual;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TimeZone;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * punctual's Spring and Quartz cron syntaxes against the libraries themselves: thousands of
 * generated expressions (seeded; the seed and each difference are printed), in zones whose
 * clocks change (Berlin, New York, Lord Howe's half hour, São Paulo's midnight changes until
 * 2019, Shanghai's summers of 1986–1991), from instants near those changes. For each, the next
 * occurrences `punctual cron next` prints must be those of Spring's
 * {@code CronExpression.next} (spring-context 6.2.19) or Quartz's
 * {@code CronExpression.getNextValidTimeAfter} (quartz 2.5.2), each syntax against its own
 * library. Guards against a rule of docs/state-machine.md ("Cron expressions") that says one
 * thing while the libraries Java teams use do another.
 *
 * <p>Left out of the comparison, each counted and printed, as that document says:
 * occurrences after the library gave up searching (Spring after a few hundred steps, Quartz
 * 100 years after this one); a difference around one of Lord Howe's half-hour changes, where
 * both libraries step by whole real hours and skip or land on wall-clock times their own rule
 * does not give; and Quartz's {@code W} days where Quartz keeps the time of day its search had
 * reached, or misses a Monday (see {@link #quartzW}); Spring's {@code 1W} from a Sunday the
 * 2nd (see {@link #springFirstW}). Not generated: Spring's
 * {@code nW} after the 28th and its {@code L-n} for large n (see {@link #spring}).
 */
class CronComparisonTest {
    private static final int OCCURRENCES = 5;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A zone and the years whose clock changes the start instants come near. */
    private record Zone(String name, int firstYear, int lastYear) {}

    private static final Zone[] ZONES = {
        new Zone("Europe/Berlin", 1990, 2035),
        new Zone("America/New_York", 1990, 2035),
        new Zone("Australia/Lord_Howe", 1990, 2035),
        new Zone("America/Sao_Paulo", 1990, 2018),
        new Zone("Asia/Shanghai", 1986, 1991),
    };

    private record Case(String syntax, String expr, String zone, Instant from) {
        String describe() {
            return syntax + " '" + expr + "' in " + zone + " after " + from;
        }
    }

    /** One case's outcome: compared occurrences, or what was left out or went wrong. */
    private record Outcome(int compared, String excluded, String failure) {}

    @Test
    void springAndQuartzAgreeWithTheLibraries() throws Exception {
        long seed = Long.getLong("cron.seed", System.nanoTime());
        int perSyntax = Integer.getInteger("cron.cases", 1500);
        Random random = new Random(seed);
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < perSyntax; i++) {
            cases.add(new Case("spring", spring(random), pickZone(random).name, null));
            cases.add(new Case("quartz", quartz(random), pickZone(random).name, null));
        }
        List<Case> dated = new ArrayList<>();
        for (Case c : cases) dated.add(new Case(c.syntax, c.expr, c.zone, startNearAChange(random, c.zone)));

        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<Outcome>> results = new ArrayList<>();
        for (Case c : dated) results.add(pool.submit(() -> compare(c)));
        pool.shutdown();
        assertTrue(pool.awaitTermination(20, TimeUnit.MINUTES), "the comparison took over 20 minutes");

        int compared = 0;
        Map<String, Integer> excluded = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        for (Future<Outcome> result : results) {
            Outcome outcome = result.get();
            compared += outcome.compared;
            if (outcome.excluded != null) excluded.merge(outcome.excluded, 1, Integer::sum);
            if (outcome.failure != null) failures.add(outcome.failure);
        }
        System.out.printf("cron comparison, seed %d (-Dcron.seed=%d to repeat): %d expressions, %d occurrences equal;"
                + " left out: %s; differences: %d%n", seed, seed, dated.size(), compared, excluded, failures.size());
        failures.stream().limit(30).forEach(f -> System.out.println("  " + f));
        assertTrue(failures.isEmpty(), () -> failures.size() + " differences (seed " + seed + "), first: " + failures.get(0));
        assertTrue(compared > dated.size() * 3, "too few occurrences compared: " + compared);
    }

    private static Outcome compare(Case c) throws Exception {
        List<Instant> theirs;
        try {
            theirs = c.syntax.equals("spring") ? springNext(c) : quartzNext(c);
        } catch (Exception e) {
            return new Outcome(0, null, c.describe() + ": the library refused it (" + e.getMessage() + ")");
        }
        Ours ours = punctual(c);
        if (ours.refusal != null) {
            // Both never fire: punctual refuses an expression that matches no date.
            if (theirs.isEmpty()) return new Outcome(0, "never fires (both)", null);
            return new Outcome(0, null, c.describe() + ": punctual refused it (" + ours.refusal + "), the library gives " + theirs);
        }
        int equal = 0;
        for (int i = 0; i < OCCURRENCES; i++) {
            boolean ourEnd = i >= ours.next.size(), theirEnd = i >= theirs.size();
            if (ourEnd && theirEnd) break;
            if (theirEnd && theirs.size() < OCCURRENCES) {
                // The library stopped searching (null) where punctual goes on.
                return new Outcome(equal, "library gave up", null);
            }
            if (!ourEnd && !theirEnd && ours.next.get(i).equals(theirs.get(i))) {
                equal++;
                continue;
            }
            Instant after = i == 0 ? c.from : ours.next.get(i - 1);
            Instant until = latest(ourEnd ? null : ours.next.get(i), theirEnd ? null : theirs.get(i), after);
            if (c.zone.equals("Australia/Lord_Howe") && changesBetween(c.zone, after.minus(Duration.ofHours(2)), until.plus(Duration.ofHours(2)))) {
                return new Outcome(equal, "Lord Howe's half-hour change", null);
            }
            if (c.syntax.equals("spring") && !ourEnd && springFirstW(c, after, ours.next.get(i), theirEnd ? null : theirs.get(i))) {
                return new Outcome(equal, "Spring's 1W misses a Saturday 1st's Monday from Sunday the 2nd", null);
            }
            if (c.syntax.equals("quartz") && !ourEnd && quartzW(c, after, ours.next.get(i), theirEnd ? null : theirs.get(i))) {
                return new Outcome(equal, "Quartz's W keeps the time of day or misses a Monday", null);
            }
            return new Outcome(equal, null, c.describe() + ": occurrence " + (i + 1) + " is "
                    + (ourEnd ? "none" : ours.next.get(i)) + " in punctual, " + (theirEnd ? "none" : theirs.get(i))
                    + " in " + c.syntax + " (punctual " + ours.next + ", " + c.syntax + " " + theirs + ")");
        }
        return new Outcome(equal, null, null);
    }

    /**
     * Quartz's {@code W} ({@code 15W}, {@code LW}, {@code L-2W}): when its search moves on to the
     * weekday from an earlier day of the month, it keeps the time of day it had reached there, so
     * the weekday's earlier times are skipped; and a weekday moved past a weekend day n (a Sunday's
     * Monday) is missed, or taken at a later time of day, when the search starts on that weekend
     * or on the Monday (docs/state-machine.md). punctual fires at each of the weekday's times.
     */
    private static boolean quartzW(Case c, Instant after, Instant ours, Instant theirs) {
        if (!c.expr.split(" ")[3].contains("W")) return false;
        ZoneId zone = ZoneId.of(c.zone);
        var ourDay = ours.atZone(zone).toLocalDate();
        if (theirs != null && theirs.isAfter(ours) && theirs.atZone(zone).toLocalDate().equals(ourDay)) return true;
        var start = after.atZone(zone).toLocalDate();
        var weekend = java.util.EnumSet.of(java.time.DayOfWeek.SATURDAY, java.time.DayOfWeek.SUNDAY, java.time.DayOfWeek.MONDAY);
        return ourDay.getDayOfWeek() == java.time.DayOfWeek.MONDAY && weekend.contains(start.getDayOfWeek())
                && !start.isAfter(ourDay) && start.plusDays(2).compareTo(ourDay) >= 0;
    }

    /**
     * Spring's {@code 1W} in a month whose 1st is a Saturday: from Sunday the 2nd it misses
     * Monday the 3rd and answers the next month's weekday (docs/state-machine.md). punctual
     * gives the 3rd.
     */
    private static boolean springFirstW(Case c, Instant after, Instant ours, Instant theirs) {
        if (!java.util.Arrays.asList(c.expr.split(" ")[3].split(",")).contains("1W")) return false;
        ZoneId zone = ZoneId.of(c.zone);
        var start = after.atZone(zone).toLocalDate();
        var ourDay = ours.atZone(zone).toLocalDate();
        return start.getDayOfMonth() == 2 && start.getDayOfWeek() == java.time.DayOfWeek.SUNDAY
                && ourDay.equals(start.plusDays(1)) && (theirs == null || theirs.isAfter(ours));
    }

    private static Instant latest(Instant a, Instant b, Instant fallback) {
        Instant latest = fallback;
        if (a != null && a.isAfter(latest)) latest = a;
        if (b != null && b.isAfter(latest)) latest = b;
        return latest;
    }

    private static boolean changesBetween(String zone, Instant from, Instant to) {
        ZoneOffsetTransition next = ZoneId.of(zone).getRules().nextTransition(from);
        return next != null && !next.getInstant().isAfter(to);
    }

    // --- the libraries ---

    private static List<Instant> springNext(Case c) {
        var expression = org.springframework.scheduling.support.CronExpression.parse(c.expr);
        List<Instant> found = new ArrayList<>();
        ZonedDateTime at = ZonedDateTime.ofInstant(c.from, ZoneId.of(c.zone));
        while (found.size() < OCCURRENCES && (at = expression.next(at)) != null) found.add(at.toInstant());
        return found;
    }

    private static List<Instant> quartzNext(Case c) throws Exception {
        var expression = new org.quartz.CronExpression(c.expr);
        expression.setTimeZone(TimeZone.getTimeZone(ZoneId.of(c.zone)));
        List<Instant> found = new ArrayList<>();
        Date at = Date.from(c.from);
        while (found.size() < OCCURRENCES && (at = expression.getNextValidTimeAfter(at)) != null) found.add(at.toInstant());
        return found;
    }

    // --- punctual ---

    private record Ours(List<Instant> next, String refusal) {}

    private static Ours punctual(Case c) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(ServerProcess.binary(), "cron", "next", c.expr, "--syntax", c.syntax,
                "--tz", c.zone, "--from", c.from.toString(), "--count", Integer.toString(OCCURRENCES), "--json")
                .redirectErrorStream(false).start();
        byte[] out = process.getInputStream().readAllBytes();
        String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        int status = process.waitFor();
        if (status == 2) return new Ours(List.of(), err);
        if (status != 0) throw new IllegalStateException(c.describe() + ": punctual exited " + status + ": " + err);
        List<Instant> next = new ArrayList<>();
        for (JsonNode text : JSON.readTree(out).get("next")) next.add(OffsetDateTime.parse(text.asText()).toInstant());
        return new Ours(next, null);
    }

    // --- generated cases ---

    private static String pick(Random r, String... choices) {
        return choices[r.nextInt(choices.length)];
    }

    private static Zone pickZone(Random r) {
        return ZONES[r.nextInt(ZONES.length)];
    }

    /** An instant near one of the zone's clock changes (most of the time), or anywhere in its years. */
    private static Instant startNearAChange(Random r, String zoneName) {
        Zone zone = null;
        for (Zone z : ZONES) if (z.name.equals(zoneName)) zone = z;
        ZoneRules rules = ZoneId.of(zoneName).getRules();
        long first = ZonedDateTime.of(zone.firstYear, 1, 1, 0, 0, 0, 0, ZoneId.of("UTC")).toEpochSecond();
        long last = ZonedDateTime.of(zone.lastYear, 12, 1, 0, 0, 0, 0, ZoneId.of("UTC")).toEpochSecond();
        Instant anywhere = Instant.ofEpochSecond(first + (long) (r.nextDouble() * (last - first)), r.nextInt(1000) * 1_000_000L);
        if (r.nextInt(5) == 0) return anywhere;
        ZoneOffsetTransition change = rules.nextTransition(anywhere);
        if (change == null) return anywhere;
        // From a day before the change to a few hours after it, often within its hours.
        long seconds = r.nextBoolean() ? -(long) r.nextInt(26 * 3600) : (long) r.nextInt(7 * 3600) - 4 * 3600;
        return change.getInstant().plusSeconds(seconds).plusMillis(r.nextInt(1000));
    }

    private static String seconds(Random r) {
        return pick(r, "0", "0", "0", "0", "30", "*/20", "15,45", "0-10/5");
    }

    private static String minutes(Random r) {
        return pick(r, "0", "0", "30", "*/15", "0,30", "*/20", "5-10", "45", "10,40", "*", "50");
    }

    /** Hours around the usual times of clock changes (midnight to 03:00) more than others. */
    private static String springHours(Random r) {
        return pick(r, "*", "0", "1", "2", "3", "0-3", "1,2", "2,3", "*/2", "9", "23", "22-23", "0,12", "1-2", "*/3");
    }

    private static String months(Random r, boolean wrap) {
        String month = pick(r, "*", "*", "*", "1-6", "MAR,OCT,NOV", "*/3", "FEB", "JAN-DEC", "2/4", "10-12", "apr-sep");
        return wrap && r.nextInt(6) == 0 ? "NOV-FEB" : month;
    }

    static String spring(Random r) {
        String dom = pick(r, "1", "15", "31", "1-7", "*/5", "L", "L-3", "LW", "1W", "15W", "28W", "10-20/3", "1,L", "LW,15", "29");
        // Spring's day-of-week: 0 and 7 are Sunday; names MON-SUN; a range may start at 7.
        String dow = pick(r, "0", "7", "1", "MON-FRI", "SAT,SUN", "SUN-TUE", "5-7", "*/2", "5L", "FRIL", "MON#1", "5#3",
                "0#2", "1-5", "6", "wed", "1#5");
        String[] days = switch (r.nextInt(6)) {
            case 0 -> new String[] {"*", "*"};
            case 1 -> new String[] {dom, pick(r, "?", "*")};
            case 2 -> new String[] {pick(r, "?", "*"), dow};
            // Both restricted: a day must match both.
            case 3 -> new String[] {dom, dow};
            default -> r.nextBoolean() ? new String[] {"?", dow} : new String[] {dom, "?"};
        };
        // Left out: `nW` after the 28th (Spring matches a Friday before a day the month does not
        // have when its search starts on that Friday, and not otherwise) and `L-n` beyond the 27th
        // (Spring then answers a day of an earlier month, before the start): docs/state-machine.md.
        return String.join(" ", seconds(r), minutes(r), springHours(r), days[0], months(r, false), days[1]);
    }

    static String quartz(Random r) {
        String hours = pick(r, "*", "0", "1", "2", "3", "0-3", "1,2", "2,3", "*/2", "9", "23", "22-2", "23-1", "0,12", "1-2");
        String dom = pick(r, "*", "1", "15", "31", "1-7", "*/5", "5/10", "L", "L-3", "LW", "L-2W", "1W", "15W", "28W", "30-2",
                "10-20/3", "1,L", "29");
        String dow = pick(r, "*", "1", "7", "MON-FRI", "SAT,SUN", "FRI-MON", "*/2", "6L", "FRIL", "2#1", "6#3", "1#5", "L",
                "2-6", "1-7/3", "sun");
        String days = r.nextBoolean() ? dom + " " + months(r, true) + " ?" : "? " + months(r, true) + " " + dow;
        String year = switch (r.nextInt(8)) {
            case 0 -> " *";
            case 1 -> " 1980-2040";
            case 2 -> " 2019,2027,2031";
            case 3 -> " 1970/3";
            default -> "";
        };
        return String.join(" ", seconds(r), minutes(r), hours, days) + year;
    }
}
