package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The answer to scheduling one task: {@code outcome} is created, replaced or kept, and
 * {@code task} the task. Kept by the dedupe window of a task of the key that completed,
 * {@code task} is null and {@code completed} says what completed; otherwise
 * {@code completed} is null. (A dead task holding its key is kept as the task, untouched.)
 */
public record ScheduleResult(String outcome, JsonNode task, Completed completed) {}
