package dev.punctual.spring;

/** Sends each write to the server at once. */
final class HttpSender implements TaskSender {
    private final PunctualClientAdapter adapter;
    private final PunctualMetrics metrics;

    HttpSender(PunctualClientAdapter adapter, PunctualMetrics metrics) {
        this.adapter = adapter;
        this.metrics = metrics;
    }

    @Override
    public void send(TaskRequest request) {
        adapter.send(request);
        metrics.sent(request.queue(), request.op().tag, "http");
    }
}
