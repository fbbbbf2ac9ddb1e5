package dev.punctual;

/** The server answered `unauthorized`. */
public class UnauthorizedException extends PunctualException {
    public UnauthorizedException(int status, String message, String field) {
        super(status, "unauthorized", message, field);
    }
}
