package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;

/** The answer to scheduling one task: {@code outcome} is created, replaced or kept. */
public record ScheduleResult(String outcome, JsonNode task) {}
