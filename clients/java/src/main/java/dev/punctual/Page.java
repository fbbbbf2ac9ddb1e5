package dev.punctual;

import java.util.List;

/** One page of a list of tasks; {@code nextCursor} is null at the end. */
public record Page(List<Task> tasks, String nextCursor) {}
