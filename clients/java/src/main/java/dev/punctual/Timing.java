package dev.punctual;

import java.time.Duration;

/**
 * A task's timing policies as the server shows them, each with its effective value (the
 * default where none was given): the working-time {@code calendar} (null without one),
 * {@code misfire} ({@link Misfire#FIRE_ONCE}), {@code misfireAfter} (1 minute; it
 * applies under {@link Misfire#SKIP}), {@code catchUpMax} (10; it applies under
 * {@link Misfire#FIRE_ALL}), {@code overlap} ({@link Overlap#SKIP}) and {@code jitter}
 * (null without one). Set with {@link TaskSpec}'s {@code calendar}, {@code misfire},
 * {@code misfireAfter}, {@code catchUpMax}, {@code overlap} and {@code jitter}; read with
 * {@link Task#timing()} or {@link Delivery#timing()}.
 */
public record Timing(String calendar, Misfire misfire, Duration misfireAfter, int catchUpMax, Overlap overlap,
        Duration jitter) {}
