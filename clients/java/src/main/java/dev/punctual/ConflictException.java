package dev.punctual;

/** The server answered `conflict`. */
public class ConflictException extends PunctualException {
    public ConflictException(int status, String message, String field) {
        super(status, "conflict", message, field);
    }
}
