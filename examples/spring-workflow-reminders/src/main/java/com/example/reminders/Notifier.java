package com.example.reminders;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Stands in for the seed's WeChat and mail senders: logs each message, and keeps it for
 * the demo's checks.
 */
@Component
public class Notifier {
    private static final Logger log = LoggerFactory.getLogger(Notifier.class);

    public record Message(String to, String text) {}

    private final BlockingQueue<Message> sent = new LinkedBlockingQueue<>();

    public void send(String to, String text) {
        log.info("to {}: {}", to, text);
        sent.add(new Message(to, text));
    }

    /** The messages sent, in their order; {@link Demo} takes them as they come. */
    BlockingQueue<Message> sent() { return sent; }
}
