// The order-outbox example's flow in Java: place, pay and fail to place orders, each in
// ONE JDBC transaction with its outbox row (the order's cancel scheduled, or cancelled),
// written by the Java client's Outbox. punctual's server drains the table; shop.py
// receives the webhook at the timeout.
//
// Run by run.sh with Java 17's single-file source launcher, against the client's classes
// and PostgreSQL's JDBC driver. Environment: SHOP_DATABASE_URL (postgres://user@host/db),
// ORDER_TIMEOUT (default 30m).

import dev.punctual.Outbox;
import dev.punctual.TaskSpec;

import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

public class OrderOutbox {

    static final String QUEUE = "order.cancel";
    static final Outbox OUTBOX = Outbox.create();

    static final class OutOfStock extends Exception {
        final long orderId;

        OutOfStock(long orderId, String sku) {
            super("not enough " + sku + " in stock");
            this.orderId = orderId;
        }
    }

    /** The order, the schedule of its cancel and the stock it takes, in one transaction. */
    static long placeOrder(Connection db, String customer, String sku, int quantity, Duration timeout)
            throws SQLException, OutOfStock {
        try {
            long orderId;
            try (PreparedStatement insert = db.prepareStatement("INSERT INTO orders (customer, sku, quantity,"
                    + " placed_by) VALUES (?, ?, ?, 'OrderOutbox.java') RETURNING id")) {
                insert.setString(1, customer);
                insert.setString(2, sku);
                insert.setInt(3, quantity);
                try (ResultSet id = insert.executeQuery()) {
                    id.next();
                    orderId = id.getLong(1);
                }
            }
            OUTBOX.schedule(db, QUEUE, "order-" + orderId,
                    TaskSpec.create().delay(timeout).payload(Map.of("order_id", orderId)));
            // Checked after the outbox row is written: when it fails, the rollback takes
            // the order and its outbox row away together.
            try (PreparedStatement take = db.prepareStatement(
                    "UPDATE products SET stock = stock - ? WHERE sku = ? AND stock >= ?")) {
                take.setInt(1, quantity);
                take.setString(2, sku);
                take.setInt(3, quantity);
                if (take.executeUpdate() == 0) throw new OutOfStock(orderId, sku);
            }
            db.commit();
            return orderId;
        } catch (Exception e) {
            db.rollback();
            throw e;
        }
    }

    /** The order paid and its cancel cancelled, in one transaction. */
    static void payOrder(Connection db, long orderId) throws SQLException {
        try {
            try (PreparedStatement pay = db.prepareStatement(
                    "UPDATE orders SET status = 'paid' WHERE id = ? AND status = 'unpaid'")) {
                pay.setLong(1, orderId);
                if (pay.executeUpdate() == 0) throw new IllegalStateException("order-" + orderId + " is not unpaid");
            }
            OUTBOX.cancel(db, QUEUE, "order-" + orderId);
            db.commit();
        } catch (Exception e) {
            db.rollback();
            throw e;
        }
    }

    /** postgres://user[:password]@host[:port]/db as a JDBC connection. */
    static Connection connect(String url) throws SQLException {
        URI uri = URI.create(url);
        Properties login = new Properties();
        if (uri.getUserInfo() != null) {
            String[] user = uri.getUserInfo().split(":", 2);
            login.setProperty("user", user[0]);
            if (user.length == 2) login.setProperty("password", user[1]);
        }
        int port = uri.getPort() == -1 ? 5432 : uri.getPort();
        return DriverManager.getConnection("jdbc:postgresql://" + uri.getHost() + ":" + port + uri.getPath(), login);
    }

    public static void main(String[] args) throws Exception {
        String timeoutText = System.getenv().getOrDefault("ORDER_TIMEOUT", "30m");
        Duration timeout = Duration.parse("PT" + timeoutText.toUpperCase(Locale.ROOT)); // 30m, 3s, 1h
        try (Connection db = connect(System.getenv("SHOP_DATABASE_URL"))) {
            db.setAutoCommit(false);
            long dan = placeOrder(db, "dan", "tea", 3, timeout);
            System.out.printf("[OrderOutbox.java] order-%d (dan, 3 x tea) placed; its cancel in %s committed with it%n",
                    dan, timeoutText);
            long eve = placeOrder(db, "eve", "tea", 1, timeout);
            payOrder(db, eve);
            System.out.printf("[OrderOutbox.java] order-%d (eve, 1 x tea) placed, then paid; its cancel cancelled in the"
                    + " payment's transaction%n", eve);
            try {
                placeOrder(db, "fay", "kettle", 2, timeout);
            } catch (OutOfStock refused) {
                System.out.printf("[OrderOutbox.java] order-%d (fay, 2 x kettle) rolled back, its outbox row with it:"
                        + " %s%n", refused.orderId, refused.getMessage());
            }
        }
    }
}
