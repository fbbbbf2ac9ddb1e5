package dev.punctual;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** The real `punctual serve` on a free port of 127.0.0.1 with its own data directory; restartable. */
final class ServerProcess implements AutoCloseable {
    final Path dir;
    final int port;
    final List<String> args;
    final Map<String, String> env;
    private Process proc;

    ServerProcess(Path dir, List<String> args, Map<String, String> env) throws IOException {
        this.dir = dir;
        this.port = freePort();
        this.args = args;
        this.env = env;
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
        try (ServerSocket s = new ServerSocket(0)) { return s.getLocalPort(); }
    }

    String url() { return "http://127.0.0.1:" + port; }

    PunctualClient client() { return PunctualClient.builder().server(url()).build(); }

    ServerProcess start() throws Exception {
        List<String> cmd = new ArrayList<>(List.of(binary(), "serve", "--listen", "127.0.0.1:" + port,
                "--data", dir.resolve("data").toString(), "--grace-period", "1s"));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()));
        pb.environment().remove("PUNCTUAL_TOKENS");
        pb.environment().putAll(env);
        proc = pb.start();
        HttpClient http = HttpClient.newHttpClient();
        waitUntil(Duration.ofSeconds(15), "/readyz", () -> {
            if (!proc.isAlive()) throw new IllegalStateException("punctual exited: " + log());
            try {
                return http.send(HttpRequest.newBuilder(URI.create(url() + "/readyz")).timeout(Duration.ofSeconds(1)).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        return this;
    }

    String log() {
        try { return Files.readString(dir.resolve("server.log")); } catch (IOException e) { return e.toString(); }
    }

    void stop() throws InterruptedException {
        if (proc == null) return;
        proc.destroy(); // SIGTERM
        if (!proc.waitFor(10, TimeUnit.SECONDS)) { proc.destroyForcibly(); proc.waitFor(); }
        proc = null;
    }

    @Override
    public void close() throws InterruptedException { stop(); }

    /** Polls {@code cond} until true; fails after {@code limit}. */
    static void waitUntil(Duration limit, String what, Supplier<Boolean> cond) {
        long deadline = System.nanoTime() + limit.toNanos();
        while (true) {
            if (Boolean.TRUE.equals(cond.get())) return;
            if (System.nanoTime() > deadline) throw new AssertionError("timed out after " + limit + " waiting for " + what);
            try { Thread.sleep(25); } catch (InterruptedException e) { throw new AssertionError(e); }
        }
    }
}
