package dev.punctual;

/**
 * One item of a batch schedule: {@code outcome} set (with {@code completed} when a dedupe
 * window kept it), or {@code error} when refused ({@code outcome} then null).
 */
public record BatchResult(String key, ScheduleOutcome outcome, PunctualException error, Completed completed) {
    public boolean ok() { return error == null; }
}
