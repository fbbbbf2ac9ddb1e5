package dev.punctual;

import static java.util.Map.entry;
import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client against the server's OpenAPI document: every operation the running
 * {@code punctual serve} documents is either a method of {@link PunctualClient} (the
 * table {@link #OFFERED}) or deliberately not offered (the table {@link #NOT_OFFERED},
 * with the reason). Guards against a server that gains an operation the Java client
 * silently lacks, and against a table that names an operation the server no longer has
 * or a method the client no longer has.
 */
class OpenApiCoverageTest {
    /** Each operation ("METHOD path" as the document writes it) and the client methods that call it. */
    static final Map<String, List<String>> OFFERED = Map.ofEntries(
            entry("PUT /v1/queues/{queue}/tasks/{key}", List.of("schedule", "putRaw")),
            entry("POST /v1/queues/{queue}/tasks", List.of("scheduleMany")),
            entry("GET /v1/queues/{queue}/tasks/{key}", List.of("get")),
            entry("GET /v1/queues/{queue}/tasks/{key}/history", List.of("history")),
            entry("DELETE /v1/queues/{queue}/tasks/{key}", List.of("cancel")),
            entry("DELETE /v1/queues/{queue}/tags/{tag}", List.of("cancelByTag")),
            entry("GET /v1/queues/{queue}/tasks", List.of("list", "listPage")),
            entry("DELETE /v1/queues/{queue}/tasks", List.of("purge")),
            entry("GET /v1/queues", List.of("queues")),
            entry("GET /v1/queues/{queue}", List.of("queue")),
            entry("GET /v1/queues/{queue}/groups", List.of("groupsPage")),
            entry("GET /v1/queues/{queue}/settings", List.of("settings")),
            entry("PUT /v1/queues/{queue}/settings", List.of("putSettings")),
            entry("PATCH /v1/queues/{queue}/settings", List.of("patchSettings")),
            entry("DELETE /v1/queues/{queue}/settings", List.of("deleteSettings")),
            entry("POST /v1/queues/{queue}/pause", List.of("pause")),
            entry("POST /v1/queues/{queue}/resume", List.of("resume")),
            entry("GET /v1/queues/{queue}/dead", List.of("dead", "deadPage")),
            entry("POST /v1/queues/{queue}/dead/{key}/retry", List.of("retryDead")),
            entry("POST /v1/queues/{queue}/dead/retry", List.of("retryAllDead", "retryDeadByTag", "retryDeadMany")),
            entry("DELETE /v1/queues/{queue}/dead/{key}", List.of("deleteDead")),
            entry("GET /v1/calendars", List.of("calendars")),
            entry("GET /v1/calendars/{name}", List.of("calendar")),
            entry("PUT /v1/calendars/{name}", List.of("putCalendar")),
            entry("DELETE /v1/calendars/{name}", List.of("deleteCalendar")),
            entry("GET /v1/access", List.of("access")),
            entry("GET /v1/audit", List.of("audit", "auditPage")),
            entry("POST /v1/queues/{queue}/lease", List.of("lease")),
            entry("POST /v1/leases/{lease_id}/ack", List.of("ack")),
            entry("POST /v1/acks", List.of("acks")),
            entry("POST /v1/leases/{lease_id}/extend", List.of("extend")));

    /** Operations the client leaves out on purpose, and why. */
    static final Map<String, String> NOT_OFFERED = Map.of(
            "GET /", "the dashboard page, for a browser",
            "GET /healthz", "a liveness probe for a load balancer or orchestrator, not for an application",
            "GET /readyz", "a readiness probe for a load balancer or orchestrator, not for an application",
            "GET /metrics", "Prometheus text, read by a Prometheus scraper",
            "GET /openapi.json", "the document this test reads, for tools that generate or check clients",
            "GET /v1/queues/{queue}/activity", "the dashboard's feed of recent outcomes and firings per time slot");

    @Test
    void everyOperationIsOfferedOrListedAsNot(@TempDir Path dir) throws Exception {
        Map<String, String> documented = new TreeMap<>(); // "METHOD path" -> operationId
        try (ServerProcess server = new ServerProcess(dir, List.of(), Map.of()).start()) {
            HttpResponse<String> answer = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(server.url() + "/openapi.json")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, answer.statusCode(), answer.body());
            JsonNode paths = Json.MAPPER.readTree(answer.body()).path("paths");
            paths.fields().forEachRemaining(path -> path.getValue().fields().forEachRemaining(op ->
                    documented.put(op.getKey().toUpperCase() + " " + path.getKey(), op.getValue().path("operationId").asText())));
        }
        assertFalse(documented.isEmpty(), "the document lists no operation");

        Set<String> both = new TreeSet<>(OFFERED.keySet());
        both.retainAll(NOT_OFFERED.keySet());
        assertEquals(Set.of(), both, "listed as offered and as not offered");

        Map<String, String> unknown = new TreeMap<>(documented);
        unknown.keySet().removeAll(OFFERED.keySet());
        unknown.keySet().removeAll(NOT_OFFERED.keySet());
        assertEquals(Map.of(), unknown, "operations of the server the Java client neither offers nor lists as not offered "
                + "(add a method and a row of OFFERED, or a row of NOT_OFFERED with the reason)");

        Set<String> gone = new TreeSet<>(OFFERED.keySet());
        gone.addAll(NOT_OFFERED.keySet());
        gone.removeAll(documented.keySet());
        assertEquals(Set.of(), gone, "operations in the tables that the server no longer documents");

        Set<String> methods = Arrays.stream(PunctualClient.class.getDeclaredMethods())
                .filter(m -> Modifier.isPublic(m.getModifiers())).map(Method::getName).collect(Collectors.toSet());
        Set<String> missing = OFFERED.values().stream().flatMap(List::stream).filter(m -> !methods.contains(m))
                .collect(Collectors.toCollection(TreeSet::new));
        assertEquals(Set.of(), missing, "methods named in OFFERED that PunctualClient does not have");
    }
}
