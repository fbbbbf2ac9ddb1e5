package dev.punctual;

/**
 * Handles the tasks of one queue. Register an implementation per queue with
 * {@link PunctualWorker.Builder#handle(String, TaskHandler, int)}; in Spring, make each
 * one a bean. Return an {@link Outcome}; a thrown exception means
 * {@code Outcome.retry(exception.toString())}. A handler may be called again for the
 * same occurrence (same {@link Delivery#deliveryId()}): make it idempotent.
 */
@FunctionalInterface
public interface TaskHandler {
    Outcome handle(Delivery delivery) throws Exception;
}
