package dev.punctual;

import java.time.Instant;

/**
 * A worker's hold on a leased task: {@code id} acks or extends it
 * ({@link PunctualClient#ack}, {@link PunctualClient#extend}), and it ends at
 * {@code expiresAt} unless extended; the task then comes back for another try.
 */
public record Lease(String id, Instant expiresAt) {}
