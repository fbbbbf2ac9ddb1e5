package dev.punctual;

import java.time.Duration;
import java.util.Objects;

/** What a handler decided about a task; sent to the server as the lease's ack. */
public final class Outcome {
    /** The ack outcome kinds of the API. */
    public enum Kind { DONE, RETRY, RESCHEDULE, FAIL }

    private final Kind kind;
    private final Duration delay;
    private final String error;

    private Outcome(Kind kind, Duration delay, String error) {
        this.kind = kind;
        this.delay = delay;
        this.error = error;
    }

    /** Finished: the task is gone (or its next repeat is scheduled). */
    public static Outcome done() { return new Outcome(Kind.DONE, null, null); }

    /** Try again after {@code delay} (null: the task's backoff), recording {@code error}. */
    public static Outcome retry(Duration delay, String error) { return new Outcome(Kind.RETRY, delay, error); }

    /** Try again after the task's backoff, recording {@code error}. */
    public static Outcome retry(String error) { return retry(null, error); }

    /** Fire again after {@code delay}, as a new occurrence (attempts reset). */
    public static Outcome reschedule(Duration delay) {
        return new Outcome(Kind.RESCHEDULE, Objects.requireNonNull(delay, "delay"), null);
    }

    /** Give up: the task is dead now with {@code error} as its last error. */
    public static Outcome fail(String error) { return new Outcome(Kind.FAIL, null, error); }

    public Kind kind() { return kind; }
    public Duration delay() { return delay; }
    public String error() { return error; }

    @Override
    public String toString() {
        return kind.name().toLowerCase() + (delay != null ? " " + delay : "") + (error != null ? " (" + error + ")" : "");
    }
}
