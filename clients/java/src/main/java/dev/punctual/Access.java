package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * What the client's token may do ({@link PunctualClient#access}): its
 * {@code permissions} ({@code read}, {@code schedule}, {@code work}, {@code admin}) on
 * the queues matching {@code queues} (name patterns such as {@code order.*}; {@code *}
 * is every queue), and the {@code name} the server's logs call it by.
 */
public record Access(String name, List<String> permissions, List<String> queues) {
    static Access of(JsonNode a) {
        return new Access(a.path("name").asText(), Json.texts(a, "permissions"), Json.texts(a, "queues"));
    }
}
