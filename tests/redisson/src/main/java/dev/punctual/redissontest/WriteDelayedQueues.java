package dev.punctual.redissontest;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RBlockingQueue;
import org.redisson.api.RDelayedQueue;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.codec.JsonJacksonCodec;
import org.redisson.config.Config;

/**
 * Offers elements to two RDelayedQueues with real Redisson, for tests/redisson/run.sh:
 * N strings (StringCodec) to the queue "flow:reminder" and N OrderCancel objects
 * (JsonJacksonCodec) to "{shop}order-cancel", due 60 s and more ahead; one string due at
 * once, which Redisson's own transfer moves to its destination list before this program
 * ends; and one string due in 300 ms, left delayed when the client shuts down: the
 * program waits until it is overdue before it ends, so it is overdue when imported. Writes what it offered to a JSON file: for each element its
 * queue, its expected task key where known, its due time and its payload as the import
 * should carry it.
 *
 * <p>Usage: WriteDelayedQueues redis://127.0.0.1:PORT N expected.json
 */
public final class WriteDelayedQueues {
    static final String TEXTS = "flow:reminder";
    static final String ORDERS = "{shop}order-cancel";

    public static void main(String[] args) throws Exception {
        String address = args[0];
        int count = Integer.parseInt(args[1]);
        Path expectedFile = Path.of(args[2]);

        Config config = new Config();
        config.useSingleServer().setAddress(address);
        RedissonClient redisson = Redisson.create(config);
        // The payloads as an application would write them: fields, no type hints.
        ObjectMapper plain = new ObjectMapper().setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY);
        ArrayNode expected = plain.createArrayNode();
        long overdueAt;
        try {
            RBlockingQueue<String> texts = redisson.getBlockingQueue(TEXTS, StringCodec.INSTANCE);
            RDelayedQueue<String> delayedTexts = redisson.getDelayedQueue(texts);
            RBlockingQueue<OrderCancel> orders = redisson.getBlockingQueue(ORDERS, JsonJacksonCodec.INSTANCE);
            RDelayedQueue<OrderCancel> delayedOrders = redisson.getDelayedQueue(orders);

            for (int i = 0; i < count; i++) {
                long delay = 60_000 + i * 1_000L;
                String text = "task-" + i + "@pi-9@zhang.wei";
                long due = System.currentTimeMillis() + delay;
                delayedTexts.offer(text, delay, TimeUnit.MILLISECONDS);
                expected.add(element(plain, TEXTS, null, due).put("payload", text));

                OrderCancel order = new OrderCancel(
                        10_000 + i,
                        new OrderCancel.Customer("customer-" + i, i % 2 == 0 ? "GOLD" : "SILVER"),
                        List.of("sku-" + i, "sku-" + (i + 1)),
                        1_299L * i);
                due = System.currentTimeMillis() + delay;
                delayedOrders.offer(order, delay, TimeUnit.MILLISECONDS);
                expected.add(element(plain, ORDERS, String.valueOf(10_000 + i), due).set("payload", plain.valueToTree(order)));
            }

            // Due at once: Redisson's transfer moves it to the list "flow:reminder".
            delayedTexts.offer("already-due", 0, TimeUnit.MILLISECONDS);
            long deadline = System.currentTimeMillis() + 10_000;
            while (texts.size() < 1) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("Redisson did not move the element due at once within 10 s");
                }
                Thread.sleep(20);
            }
            // Due in 300 ms, with nobody left to move it once this client is shut down.
            overdueAt = System.currentTimeMillis() + 300;
            delayedTexts.offer("overdue", 300, TimeUnit.MILLISECONDS);
            expected.add(element(plain, TEXTS, null, overdueAt).put("payload", "overdue"));
        } finally {
            redisson.shutdown();
        }
        while (System.currentTimeMillis() <= overdueAt) {
            Thread.sleep(10);
        }
        plain.writerWithDefaultPrettyPrinter().writeValue(expectedFile.toFile(), expected);
        System.out.println("offered " + expected.size() + " delayed elements with Redisson " + redissonVersion());
    }

    private static ObjectNode element(ObjectMapper mapper, String queue, String key, long dueAtMs) {
        ObjectNode node = mapper.createObjectNode().put("queue", queue).put("due_at_ms", dueAtMs);
        return key == null ? node : node.put("key", key);
    }

    private static String redissonVersion() {
        String version = Redisson.class.getPackage().getImplementationVersion();
        return version == null ? "(version not in its manifest)" : version;
    }
}
