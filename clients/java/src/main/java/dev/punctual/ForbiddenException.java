package dev.punctual;

/** The server answered `forbidden`. */
public class ForbiddenException extends PunctualException {
    public ForbiddenException(int status, String message, String field) {
        super(status, "forbidden", message, field);
    }
}
