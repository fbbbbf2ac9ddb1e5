package com.example.reminders;

import com.example.reminders.Notifier.Message;
import com.example.reminders.Workflow.Step;
import dev.punctual.NotFoundException;
import dev.punctual.spring.PunctualTemplate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.ExitCodeGenerator;
import org.springframework.context.annotation.Profile;
import org.springframework.stereotype.Component;

/**
 * The profile {@code demo}: plays the scenario once and checks it. A step starts and two
 * orders are placed, one paid at once; the assignee is reminded (every
 * {@code reminders.remind-every}), the manager told once, the unpaid order cancelled; the
 * step done, no task of it is left and nothing is sent in the two reminder periods after.
 * Its verdict is the application's exit status: 0 all happened in time, 1 something did
 * not, 2 an error.
 */
@Component
@Profile("demo")
class Demo implements ApplicationRunner, ExitCodeGenerator {
    private static final Logger log = LoggerFactory.getLogger(Demo.class);
    /** Beyond the longest delay, how long the demo waits for what it expects. */
    private static final Duration SLACK = Duration.ofSeconds(10);

    private final Workflow workflow;
    private final Orders orders;
    private final Notifier notifier;
    private final PunctualTemplate punctual;
    private final ReminderDelays delays;
    private volatile int exitCode = 2;

    Demo(Workflow workflow, Orders orders, Notifier notifier, PunctualTemplate punctual, ReminderDelays delays) {
        this.workflow = workflow;
        this.orders = orders;
        this.notifier = notifier;
        this.punctual = punctual;
        this.delays = delays;
    }

    @Override
    public int getExitCode() { return exitCode; }

    @Override
    public void run(ApplicationArguments args) {
        try {
            exitCode = play() ? 0 : 1;
        } catch (Exception e) {
            log.error("error: {}", e.toString(), e);
            exitCode = 2;
        }
    }

    /** What was sent, sorted by who received it. */
    private final class Sent {
        final List<String> reminders = new ArrayList<>();
        final List<String> managerNotices = new ArrayList<>();
        final List<String> customerNotices = new ArrayList<>();

        void add(Message message, Step step) {
            if (message.to().equals(step.assignee())) reminders.add(message.text());
            else if (message.to().equals(step.manager())) managerNotices.add(message.text());
            else customerNotices.add(message.text());
        }
    }

    private boolean play() throws InterruptedException {
        Step step = new Step("task-77", "pi-9", "express return #9, chief approval", "Zhang Wei", "Li Na");
        log.info("step \"{}\" starts: remind {} every {}, tell {} after {}", step.title(), step.assignee(),
                show(delays.remindEvery()), step.manager(), show(delays.tellManagerAfter()));
        workflow.stepStarted(step);
        log.info("orders 1001 and 1002 placed: cancelled unless paid within {}", show(delays.cancelUnpaidAfter()));
        orders.place(1001, "Wang Fang");
        orders.place(1002, "Wang Fang");
        orders.pay(1001);
        log.info("order 1001 paid");

        // The reminders due before the manager's notice, the notice, and the unpaid order's cancel.
        long expected = Math.max(1, (delays.tellManagerAfter().toMillis() - 1) / delays.remindEvery().toMillis());
        Duration wait = max(delays.tellManagerAfter(), delays.cancelUnpaidAfter()).plus(SLACK);
        long deadline = System.nanoTime() + wait.toNanos();
        Sent sent = new Sent();
        while (sent.reminders.size() < expected || sent.managerNotices.isEmpty() || sent.customerNotices.isEmpty()) {
            Message message = notifier.sent().poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (message == null) {
                return fail("after %s: %d of %d reminders, %d manager's notice(s), %d cancel notice(s)", show(wait),
                        sent.reminders.size(), expected, sent.managerNotices.size(), sent.customerNotices.size());
            }
            sent.add(message, step);
        }

        // The step is done. A reminder being sent holds the step's row, so once stepDone
        // returns, whatever was sent for the step is in the notifier's queue.
        workflow.stepDone(step.key());
        for (Message message; (message = notifier.sent().poll()) != null; ) sent.add(message, step);
        log.info("step done: {} reminder(s), {} manager's notice(s) sent", sent.reminders.size(), sent.managerNotices.size());

        if (sent.managerNotices.size() != 1) return fail("the manager was told %d times", sent.managerNotices.size());
        if (!sent.customerNotices.equals(List.of("order 1002 was cancelled: it was not paid in time"))) {
            return fail("the customer was told %s", sent.customerNotices);
        }
        if (!orders.status(1001).equals("PAID") || !orders.status(1002).equals("CANCELLED")) {
            return fail("order 1001 is %s, order 1002 %s", orders.status(1001), orders.status(1002));
        }
        for (String[] task : new String[][] {{Workflow.REMIND_ASSIGNEE, step.key().toString()},
                {Workflow.TELL_MANAGER, step.key().toString()}, {Orders.CANCEL, "order-1001"}, {Orders.CANCEL, "order-1002"}}) {
            if (exists(task[0], task[1])) return fail("the task %s/%s is left", task[0], task[1]);
        }

        Duration quiet = delays.remindEvery().multipliedBy(2);
        Message late = notifier.sent().poll(quiet.toNanos(), TimeUnit.NANOSECONDS);
        if (late != null) return fail("sent after the step was done: to %s: %s", late.to(), late.text());
        log.info("nothing sent in the {} after; order 1001 paid, 1002 cancelled, no task left: OK", show(quiet));
        return true;
    }

    private boolean exists(String queue, String key) {
        try {
            punctual.client().get(queue, key);
            return true;
        } catch (NotFoundException gone) {
            return false;
        }
    }

    private static boolean fail(String format, Object... args) {
        log.error("FAIL: {}", String.format(format, args));
        return false;
    }

    private static Duration max(Duration a, Duration b) { return a.compareTo(b) >= 0 ? a : b; }

    private static String show(Duration d) { return d.toString().substring(2).toLowerCase(); }
}
