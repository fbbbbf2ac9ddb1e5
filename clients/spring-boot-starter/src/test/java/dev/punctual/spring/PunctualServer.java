package dev.punctual.spring;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * The real {@code punctual serve} on a free port of 127.0.0.1 with a data directory of
 * its own, as the Java client's tests start it: {@code PUNCTUAL_BIN}, else the
 * repository's target/debug/punctual. {@link #shared()} is one server for the test
 * classes that need nothing special, stopped when the JVM exits.
 */
final class PunctualServer implements AutoCloseable {
    private static PunctualServer shared;

    final Path dir;
    final int port;
    private final Process process;

    private PunctualServer(String config) throws IOException {
        dir = Files.createTempDirectory("punctual-spring");
        port = freePort();
        List<String> command = new ArrayList<>(List.of(binary(), "serve", "--listen", "127.0.0.1:" + port,
                "--data", dir.resolve("data").toString(), "--grace-period", "1s"));
        if (config != null) {
            Path file = dir.resolve("punctual.toml");
            Files.writeString(file, config);
            command.addAll(List.of("--config", file.toString()));
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()));
        builder.environment().remove("PUNCTUAL_TOKENS");
        builder.environment().remove("PUNCTUAL_CONFIG");
        process = builder.start();
        HttpClient http = HttpClient.newHttpClient();
        waitUntil(Duration.ofSeconds(15), "punctual's /readyz on port " + port, () -> {
            if (!process.isAlive()) throw new IllegalStateException("punctual exited: " + log());
            try {
                return http.send(HttpRequest.newBuilder(URI.create(url() + "/readyz")).timeout(Duration.ofSeconds(1)).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** A server of its own, with {@code config} as its config file (null: none). */
    static PunctualServer start(String config) {
        try {
            return new PunctualServer(config);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The server the test classes share. */
    static synchronized PunctualServer shared() {
        if (shared == null) {
            shared = start(null);
            PunctualServer server = shared;
            Runtime.getRuntime().addShutdownHook(new Thread(server::close));
        }
        return shared;
    }

    static String binary() {
        String bin = System.getenv("PUNCTUAL_BIN");
        if (bin == null || bin.isEmpty()) {
            bin = Path.of(System.getProperty("user.dir")).resolve("../../target/debug/punctual").normalize().toString();
        }
        if (!new File(bin).canExecute()) throw new IllegalStateException("no punctual binary at " + bin + ": build it or set PUNCTUAL_BIN");
        return bin;
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    String url() { return "http://127.0.0.1:" + port; }

    String log() {
        try {
            return Files.readString(dir.resolve("server.log"));
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** Stops the server and removes its directory. */
    @Override
    public void close() {
        process.destroy(); // SIGTERM
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }

    /** Polls {@code condition} until it holds; fails after {@code limit}. */
    static void waitUntil(Duration limit, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out after " + limit + " waiting for " + what);
            try {
                Thread.sleep(20); // the poll's interval, not a wait for an event
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }
}
