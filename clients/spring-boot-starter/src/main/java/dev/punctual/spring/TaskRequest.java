package dev.punctual.spring;

import com.fasterxml.jackson.databind.JsonNode;
import dev.punctual.TaskSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Consumer;

/**
 * One write of {@link PunctualTemplate}, held until it is sent: at once, after the
 * transaction commits, or as an outbox row. For {@link Op#CANCEL_TAG} {@code key} is the
 * tag; {@code payload}, {@code delay}, {@code at} and {@code options} belong to the
 * schedules only (at most one of {@code delay} and {@code at}).
 */
record TaskRequest(Op op, String queue, String key, JsonNode payload, Duration delay, Instant at,
        Consumer<TaskSpec> options) {

    /** What the request does; {@link #tag} names it in metrics. */
    enum Op {
        SCHEDULE("schedule"), RESCHEDULE("reschedule"), CANCEL("cancel"), CANCEL_TAG("cancel_tag");

        final String tag;

        Op(String tag) { this.tag = tag; }
    }

    static TaskRequest cancel(String queue, String key) { return new TaskRequest(Op.CANCEL, queue, key, null, null, null, null); }

    static TaskRequest cancelTag(String queue, String tag) {
        return new TaskRequest(Op.CANCEL_TAG, queue, tag, null, null, null, null);
    }
}
