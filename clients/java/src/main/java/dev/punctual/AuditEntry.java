package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.Locale;

/**
 * One entry of the server's audit log ({@link PunctualClient#audit}): an operator's
 * change, when, and by which token's name ({@code by}; null on a server without tokens
 * and for a reload of the config file by SIGHUP).
 * {@code queue} or {@code calendar} names what it changed (null where it does not apply);
 * {@code detail} is the JSON object the server adds, as it wrote it (null without one).
 * {@link #json()} is the entry as the server wrote it.
 */
public record AuditEntry(Instant at, Action action, String by, String queue, String calendar, JsonNode detail,
        JsonNode json) {

    /** What the entry records. */
    public enum Action {
        QUEUE_SETTINGS_SET, QUEUE_SETTINGS_CLEAR, QUEUE_PAUSE, QUEUE_RESUME, QUEUE_PURGE, CALENDAR_SET,
        CALENDAR_REMOVE, ACCESS_RELOAD;

        /** The name the API uses: its name in lower case, dotted ({@code QUEUE_PAUSE} is {@code queue.pause}). */
        public String wire() { return name().toLowerCase(Locale.ROOT).replace('_', '.'); }

        /** The action the API names {@code wire}; an unknown name is an {@link IllegalArgumentException}. */
        public static Action fromWire(String wire) {
            for (Action action : values()) {
                if (action.wire().equals(wire)) return action;
            }
            throw new IllegalArgumentException("unknown audit action: " + wire);
        }
    }

    static AuditEntry of(JsonNode e) {
        String action = Json.text(e, "action");
        return new AuditEntry(Json.instant(e, "at"), action == null ? null : Action.fromWire(action), Json.text(e, "by"),
                Json.text(e, "queue"), Json.text(e, "calendar"), Json.node(e, "detail"), e);
    }
}
