// What the token may do. The page asks GET /v1/access (permissions and queue patterns)
// once per token and shows only the controls that allows: no schedule form or cancel
// button without `schedule` on the queue, no settings, pause, purge or dead-task
// controls without `admin`. The server refuses anything else anyway (403).

import { api } from "./api.js";

// What the token may do ({permissions, queues}); null until asked, after a new token.
let grant = null;

export function knowsGrant() {
  return grant !== null;
}

export function setGrant(loaded) {
  grant = loaded;
}

// A new token: its grant is asked for on the next render.
export function forgetGrant() {
  grant = null;
}

// The token's grant. A server older than GET /v1/access (404) lets every token do
// everything.
export async function loadGrant() {
  try {
    return await api("GET", "/v1/access");
  } catch (err) {
    if (err.status === 404) return { permissions: ["read", "schedule", "work", "admin"], queues: ["*"] };
    throw err;
  }
}

// Whether a queue name pattern matches: `*` is any run of characters, the rest itself.
function patternMatches(pattern, queue) {
  const escaped = pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${escaped.join(".*")}$`).test(queue);
}

// Whether the token holds `permission` on `queue` (no queue: on some queue).
export function may(permission, queue) {
  if (!grant || !grant.permissions.includes(permission)) return false;
  return queue === undefined || grant.queues.some((p) => patternMatches(p, queue));
}
