package dev.punctual;

/**
 * One group of a queue with its tasks by state; {@code leased} is what the queue's
 * {@code group_concurrency} counts (an expired lease until the reaper ends it).
 */
public record GroupCounts(String group, long scheduled, long leased, long dead) {}
