package dev.punctual;

/**
 * The answer to scheduling one task: what the schedule did ({@code outcome}) and the
 * task. Kept by the dedupe window of a task of the key that completed, {@code task} is
 * null and {@code completed} says what completed; otherwise {@code completed} is null.
 * (A dead task holding its key is kept as the task, untouched.)
 */
public record ScheduleResult(ScheduleOutcome outcome, Task task, Completed completed) {}
