package com.example.reminders;

import dev.punctual.spring.PunctualHandler;
import dev.punctual.spring.PunctualTemplate;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Orders (the table {@code orders}) and their 30-minute cancel: scheduled in the order's
 * transaction, cancelled in the payment's, and carried out by a handler whose update
 * leaves a paid order alone, so a payment that races the timeout wins either way.
 */
@Service
public class Orders {
    static final String CANCEL = "order.cancel";

    /** The cancel's payload, bound by Jackson in the handler. */
    public record OrderCancel(long orderId) {}

    private final JdbcTemplate db;
    private final PunctualTemplate punctual;
    private final Notifier notifier;
    private final ReminderDelays delays;

    Orders(JdbcTemplate db, PunctualTemplate punctual, Notifier notifier, ReminderDelays delays) {
        this.db = db;
        this.punctual = punctual;
        this.notifier = notifier;
        this.delays = delays;
    }

    @Transactional
    public void place(long orderId, String customer) {
        db.update("INSERT INTO orders (id, customer, status) VALUES (?, ?, 'UNPAID')", orderId, customer);
        punctual.schedule(CANCEL, "order-" + orderId, new OrderCancel(orderId), delays.cancelUnpaidAfter());
    }

    @Transactional
    public void pay(long orderId) {
        if (db.update("UPDATE orders SET status = 'PAID' WHERE id = ? AND status = 'UNPAID'", orderId) == 0) {
            throw new IllegalStateException("order " + orderId + " is not waiting for its payment");
        }
        punctual.cancel(CANCEL, "order-" + orderId);
    }

    @PunctualHandler(queue = CANCEL, concurrency = 8)
    @Transactional
    public void cancelUnpaid(OrderCancel cancel) {
        if (db.update("UPDATE orders SET status = 'CANCELLED' WHERE id = ? AND status = 'UNPAID'", cancel.orderId()) == 0) {
            return; // paid (or cancelled by an earlier try) meanwhile
        }
        String customer = db.queryForObject("SELECT customer FROM orders WHERE id = ?", String.class, cancel.orderId());
        notifier.send(customer, "order " + cancel.orderId() + " was cancelled: it was not paid in time");
    }

    public String status(long orderId) {
        return db.queryForObject("SELECT status FROM orders WHERE id = ?", String.class, orderId);
    }
}
