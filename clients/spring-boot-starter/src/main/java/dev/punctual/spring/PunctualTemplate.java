package dev.punctual.spring;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.punctual.PunctualClient;
import dev.punctual.TaskSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Schedules and cancels tasks with typed payloads, written by the application's
 * Jackson mapper (the same that binds them in a {@link PunctualHandler} method).
 *
 * <pre>{@code
 * template.schedule("order.cancel", "order-" + id, new OrderCancel(id), Duration.ofMinutes(30),
 *         spec -> spec.tag("order-" + id).maxAttempts(5));
 * }</pre>
 *
 * <p>Where a write goes:
 * <ul>
 * <li>inside a transaction ({@code @Transactional}, {@code TransactionTemplate}) it is
 * sent once the transaction has committed, and dropped when it rolls back;
 * <li>outside one it is sent at once;
 * <li>with {@code punctual.outbox.table} set and a DataSource, every write is a row of
 * the outbox table in the application's database, in the transaction where there is
 * one, which the server drains (docs/outbox.md).
 * </ul>
 * So the methods answer nothing: the write may not have reached the server yet. Reads
 * (the task, the queue's counts) go through {@link #client()}.
 *
 * <p>A cancel of a key that has no task is no error. Thread-safe; one bean per
 * application.
 */
public class PunctualTemplate {
    private final TaskSender sender;
    private final ObjectMapper mapper;
    private final PunctualClient client;

    PunctualTemplate(TaskSender sender, ObjectMapper mapper, PunctualClient client) {
        this.sender = sender;
        this.mapper = mapper;
        this.client = client;
    }

    /** Schedules {@code payload} on {@code queue} under {@code key}, due after {@code delay}. */
    public void schedule(String queue, String key, Object payload, Duration delay) {
        schedule(queue, key, payload, delay, null);
    }

    /**
     * As {@link #schedule(String, String, Object, Duration)}, {@code options} setting the
     * other fields of the task (tags, repeat, max attempts, backoff, priority, group,
     * if-exists…) on the client's {@link TaskSpec}.
     */
    public void schedule(String queue, String key, Object payload, Duration delay, Consumer<TaskSpec> options) {
        Objects.requireNonNull(delay, "delay");
        sender.send(new TaskRequest(TaskRequest.Op.SCHEDULE, queue, key, json(payload), delay, null, options));
    }

    /** Schedules {@code payload} on {@code queue} under {@code key}, due at {@code at} (in the past: now). */
    public void schedule(String queue, String key, Object payload, Instant at) {
        schedule(queue, key, payload, at, null);
    }

    /** As {@link #schedule(String, String, Object, Instant)}, with {@code options}. */
    public void schedule(String queue, String key, Object payload, Instant at, Consumer<TaskSpec> options) {
        Objects.requireNonNull(at, "at");
        sender.send(new TaskRequest(TaskRequest.Op.SCHEDULE, queue, key, json(payload), null, at, options));
    }

    /**
     * Replaces the task of {@code key} with one due after {@code delay} carrying
     * {@code payload} (a new task when it has none), whatever {@code if_exists} the
     * queue's defaults say: "remind again later" from outside the handler.
     */
    public void reschedule(String queue, String key, Object payload, Duration delay) {
        Objects.requireNonNull(delay, "delay");
        sender.send(new TaskRequest(TaskRequest.Op.RESCHEDULE, queue, key, json(payload), delay, null, null));
    }

    /** As {@link #reschedule(String, String, Object, Duration)}, due at {@code at}. */
    public void reschedule(String queue, String key, Object payload, Instant at) {
        Objects.requireNonNull(at, "at");
        sender.send(new TaskRequest(TaskRequest.Op.RESCHEDULE, queue, key, json(payload), null, at, null));
    }

    /** Cancels the task of {@code key}; a leased one for good (no retry, no repeat). */
    public void cancel(String queue, String key) {
        sender.send(TaskRequest.cancel(queue, key));
    }

    /** Cancels every task of {@code queue} carrying {@code tag}. */
    public void cancelByTag(String queue, String tag) {
        sender.send(TaskRequest.cancelTag(queue, tag));
    }

    /** The client underneath, for reads and everything else of the API; its calls are sent at once. */
    public PunctualClient client() { return client; }

    private JsonNode json(Object payload) { return payload == null ? null : mapper.valueToTree(payload); }
}
