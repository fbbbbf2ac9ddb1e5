package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.util.OptionalInt;

/**
 * A task's repeat as the server shows it: {@code every} a duration, or a {@code cron}
 * expression read in zone {@code tz} with {@code cronSyntax} ({@link CronSyntax#VIXIE}
 * unless the task was scheduled with another); the other kind's members are null.
 * {@code times} counts the occurrences in all (empty: forever), {@code until} ends the
 * repeat (null: never). Set with {@link TaskSpec#repeatEvery} or {@link TaskSpec#repeatCron}.
 */
public record Repeat(Duration every, String cron, String tz, CronSyntax cronSyntax, OptionalInt times, Instant until) {

    /** The repeat of a task; null when it has none. */
    static Repeat of(JsonNode r) {
        if (r == null || !r.isObject()) return null;
        String cron = Json.text(r, "cron");
        CronSyntax syntax = Json.enumOf(CronSyntax.class, r, "cron_syntax");
        // The server shows cron_syntax only for spring and quartz.
        if (cron != null && syntax == null) syntax = CronSyntax.VIXIE;
        return new Repeat(Json.duration(r, "every"), cron, Json.text(r, "tz"), syntax, Json.optionalInt(r, "times"),
                Json.instant(r, "until"));
    }
}
