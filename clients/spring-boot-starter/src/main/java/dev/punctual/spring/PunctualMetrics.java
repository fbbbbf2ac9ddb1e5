package dev.punctual.spring;

/**
 * What the starter reports as it runs: each handled task and each write of
 * {@link PunctualTemplate}. Micrometer's implementation is made when the application
 * has a {@code MeterRegistry} ({@link MicrometerPunctualMetrics}); otherwise nothing is
 * recorded.
 */
interface PunctualMetrics {
    PunctualMetrics NONE = new PunctualMetrics() {
        @Override
        public void handled(String queue, String outcome, Throwable error, long nanos) {}

        @Override
        public void sent(String queue, String op, String route) {}
    };

    /** A handler ended with {@code outcome} (done, retry, reschedule, fail), by {@code error} when it threw. */
    void handled(String queue, String outcome, Throwable error, long nanos);

    /**
     * A template's write ({@link TaskRequest.Op#tag}) left by {@code route}: {@code http}
     * (sent), {@code outbox} (a row written) or {@code dropped} (its transaction rolled back).
     */
    void sent(String queue, String op, String route);
}
