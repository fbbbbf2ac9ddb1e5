// Test helpers: the real `punctual serve` on a free port with a temporary data
// directory (from PUNCTUAL_BIN, else target/debug/punctual of this repository), a
// condition poller with a time limit, and a logger that records what the worker says.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const BIN = process.env.PUNCTUAL_BIN ?? resolve(here, "../../../target/debug/punctual");

export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** Poll `predicate` (sync or async) every `everyMs` until it is truthy; throws after `timeoutMs`. */
export async function waitUntil(predicate, timeoutMs = 10_000, { everyMs = 25, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await predicate();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A logger for the worker that keeps every line, for tests to wait on. */
export function recordingLogger() {
  const lines = [];
  const at = (level) => (msg, fields = {}) => lines.push({ level, msg, ...fields });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), count: (msg) => lines.filter((l) => l.msg === msg).length };
}

/**
 * Start `punctual serve`. Options: args (extra flags), env, config (TOML text written
 * to a file in the data dir's parent), port and dataDir (to start again on the same ones).
 */
export async function startServer({ args = [], env = {}, config, port, dataDir } = {}) {
  const root = dataDir ? dirname(dataDir) : mkdtempSync(join(tmpdir(), "punctual-ts-"));
  dataDir ??= join(root, "data");
  port ??= await freePort();
  const flags = ["serve", "--listen", `127.0.0.1:${port}`, "--data", dataDir, "--grace-period", "1s", ...args];
  if (config !== undefined) {
    const file = join(root, "punctual.toml");
    writeFileSync(file, config);
    flags.push("--config", file);
  }
  const proc = spawn(BIN, flags, { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const exited = new Promise((r) => proc.once("exit", (code, signal) => r({ code, signal })));
  let gone = null;
  exited.then((e) => (gone = e));
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    async () => {
      if (gone) throw new Error(`punctual exited (${JSON.stringify(gone)}): ${stderr}`);
      const r = await fetch(`${url}/readyz`);
      return r.ok;
    },
    15_000,
    { what: `${url}/readyz` },
  ).catch((err) => {
    proc.kill("SIGKILL");
    throw err;
  });
  return {
    url,
    port,
    dataDir,
    root,
    stderr: () => stderr,
    /** SIGTERM, and wait for the exit (SIGKILL after 10 s). */
    async stop() {
      if (gone) return gone;
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      const e = await exited;
      clearTimeout(t);
      return e;
    },
    /** Stop, and remove the temporary directory. */
    async close() {
      await this.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

let n = 0;
/** A queue name unique to this test run. */
export const uniqueQueue = (prefix) => `${prefix}.${process.pid}.${++n}.${Date.now().toString(36)}`;
