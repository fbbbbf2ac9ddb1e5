package dev.punctual;

/**
 * What a schedule did with its key: stored a new task, replaced the scheduled one, or
 * kept what was there (if-exists keep, or a dedupe window).
 */
public enum ScheduleOutcome { CREATED, REPLACED, KEPT }
