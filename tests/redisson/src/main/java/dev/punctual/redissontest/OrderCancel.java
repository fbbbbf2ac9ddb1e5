package dev.punctual.redissontest;

import java.util.List;

/**
 * An order to cancel, as a Spring service would offer it to an RDelayedQueue. Not final,
 * as most POJOs are: JsonJacksonCodec then writes its class as an "@class" property, its
 * List as ["java.util.ArrayList", [...]] and its Long as ["java.lang.Long", n].
 */
public class OrderCancel {
    private long orderId;
    private Customer customer;
    private List<String> items;
    private Long amountCents;

    /** For Jackson. */
    public OrderCancel() {}

    public OrderCancel(long orderId, Customer customer, List<String> items, Long amountCents) {
        this.orderId = orderId;
        this.customer = customer;
        this.items = items;
        this.amountCents = amountCents;
    }

    /** A record is final: written without type hints. */
    public record Customer(String name, String tier) {}
}
