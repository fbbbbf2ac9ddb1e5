-- The shop's own tables, in the same database as punctual's outbox (run.sh creates both).
CREATE TABLE products (
    sku   text PRIMARY KEY,
    stock integer NOT NULL
);
INSERT INTO products (sku, stock) VALUES ('tea', 100), ('kettle', 1);

CREATE TABLE orders (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer  text NOT NULL,
    sku       text NOT NULL REFERENCES products,
    quantity  integer NOT NULL,
    status    text NOT NULL DEFAULT 'unpaid' CHECK (status IN ('unpaid', 'paid', 'cancelled')),
    placed_by text NOT NULL
);

-- The webhook deliveries the shop acted on: the same delivery_id twice is acted on once.
CREATE TABLE deliveries (
    delivery_id text PRIMARY KEY,
    order_id    bigint NOT NULL,
    outcome     text
);
