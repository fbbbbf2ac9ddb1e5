// What the browser tests share: the real `punctual serve` on a free port with the
// test's config and token, in a temporary directory of its own, and headless Chromium
// (a persistent profile there) with one page. The page accepts every confirm dialog,
// records every request that leaves the server (there must be none: no CDN, no
// internet) and every uncaught error, and waits PATIENCE at most for anything.
//
// Needs: the binary (`cargo build -p punctual-cli`; PUNCTUAL_BIN overrides the path),
// Debian's chromium at /usr/bin/chromium (CHROMIUM overrides), `npm ci` here.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, mkdirSync, existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.PUNCTUAL_BIN || join(root, "target/debug/punctual");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
export const shots = join(root, "docs/screenshots");
export const PATIENCE = 20_000;

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

// The server (its config file's text, its --token, its environment) and a browser page
// on it: {base, page, foreign, pageErrors, api, waitFor, close}. `api` calls as the
// token; `waitFor` polls `check` until it holds, the server's log in its failure.
export async function launch({ config, token, env }) {
  assert.ok(existsSync(bin), `no punctual binary at ${bin}: run cargo build -p punctual-cli first`);
  assert.ok(existsSync(browserPath), `no Chromium at ${browserPath}: apt-get install -y chromium`);
  mkdirSync(shots, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "punctual-browser-"));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const configPath = join(work, "punctual.toml");
  writeFileSync(configPath, config);
  let serverLog = "";
  const server = spawn(bin, ["serve", "--config", configPath, "--listen", `127.0.0.1:${port}`, "--data", join(work, "data"), "--token", token],
    { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH, ...env } });
  server.stdout.on("data", (d) => { serverLog += d; });
  server.stderr.on("data", (d) => { serverLog += d; });
  const on = { base, foreign: [], pageErrors: [], context: null };

  on.api = async (method, path, body) => {
    const resp = await fetch(base + path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await resp.text();
    return { status: resp.status, json: text ? JSON.parse(text) : null };
  };
  on.waitFor = async (what, check) => {
    const deadline = Date.now() + PATIENCE;
    for (;;) {
      if (await check()) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n--- server log ---\n${serverLog}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  on.close = async () => {
    if (on.context) await on.context.close();
    server.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  };

  await on.waitFor("the server's /healthz", async () => {
    try { return (await fetch(`${base}/healthz`)).ok; } catch { return false; }
  });
  on.context = await chromium.launchPersistentContext(join(work, "chromium-profile"), {
    executablePath: browserPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 860 },
  });
  const page = on.context.pages()[0] || await on.context.newPage();
  page.on("dialog", (dialog) => dialog.accept());
  page.on("request", (request) => { if (!request.url().startsWith(base)) on.foreign.push(request.url()); });
  page.on("pageerror", (error) => on.pageErrors.push(String(error)));
  page.setDefaultTimeout(PATIENCE);
  on.page = page;
  return on;
}
