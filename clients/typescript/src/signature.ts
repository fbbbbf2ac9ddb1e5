// Webhook signature check, as docs/webhooks.md "Verifying the signature" specifies:
// `Punctual-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, with
// one v1 per secret while the server rotates its secret (the new one first) and other
// fields ignored. A header passes when any v1 matches any of the receiver's secrets
// (its current and, during its own rotation, its previous one), each pair compared in
// constant time, and its timestamp is within the tolerance of now, either way.

import { createHmac, timingSafeEqual } from "node:crypto";

/** A webhook secret, as text (UTF-8) or bytes. */
export type SignatureSecret = string | Uint8Array;

interface SignatureOptions {
  /** The raw request bytes or string, before JSON parsing. */
  body: string | Uint8Array;
  /** The Punctual-Signature header. */
  header: string | null | undefined;
  /** Timestamps further than this from now are refused. Default 300. */
  toleranceSec?: number;
  /** Epoch milliseconds or a Date; default: now. */
  now?: number | Date;
}

/** The secret to check with: `secret`, or `secrets` (e.g. `[current, previous]` during a rotation). */
export type VerifySignatureOptions = SignatureOptions &
  ({ secret: SignatureSecret; secrets?: undefined } | { secrets: readonly SignatureSecret[]; secret?: undefined });

/** True when `header` signs `body` with `secret` (or one of `secrets`), at a time within `toleranceSec` of `now`. */
export function verifySignature(options: VerifySignatureOptions): boolean {
  const { body, header, toleranceSec = 300, now = Date.now() } = options;
  // Plain JavaScript callers can pass anything: a missing secret never verifies.
  const secrets = (options.secrets ?? [options.secret]).filter((s) => s !== undefined && s !== null);
  if (typeof header !== "string" || secrets.length === 0) return false;
  let t: string | null = null;
  const sent: Buffer[] = [];
  for (const part of header.split(",")) {
    const i = part.indexOf("=");
    if (i < 0) continue;
    const name = part.slice(0, i).trim();
    const value = part.slice(i + 1).trim();
    if (name === "t") t = value;
    else if (name === "v1") sent.push(Buffer.from(value, "ascii"));
  }
  if (t === null || !/^\d+$/.test(t) || sent.length === 0) return false;
  const nowSec = (now instanceof Date ? now.getTime() : now) / 1000;
  if (Math.abs(nowSec - Number(t)) > toleranceSec) return false;
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  let ok = false;
  for (const secret of secrets) {
    const expected = Buffer.from(createHmac("sha256", secret).update(`${t}.`).update(raw).digest("hex"), "ascii");
    for (const got of sent) {
      // timingSafeEqual needs equal lengths; a length mismatch says nothing about the secret.
      if (got.length === expected.length && timingSafeEqual(got, expected)) ok = true;
    }
  }
  return ok;
}
