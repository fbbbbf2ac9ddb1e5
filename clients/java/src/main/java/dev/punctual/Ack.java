package dev.punctual;

/** An ack for a batch ({@link PunctualClient#acks}), and its per-item answer. */
public record Ack(String leaseId, Outcome outcome) {
    /** {@code status} is 204 when applied, else 400/404/409 with {@code error}. */
    public record Result(String leaseId, int status, PunctualException error) {}
}
