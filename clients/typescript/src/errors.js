// Typed errors: one class per error code of the API (API.md, "Conventions").
// The server's body is {"error": {"code", "message", "field"?}}; errorFromResponse
// turns a status and that body into the matching class, so callers branch with
// `instanceof` instead of comparing strings.

export class PunctualError extends Error {
  constructor(message, { code = "internal", status = 0, field = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.field = field;
  }
}

export class NotFoundError extends PunctualError {}
export class ConflictError extends PunctualError {}
export class InvalidArgumentError extends PunctualError {}
export class UnauthorizedError extends PunctualError {}
export class ForbiddenError extends PunctualError {}
/** 503 from the server, or no server answering at all (connection error, timeout). */
export class UnavailableError extends PunctualError {}

const BY_CODE = {
  not_found: NotFoundError,
  conflict: ConflictError,
  invalid_argument: InvalidArgumentError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  unavailable: UnavailableError,
};

const BY_STATUS = {
  400: "invalid_argument",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  503: "unavailable",
};

/**
 * The error for a non-2xx answer. `body` is the parsed JSON body (or anything else
 * when the server did not send the API's error shape: then the status decides).
 */
export function errorFromResponse(status, body) {
  const e = body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : {};
  const code = typeof e.code === "string" ? e.code : BY_STATUS[status] ?? "internal";
  const message = typeof e.message === "string" ? e.message : `HTTP ${status}`;
  const Class = BY_CODE[code] ?? PunctualError;
  return new Class(message, { code, status, field: typeof e.field === "string" ? e.field : null });
}
