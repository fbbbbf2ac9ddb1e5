package dev.punctual;

/** Where a task is in its life (docs/state-machine.md): waiting for its due time, held by a worker, or given up on. */
public enum TaskState {
    SCHEDULED, LEASED, DEAD;

    /** The name the API uses: {@code scheduled}, {@code leased} or {@code dead}. */
    public String wire() { return Json.wire(this); }
}
