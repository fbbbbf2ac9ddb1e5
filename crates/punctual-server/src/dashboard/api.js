// Calls to the /v1 API with the token saved in localStorage ("punctual.token") as a
// Bearer header. A refusal is thrown as an ApiError carrying the status and the error
// body's code and field.

export const TOKEN_KEY = "punctual.token";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error && body.error.code;
    this.field = body && body.error && body.error.field;
  }
}

// `extra` adds request headers (`If-Match` of a settings change).
export async function api(method, path, body, extra) {
  const headers = { Accept: "application/json", ...(extra || {}) };
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  if (!resp.ok) throw new ApiError(resp.status, json);
  return json;
}

export function explain(err) {
  if (err.status === 401) return "This server needs a token: type it in the token field above and press Save.";
  if (err.status === 403) return `Forbidden: ${err.message}`;
  return `Error: ${err.message}`;
}
