// Compiled by `npm run typecheck` only (never run): a CommonJS module's view of the
// package, through the "require" condition and the declarations of dist/cjs.
import punctual = require("punctual-client");

const client = new punctual.Client({ server: "http://127.0.0.1:7575" });
async function check(): Promise<string> {
  const { task } = await client.schedule("order.cancel", "order-1", { delay: "30m", maxAttempts: 3 });
  const error: punctual.PunctualError = new punctual.NotFoundError("gone", { code: "not_found", status: 404 });
  const handler: punctual.Handler<{ order: number }> = ({ payload }) => (payload.order > 0 ? punctual.done() : punctual.fail("no order"));
  void handler, error;
  return task ? task.dueAt : "kept";
}
void check;
