package dev.punctual;

/**
 * How a repeat's {@code cron} is read: {@link #VIXIE} (the server's default), or as
 * Spring's or Quartz's {@code CronExpression} reads it (six fields, seconds first, with
 * {@code ?}, {@code L}, {@code W} and {@code #}; Quartz's Sunday = 1 and optional year).
 * Set with {@link TaskSpec#repeatCron(String, String, CronSyntax)}; read back with
 * {@link Repeat#cronSyntax()}.
 */
public enum CronSyntax {
    VIXIE, SPRING, QUARTZ;

    /** The name the API uses: {@code vixie}, {@code spring} or {@code quartz}. */
    public String wire() { return Json.wire(this); }
}
