// punctual-client: the client, the pull worker, the webhook verifier and the outbox helpers.
export { Client, durationMs } from "./client.js";
export { outbox, Outbox } from "./outbox.js";
export { Worker, done, retry, reschedule, fail, jsonLogger, quietLogger } from "./worker.js";
export { verifySignature } from "./signature.js";
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
