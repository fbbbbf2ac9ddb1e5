// The seeds' overdue reminders with the Java client: a step of a workflow instance is
// pending; its assignee is reminded every REMIND_EVERY (default 24h), the chief is told
// after TELL_CHIEF_AFTER (default 48h), and when the step is done everything tagged with
// the workflow instance is cancelled.
//
// Run by run.sh with Java 17's single-file source launcher against the client's classes.
// It plays the scenario once and checks it: exit 0 when the reminders and the chief's
// notice came and nothing fired after the cancel, 1 when something it expected did not
// happen in time, 2 on an error.

import dev.punctual.Delivery;
import dev.punctual.ListOptions;
import dev.punctual.Outcome;
import dev.punctual.PunctualClient;
import dev.punctual.PunctualWorker;
import dev.punctual.TaskHandler;
import dev.punctual.TaskSpec;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class WorkflowReminders {

    static final String REMIND = "flow.remind-assignee";
    static final String TELL_CHIEF = "flow.tell-manager";

    /** What the workflow engine puts in each task's payload. */
    public record Step(String instance, String workflow, String step, String assignee, String chief) {}

    /** Stands in for the workflow engine: which steps are still pending. */
    static final Map<String, Boolean> PENDING = new ConcurrentHashMap<>();

    /** What the handlers did, for the checks in main; handlers never block on it. */
    record Event(String kind, Step step) {}
    static final BlockingQueue<Event> EVENTS = new LinkedBlockingQueue<>();
    static final Instant START = Instant.now();

    // The seeds' IMessageHandler, one per queue. No key prefix to parse: the step comes
    // in the payload. No Redis lock: a lease gives a task to one worker at a time. No
    // re-arm: the reminder task repeats by itself until it is cancelled.

    /** Reminds the assignee; the task repeats every REMIND_EVERY on its own. */
    static final class RemindAssignee implements TaskHandler {
        @Override
        public Outcome handle(Delivery d) {
            Step s = d.payload(Step.class);
            // A delivery leased just before the cancel can still arrive: check the step,
            // as the seeds' checkFlowWithSendMessage did, and say nothing if it is done.
            if (!PENDING.getOrDefault(s.instance(), false)) {
                log("remind: step \"%s\" of %s is done, nothing to say", s.step(), s.workflow());
                return Outcome.done();
            }
            log("remind %s: step \"%s\" of %s is still pending (attempt %d, delivery %s)",
                    s.assignee(), s.step(), s.workflow(), d.attempt(), d.deliveryId());
            EVENTS.add(new Event("remind", s));
            return Outcome.done(); // done with this occurrence; the next one is scheduled
        }
    }

    /** Tells the chief once, TELL_CHIEF_AFTER after the step started. */
    static final class TellChief implements TaskHandler {
        @Override
        public Outcome handle(Delivery d) {
            Step s = d.payload(Step.class);
            if (!PENDING.getOrDefault(s.instance(), false)) return Outcome.done();
            log("tell chief %s: step \"%s\" of %s assigned to %s is overdue",
                    s.chief(), s.step(), s.workflow(), s.assignee());
            EVENTS.add(new Event("chief", s));
            return Outcome.done();
        }
    }

    /** Kept so the level holds: the worker's stop/start lines would crowd the story. */
    static final java.util.logging.Logger WORKER_LOG = java.util.logging.Logger.getLogger("dev.punctual.worker");

    public static void main(String[] args) throws Exception {
        WORKER_LOG.setLevel(java.util.logging.Level.WARNING);
        try {
            System.exit(run());
        } catch (Exception e) {
            System.err.println("error: " + e);
            System.exit(2);
        }
    }

    static int run() throws Exception {
        Duration remindEvery = parse("REMIND_EVERY", "24h");
        Duration tellChiefAfter = parse("TELL_CHIEF_AFTER", "48h");
        // Reminders expected before the chief is told: those due strictly before it.
        long expected = Math.max(1, (tellChiefAfter.toMillis() - 1) / remindEvery.toMillis());
        Duration slack = parse("SLACK", "10s");

        PunctualClient client = PunctualClient.fromEnv(); // PUNCTUAL_SERVER, PUNCTUAL_TOKEN
        PunctualWorker worker = PunctualWorker.builder().client(client)
                .leaseFor(Duration.ofSeconds(30))
                .pollWait(Duration.ofSeconds(2))
                .handle(REMIND, new RemindAssignee(), 4)
                .handle(TELL_CHIEF, new TellChief(), 4)
                .build().start();
        try {
            // The step starts: what the seeds' submit() did with a Redis key and a TTL.
            Step step = new Step("pi-9", "express-return #9", "chief approval", "Zhang Wei", "Li Na");
            String tag = step.instance();
            PENDING.put(step.instance(), true);
            log("step \"%s\" of %s starts: remind every %s, tell the chief after %s",
                    step.step(), step.workflow(), show(remindEvery), show(tellChiefAfter));
            client.schedule(REMIND, "pi-9-chief-approval", TaskSpec.create()
                    .delay(remindEvery).repeatEvery(remindEvery).payload(step).tag(tag));
            client.schedule(TELL_CHIEF, "pi-9-chief-approval", TaskSpec.create()
                    .delay(tellChiefAfter).payload(step).tag(tag));

            // Wait for the chief's notice and the reminders before it.
            long deadline = System.nanoTime() + tellChiefAfter.plus(slack).toNanos();
            long reminders = 0;
            boolean chief = false;
            while (!chief || reminders < expected) {
                Event e = EVENTS.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (e == null) {
                    System.err.printf("FAIL: after %s, %d of %d reminders and %s chief's notice%n",
                            show(tellChiefAfter.plus(slack)), reminders, expected, chief ? "the" : "no");
                    return 1;
                }
                if (e.kind().equals("remind")) reminders++; else chief = true;
            }

            // The step is done: the workflow engine marks it and cancels by tag.
            PENDING.put(step.instance(), false);
            long cancelled = client.cancelByTag(REMIND, tag) + client.cancelByTag(TELL_CHIEF, tag);
            log("step done: cancelled %d task(s) tagged %s", cancelled, tag);
            ListOptions tagged = ListOptions.create().tag(tag);
            long left = client.list(REMIND, tagged).count() + client.list(TELL_CHIEF, tagged).count();
            if (left != 0) {
                System.err.printf("FAIL: %d task(s) tagged %s left after the cancel%n", left, tag);
                return 1;
            }

            // Nothing may fire after: wait two reminder periods for an event that must not come.
            Duration quiet = remindEvery.multipliedBy(2);
            Event late = EVENTS.poll(quiet.toNanos(), TimeUnit.NANOSECONDS);
            if (late != null) {
                System.err.printf("FAIL: %s fired after the step was done%n", late.kind());
                return 1;
            }
            log("nothing fired in the %s after; %d reminder(s), 1 chief's notice: OK", show(quiet), reminders);
            return 0;
        } finally {
            worker.stop(Duration.ofSeconds(5));
        }
    }

    static void log(String format, Object... args) {
        double at = Duration.between(START, Instant.now()).toMillis() / 1000.0;
        System.out.printf("[%5.1fs] %s%n", at, String.format(format, args));
    }

    static String show(Duration d) { return d.toString().substring(2).toLowerCase(); }

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    /** A duration from the environment, as punctual writes them: 500ms, 1s, 24h, 2d. */
    static Duration parse(String name, String fallback) {
        String raw = System.getenv().getOrDefault(name, fallback).trim();
        Matcher m = DURATION.matcher(raw);
        if (!m.matches()) throw new IllegalArgumentException(name + ": not a duration: " + raw);
        long n = Long.parseLong(m.group(1));
        Duration d = switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
        if (d.isZero()) throw new IllegalArgumentException(name + " must be positive");
        return d;
    }
}
