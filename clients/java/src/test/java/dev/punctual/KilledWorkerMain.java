package dev.punctual;

import java.time.Duration;

/** Scenario 6's child JVM: a worker whose handler announces the task and then hangs until killed. */
public final class KilledWorkerMain {
    public static void main(String[] args) throws Exception {
        PunctualClient client = PunctualClient.builder().server(args[0]).build();
        PunctualWorker.builder().client(client).leaseFor(Duration.ofSeconds(2)).pollWait(Duration.ofSeconds(5))
                .handle(args[1], d -> {
                    System.out.println("HANDLING " + d.key() + " " + d.attempt());
                    System.out.flush();
                    new java.util.concurrent.CountDownLatch(1).await();
                    return Outcome.done();
                }, 1)
                .build().start();
        new java.util.concurrent.CountDownLatch(1).await();
    }
}
