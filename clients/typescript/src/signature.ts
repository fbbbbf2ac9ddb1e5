// Webhook signature check, as docs/webhooks.md "Verifying the signature" specifies:
// `Punctual-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`,
// compared in constant time, with timestamps older (or newer) than the tolerance refused.

import { createHmac, timingSafeEqual } from "node:crypto";

export interface VerifySignatureOptions {
  /** The raw request bytes or string, before JSON parsing. */
  body: string | Uint8Array;
  /** The Punctual-Signature header. */
  header: string | null | undefined;
  secret: string | Uint8Array;
  /** Timestamps further than this from now are refused. Default 300. */
  toleranceSec?: number;
  /** Epoch milliseconds or a Date; default: now. */
  now?: number | Date;
}

/** True when `header` signs `body` with `secret`, at a time within `toleranceSec` of `now`. */
export function verifySignature({ body, header, secret, toleranceSec = 300, now = Date.now() }: VerifySignatureOptions): boolean {
  if (typeof header !== "string" || secret === undefined || secret === null) return false;
  let t: string | null = null;
  const sent: string[] = [];
  for (const part of header.split(",")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    const name = part.slice(0, i).trim();
    const value = part.slice(i + 1).trim();
    if (name === "t") t = value;
    else if (name === "v1") sent.push(value);
  }
  if (t === null || !/^\d+$/.test(t) || sent.length === 0) return false;
  const nowSec = (now instanceof Date ? now.getTime() : now) / 1000;
  if (Math.abs(nowSec - Number(t)) > toleranceSec) return false;
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  const expected = Buffer.from(createHmac("sha256", secret).update(`${t}.`).update(raw).digest("hex"), "ascii");
  let ok = false;
  for (const s of sent) {
    const got = Buffer.from(s, "ascii");
    // timingSafeEqual needs equal lengths; a length mismatch says nothing about the secret.
    if (got.length === expected.length && timingSafeEqual(got, expected)) ok = true;
  }
  return ok;
}
