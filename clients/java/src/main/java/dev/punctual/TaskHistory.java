package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What happened to a task ({@link PunctualClient#history}), also once it is gone: its
 * {@code events}, oldest first (at most the latest 100), kept for {@code retention} after
 * the latest (the queue's {@code history_retention}).
 */
public record TaskHistory(String queue, String key, Duration retention, List<HistoryEvent> events) {
    static TaskHistory of(JsonNode h) {
        List<HistoryEvent> events = new ArrayList<>();
        h.path("events").forEach(e -> events.add(HistoryEvent.of(e)));
        return new TaskHistory(Json.text(h, "queue"), Json.text(h, "key"), Json.millis(h, "retention_ms"),
                List.copyOf(events));
    }
}
