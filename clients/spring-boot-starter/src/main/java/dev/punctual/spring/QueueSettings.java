package dev.punctual.spring;

import java.time.Duration;

/** One queue's worker settings, resolved ({@link PunctualProperties#queue}). */
record QueueSettings(boolean enabled, int concurrency, Duration lease, Duration pollWait) {}
