package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * How a repeat's {@code cron} is read: {@link #VIXIE} (the server's default), or as
 * Spring's or Quartz's {@code CronExpression} reads it (six fields, seconds first, with
 * {@code ?}, {@code L}, {@code W} and {@code #}; Quartz's Sunday = 1 and optional year).
 * Set with {@link TaskSpec#repeatCron(String, String, CronSyntax)}; read back with
 * {@link #of(JsonNode)}.
 */
public enum CronSyntax {
    VIXIE, SPRING, QUARTZ;

    /** The name the API uses: {@code vixie}, {@code spring} or {@code quartz}. */
    public String wire() { return name().toLowerCase(); }

    /**
     * The syntax of the task's cron repeat: the server shows {@code cron_syntax} only for
     * spring and quartz, so a cron repeat without it is {@link #VIXIE}; null when the task
     * has no cron repeat.
     */
    public static CronSyntax of(JsonNode task) {
        JsonNode repeat = task.path("repeat");
        if (!repeat.hasNonNull("cron")) return null;
        JsonNode syntax = repeat.path("cron_syntax");
        if (!syntax.isTextual()) return VIXIE;
        for (CronSyntax s : values()) {
            if (s.wire().equals(syntax.asText())) return s;
        }
        throw new IllegalArgumentException("unknown cron_syntax: " + syntax.asText());
    }
}
