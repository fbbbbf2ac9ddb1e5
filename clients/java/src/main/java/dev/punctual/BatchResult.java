package dev.punctual;

/** One item of a batch schedule: {@code outcome} set, or {@code error} when refused. */
public record BatchResult(String key, String outcome, PunctualException error) {
    public boolean ok() { return error == null; }
}
