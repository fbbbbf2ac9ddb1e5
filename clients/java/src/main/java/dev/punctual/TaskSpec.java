package dev.punctual;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What to schedule: every field of the API's task body, all optional. Without
 * {@link #delay} or {@link #dueAt} the task is due now. {@link #key} is used only in a
 * batch ({@link PunctualClient#scheduleMany}).
 */
public final class TaskSpec {
    public enum IfExists { REPLACE, KEEP, ERROR }

    /** How a {@link #dueAt} meets a {@link #calendar}: outside working hours, moved to the next opening. */
    public enum Align { NEXT_OPEN }

    private String key;
    private Duration delay;
    private Instant dueAt;
    private Object payload;
    private Duration repeatEvery;
    private Integer repeatTimes;
    private String repeatCron;
    private String repeatTz;
    private CronSyntax repeatCronSyntax;
    private final List<String> tags = new ArrayList<>();
    private Integer maxAttempts;
    private Duration backoffInitial;
    private Double backoffFactor;
    private Duration backoffMax;
    private IfExists ifExists;
    private Target target;
    private Integer priority;
    private Duration debounceMaxWait;
    private String group;
    private UniqueFor uniqueFor;
    private String calendar;
    private Align align;
    private Misfire misfire;
    private Duration misfireAfter;
    private Integer catchUpMax;
    private Overlap overlap;
    private Duration jitter;

    public static TaskSpec create() { return new TaskSpec(); }

    /** A batch item: the task with this key. */
    public static TaskSpec key(String key) { TaskSpec s = new TaskSpec(); s.key = key; return s; }

    public TaskSpec delay(Duration delay) { this.delay = delay; return this; }
    public TaskSpec dueAt(Instant dueAt) { this.dueAt = dueAt; return this; }
    /** Any value Jackson can serialize (a Map, a record, a JsonNode). */
    public TaskSpec payload(Object payload) { this.payload = payload; return this; }
    /** Fire every {@code every}, forever (until cancelled). */
    public TaskSpec repeatEvery(Duration every) { this.repeatEvery = every; this.repeatTimes = null; return this; }
    /** Fire every {@code every}, {@code times} occurrences in all. */
    public TaskSpec repeatEvery(Duration every, int times) { this.repeatEvery = every; this.repeatTimes = times; return this; }
    /** Fire on a cron schedule in time zone {@code tz} (null: UTC). */
    public TaskSpec repeatCron(String cron, String tz) { this.repeatCron = cron; this.repeatTz = tz; return this; }
    /**
     * Fire on a cron schedule read as {@code syntax} ({@code "0 0 9 ? * MON-FRI"} with
     * {@link CronSyntax#SPRING}) in time zone {@code tz} (null: UTC); the task shows it
     * ({@link Repeat#cronSyntax()}).
     */
    public TaskSpec repeatCron(String cron, String tz, CronSyntax syntax) {
        this.repeatCron = cron; this.repeatTz = tz; this.repeatCronSyntax = syntax; return this;
    }
    public TaskSpec tag(String... tags) { this.tags.addAll(List.of(tags)); return this; }
    public TaskSpec maxAttempts(int maxAttempts) { this.maxAttempts = maxAttempts; return this; }
    public TaskSpec backoff(Duration initial, double factor, Duration max) {
        this.backoffInitial = initial; this.backoffFactor = factor; this.backoffMax = max; return this;
    }
    public TaskSpec ifExists(IfExists ifExists) { this.ifExists = ifExists; return this; }
    public TaskSpec target(Target target) { this.target = target; return this; }
    /**
     * 0–9 (the server's default 0): among the queue's tasks already due, higher ones are
     * leased first. The server refuses other values ({@link InvalidArgumentException},
     * field {@code priority}).
     */
    public TaskSpec priority(int priority) { this.priority = priority; return this; }
    /**
     * Debounce with this max wait, sent as {@code {"max_wait": ms}}: a burst of debounced
     * schedules of one key replaces the scheduled task each time (payload, due time) but
     * never makes it due later than the burst's first schedule + {@code maxWait}; a lease
     * ends the burst. The server refuses 0 ({@link InvalidArgumentException}, field
     * {@code debounce.max_wait}) and a debounce with if-exists keep or error (field
     * {@code debounce}).
     */
    public TaskSpec debounce(Duration maxWait) { this.debounceMaxWait = maxWait; return this; }

    /**
     * The task's group in its queue: due tasks are handed out round robin between groups,
     * and the queue's {@code group_concurrency} setting limits how many tasks of one group
     * are leased at once. Sent as given: the server refuses an empty group or one with
     * control characters ({@link InvalidArgumentException}, field {@code group}).
     */
    public TaskSpec group(String group) { this.group = group; return this; }

    /**
     * A dedupe window: for {@code window} after the key's task completed, a schedule of
     * the key stores nothing and answers kept with the {@link Completed} that kept it
     * ({@link ScheduleResult#completed()}, {@link BatchResult#completed()}). The server
     * refuses 0 ({@link InvalidArgumentException}, field {@code unique_for}).
     */
    public TaskSpec uniqueFor(Duration window) { this.uniqueFor = new UniqueFor(window, false); return this; }

    /** A dedupe window that, with {@code dead}, a task that went dead holds too, from when it died. */
    public TaskSpec uniqueFor(Duration window, boolean dead) { this.uniqueFor = new UniqueFor(window, dead); return this; }

    /**
     * A working-time calendar ({@link PunctualClient#putCalendar}): {@link #delay} counts
     * its working time (a whole number of days counts working days), a {@link #dueAt}
     * needs {@link #align}, neither is the calendar's next opening. The answer's
     * {@code due_at} is the instant resolved. With a repeat, the repeat runs in its
     * working time. The server refuses a calendar it does not serve
     * ({@link InvalidArgumentException}, field {@code calendar}).
     */
    public TaskSpec calendar(String name) { this.calendar = name; return this; }

    /** With {@link #calendar} and {@link #dueAt}: a due time outside working hours moves to the next opening. */
    public TaskSpec align(Align align) { this.align = align; return this; }

    /**
     * What becomes of occurrences missed while no server ran or the queue was paused
     * (null: the server's default, {@link Misfire#FIRE_ONCE}). The task shows it
     * ({@link Task#timing()}); each {@link Delivery} says which occurrence it stands for and
     * how many it stands in for.
     */
    public TaskSpec misfire(Misfire misfire) { this.misfire = misfire; return this; }

    /**
     * With {@link Misfire#SKIP} only (the server's default 1 minute): a first try leased
     * later than this past its due time does not fire. Refused with another misfire
     * ({@link InvalidArgumentException}, field {@code misfire_after}).
     */
    public TaskSpec misfireAfter(Duration misfireAfter) { this.misfireAfter = misfireAfter; return this; }

    /**
     * With {@link Misfire#FIRE_ALL} only, 1–1000 (the server's default 10): at most this
     * many missed occurrences fire, the older ones beyond are dropped. Sent as given
     * (field {@code catch_up_max}).
     */
    public TaskSpec catchUpMax(int catchUpMax) { this.catchUpMax = catchUpMax; return this; }

    /**
     * What becomes of a repeat's occurrences due while its firing is leased (null: the
     * server's default, {@link Overlap#SKIP}).
     */
    public TaskSpec overlap(Overlap overlap) { this.overlap = overlap; return this; }

    /**
     * Each due time moves later by a uniform draw in {@code [0, jitter)}; at most 12h and
     * shorter than a repeat's {@code every} (field {@code jitter}).
     */
    public TaskSpec jitter(Duration jitter) { this.jitter = jitter; return this; }

    String key() { return key; }

    /**
     * The body of {@code PUT /v1/queues/{queue}/tasks/{key}} (with the key for a batch
     * item): the one place the spec's fields become the API's. {@link PunctualClient}
     * sends it, {@link Outbox#schedule} stores it as the row's body.
     */
    ObjectNode toJson() {
        ObjectNode o = Json.MAPPER.createObjectNode();
        if (key != null) o.put("key", key);
        if (delay != null) o.put("delay", delay.toMillis());
        if (dueAt != null) o.put("due_at", dueAt.toString());
        if (payload != null) o.set("payload", Json.MAPPER.valueToTree(payload));
        if (repeatEvery != null || repeatCron != null) {
            ObjectNode r = o.putObject("repeat");
            if (repeatEvery != null) r.put("every", repeatEvery.toMillis());
            if (repeatTimes != null) r.put("times", repeatTimes);
            if (repeatCron != null) r.put("cron", repeatCron);
            if (repeatTz != null) r.put("tz", repeatTz);
            if (repeatCronSyntax != null) r.put("cron_syntax", repeatCronSyntax.wire());
        }
        if (!tags.isEmpty()) {
            ArrayNode t = o.putArray("tags");
            tags.forEach(t::add);
        }
        if (maxAttempts != null) o.put("max_attempts", maxAttempts);
        if (backoffInitial != null || backoffFactor != null || backoffMax != null) {
            ObjectNode b = o.putObject("backoff");
            if (backoffInitial != null) b.put("initial", backoffInitial.toMillis());
            if (backoffFactor != null) b.put("factor", backoffFactor);
            if (backoffMax != null) b.put("max", backoffMax.toMillis());
        }
        if (ifExists != null) o.put("if_exists", Json.wire(ifExists));
        if (priority != null) o.put("priority", priority);
        if (debounceMaxWait != null) o.putObject("debounce").put("max_wait", debounceMaxWait.toMillis());
        if (group != null) o.put("group", group);
        if (uniqueFor != null) o.set("unique_for", uniqueFor.toJson());
        if (calendar != null) o.put("calendar", calendar);
        if (align != null) o.put("align", Json.wire(align));
        if (misfire != null) o.put("misfire", misfire.wire());
        if (misfireAfter != null) o.put("misfire_after", misfireAfter.toMillis());
        if (catchUpMax != null) o.put("catch_up_max", catchUpMax);
        if (overlap != null) o.put("overlap", overlap.wire());
        if (jitter != null) o.put("jitter", jitter.toMillis());
        if (target != null) {
            ObjectNode t = o.putObject("target");
            t.put("url", target.url());
            if (target.method() != null) t.put("method", target.method());
            if (target.headers() != null) t.set("headers", Json.MAPPER.valueToTree(target.headers()));
            if (target.timeout() != null) t.put("timeout", target.timeout().toMillis());
            if (target.body() != null) t.set("body", target.body());
        }
        return o;
    }
}
