// punctual-client: the client, the pull worker, the webhook verifier and the outbox helpers.
export { Client, durationMs } from "./client.js";
export { outbox, Outbox } from "./outbox.js";
export type { OutboxConnection, OutboxDialect, OutboxMysqlConnection, OutboxOptions, OutboxPostgresConnection } from "./outbox.js";
export { Worker, done, retry, reschedule, fail, jsonLogger, quietLogger } from "./worker.js";
export type { Handler, HandlerResult, Logger, LogLevel, TaskContext, WorkerOptions } from "./worker.js";
export { verifySignature } from "./signature.js";
export type { VerifySignatureOptions, SignatureSecret } from "./signature.js";
export {
  PunctualError,
  NotFoundError,
  ConflictError,
  InvalidArgumentError,
  UnauthorizedError,
  ForbiddenError,
  UnavailableError,
  errorFromResponse,
} from "./errors.js";
export type { PunctualErrorOptions } from "./errors.js";
export type * from "./types.js";
