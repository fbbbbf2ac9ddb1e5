package dev.punctual;

/** The server answered `not_found`. */
public class NotFoundException extends PunctualException {
    public NotFoundException(int status, String message, String field) {
        super(status, "not_found", message, field);
    }
}
