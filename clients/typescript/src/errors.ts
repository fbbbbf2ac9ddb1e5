// Typed errors: one class per error code of the API (API.md, "Conventions").
// The server's body is {"error": {"code", "message", "field"?}}; errorFromResponse
// turns a status and that body into the matching class, so callers branch with
// `instanceof` instead of comparing strings.

import { camelCase } from "./wire.js";

export interface PunctualErrorOptions {
  code?: string;
  status?: number;
  field?: string | null;
  cause?: unknown;
}

export class PunctualError extends Error {
  /** The API's error code (not_found, conflict, …; "unavailable" for connection errors, "aborted"). */
  readonly code: string;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The option the server named, camelCase ("delay", "debounce.maxWait"), for invalid_argument. */
  readonly field: string | null;

  constructor(message: string, { code = "internal", status = 0, field = null, cause }: PunctualErrorOptions = {}) {
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

const BY_CODE: Record<string, typeof PunctualError> = {
  not_found: NotFoundError,
  conflict: ConflictError,
  invalid_argument: InvalidArgumentError,
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  unavailable: UnavailableError,
};

const BY_STATUS: Record<number, string> = {
  400: "invalid_argument",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  503: "unavailable",
};

/**
 * The error for a non-2xx answer. `body` is the parsed JSON body (or anything else
 * when the server did not send the API's error shape: then the status decides). The
 * field the server names is re-cased as the options are written (max_wait → maxWait).
 */
export function errorFromResponse(status: number, body: unknown): PunctualError {
  const error = isObject(body) && isObject(body.error) ? body.error : {};
  const code = typeof error.code === "string" ? error.code : (BY_STATUS[status] ?? "internal");
  const message = typeof error.message === "string" ? error.message : `HTTP ${status}`;
  const field = typeof error.field === "string" ? camelCase(error.field) : null;
  const ErrorClass = BY_CODE[code] ?? PunctualError;
  return new ErrorClass(message, { code, status, field });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}
