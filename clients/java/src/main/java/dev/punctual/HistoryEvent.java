package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * One event of a task's history ({@link TaskHistory}). Members that do not apply to the
 * event are null, empty ({@code changed}) or an empty optional: {@code by} is the name of
 * the token that made the change (null for the server's own work, such as an expiry,
 * and on a server without tokens). {@link #json()} is the object as the server wrote it.
 *
 * @param state          the task's state after the event ({@link State#GONE} once there is no task)
 * @param attempt        the try the event belongs to (leased, acked, expired)
 * @param lease          the lease's number: each lease of the task raises it
 * @param dueAt          when the task is due after the event
 * @param leaseExpiresAt when the lease ends (leased, extended)
 * @param outcome        how an acked try ended
 * @param error          the handler's error, or why the lease expired (at most 200 bytes)
 * @param changed        what a replace changed: {@code due_at}, {@code payload}, {@code tags},
 *                       {@code priority}, {@code group}, {@code target}, {@code policies}
 * @param tag            a cancel by tag: the tag
 * @param took           a push delivery's ack: how long the delivery took
 * @param status         a push delivery's ack: the HTTP status the far end answered
 * @param answer         a push delivery's ack: the first bytes (at most 200) of its answer
 * @param node           a lease (leased): the name of the server node that handed it out, such as
 *                       {@code web-1:7575 (pid 4242)} (null for a lease taken through the library
 *                       without a node name)
 * @param deliveryId     a lease (leased): its {@link Delivery#deliveryId()}, the same for every try
 *                       of one occurrence
 */
public record HistoryEvent(Instant at, Kind event, State state, String by, OptionalInt attempt, OptionalLong lease,
        Instant dueAt, Instant leaseExpiresAt, AckOutcome outcome, String error, List<String> changed, String tag,
        Duration took, OptionalInt status, String answer, String node, String deliveryId, JsonNode json) {

    /**
     * What happened to the task. {@link #RETRIED} and {@link #DELETED} are a dead task put
     * back or removed (by hand, or deleted by the dead-task retention).
     */
    public enum Kind {
        CREATED, REPLACED, CANCELLED, PURGED, LEASED, EXTENDED, RELEASED, ACKED, EXPIRED, RETRIED, DELETED, IMPORTED;

        /** The name the API uses: {@code created}, {@code replaced}, … */
        public String wire() { return Json.wire(this); }
    }

    /** The task's state after an event: one of a task's, or {@link #GONE} once there is none. */
    public enum State {
        SCHEDULED, LEASED, DEAD, GONE;

        /** The name the API uses: {@code scheduled}, {@code leased}, {@code dead} or {@code gone}. */
        public String wire() { return Json.wire(this); }
    }

    /** How an acked try ended. */
    public enum AckOutcome {
        DONE, RETRY, RESCHEDULE, DEAD;

        /** The name the API uses: {@code done}, {@code retry}, {@code reschedule} or {@code dead}. */
        public String wire() { return Json.wire(this); }
    }

    static HistoryEvent of(JsonNode e) {
        JsonNode lease = Json.node(e, "lease");
        return new HistoryEvent(Json.instant(e, "at"), Json.enumOf(Kind.class, e, "event"),
                Json.enumOf(State.class, e, "state"), Json.text(e, "by"), Json.optionalInt(e, "attempt"),
                lease == null ? OptionalLong.empty() : OptionalLong.of(lease.asLong()), Json.instant(e, "due_at"),
                Json.instant(e, "lease_expires_at"), Json.enumOf(AckOutcome.class, e, "outcome"), Json.text(e, "error"),
                Json.texts(e, "changed"), Json.text(e, "tag"), Json.millis(e, "took_ms"), Json.optionalInt(e, "status"),
                Json.text(e, "answer"), Json.text(e, "node"), Json.text(e, "delivery_id"), e);
    }
}
