package dev.punctual.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a bean method that handles the tasks of one queue. The starter runs a worker for
 * the queue while the application context runs, and calls the method for each task.
 *
 * <pre>{@code
 * @PunctualHandler(queue = "order.cancel", concurrency = 4)
 * void cancel(OrderCancel order) { orders.cancelIfUnpaid(order.orderId()); }
 * }</pre>
 *
 * <p>Parameters, in any order, each at most once: the payload, bound by the
 * application's Jackson mapper to the parameter's type (a record, a class, a
 * {@code Map}, a {@code JsonNode}), and {@link dev.punctual.Delivery}, the leased try
 * (attempt, delivery id, key). Returns void (done) or an {@link dev.punctual.Outcome}
 * (null is done). A thrown exception, a payload that does not bind included, is a retry
 * by the task's or the queue's backoff, until its max attempts make it dead. A task may
 * be handled again for the same occurrence (the same {@code Delivery.deliveryId()}):
 * make the method idempotent.
 *
 * <p>One method per queue in an application; {@code punctual.queues."[name]".*} in
 * {@code application.yml} overrides the concurrency and sets the lease.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface PunctualHandler {
    /** The queue whose tasks the method handles. */
    String queue();

    /** Tasks of the queue handled at once in this application. */
    int concurrency() default 1;
}
