package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.OptionalInt;

/**
 * A queue's stored settings (API.md, "Queue settings"), as {@link PunctualClient#settings},
 * the changes and {@link PunctualClient#pause}/{@link PunctualClient#resume} answer them.
 * {@code action} is the push action as given (the config file's keys; null: pull
 * workers); {@code rate} and {@code groupRate} are {@code "COUNT/DURATION"} (null: no
 * limit); {@code groupConcurrency} is empty without a limit. {@code version} is what the
 * changes take as {@code ifVersion}. {@link #json()} is the object as the server wrote it.
 */
public record QueueSettings(String queue, Source source, Defaults defaults, JsonNode action, int concurrency,
        String rate, int shards, boolean targets, OptionalInt groupConcurrency, String groupRate, boolean paused,
        long version, Instant updatedAt, JsonNode json) {

    /** What the queue's tasks get when their schedule leaves it out; {@code repeat} null: none. */
    public record Defaults(int maxAttempts, Backoff backoff, Repeat repeat) {}

    static QueueSettings of(JsonNode s) {
        JsonNode d = s.path("defaults");
        return new QueueSettings(Json.text(s, "queue"), Json.enumOf(Source.class, s, "source"),
                new Defaults(d.path("max_attempts").asInt(), d.hasNonNull("backoff") ? Backoff.of(d.get("backoff")) : null,
                        Repeat.of(d.get("repeat"))),
                Json.node(s, "action"), s.path("concurrency").asInt(), Json.text(s, "rate"), s.path("shards").asInt(1),
                s.path("targets").asBoolean(), Json.optionalInt(s, "group_concurrency"), Json.text(s, "group_rate"),
                s.path("paused").asBoolean(), s.path("version").asLong(), Json.instant(s, "updated_at"), s);
    }
}
