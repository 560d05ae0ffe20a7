import crypto from "node:crypto";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import type { z } from "zod";
import {
  ProxmoxAuthError,
  ProxmoxCertificateMismatchError,
  ProxmoxPermissionError,
  ProxmoxUnavailableError,
} from "./errors";
import { ZEnvelope } from "./schemas";

/**
 * One TLS client context for every connection: the pin is checked on the certificate itself,
 * so nothing differs between them, and Node's default builds a context (the CA store included)
 * per connection — part of the quarter of the worker's CPU that TLS took when a fleet of 1000
 * went down at once (bench:power --targets).
 */
let sharedContext: tls.SecureContext | null = null;
function clientContext(): tls.SecureContext {
  sharedContext ??= tls.createSecureContext();
  return sharedContext;
}

/**
 * One request to a Proxmox API (VE or Backup Server) on its own TLS connection, with the
 * certificate checked against the pin before a single byte of the request (and so the token)
 * is written, and one hard deadline over the whole exchange.
 */

/** An API's base URL from its address (an IPv6 one in brackets) and port. */
export function apiBaseUrl(address: string, port: number): string {
  return `https://${address.includes(":") ? `[${address}]` : address}:${port}`;
}

export type PinnedEndpoint = {
  /** e.g. `https://10.0.0.5:8006` */
  baseUrl: string;
  /** SHA-256 of the DER certificate, `AB:CD:…` (openssl/Proxmox style); case and colons ignored. */
  certSha256: string;
  timeoutMs?: number;
};

export type PinnedRequest = {
  method: "GET" | "POST" | "PUT";
  /** Below `/api2/json`, e.g. `/nodes/pve1/status`. */
  path: string;
  /** Left out for a request that only asks whether anything answers. */
  authorization?: string;
  /** Sent form-encoded, as Proxmox's own clients send parameters; an array as a repeated key. */
  form?: Record<string, string | readonly string[]>;
};

/** A SHA-256 fingerprint as bare upper-case hex: `ab:cd…` and `ABCD…` compare equal. */
export function normalizeFingerprint(value: string): string {
  return value.replace(/[^0-9a-f]/gi, "").toUpperCase();
}

function formatFingerprint(der: Buffer): string {
  const hex = crypto.createHash("sha256").update(der).digest("hex").toUpperCase();
  return hex.match(/../g)!.join(":");
}

export function pinnedHttpsRequest(
  endpoint: PinnedEndpoint,
  request: PinnedRequest,
): Promise<{ status: number; body: string }> {
  const url = new URL(endpoint.baseUrl);
  const timeoutMs = endpoint.timeoutMs ?? 15_000;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || 8006);
  const where = url.origin;
  const { method, path } = request;
  const body = request.form
    ? new URLSearchParams(
        Object.entries(request.form).flatMap(([key, value]) =>
          (typeof value === "string" ? [value] : value).map((v) => [key, v]),
        ),
      ).toString()
    : undefined;
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (error: Error | null, value?: { status: number; body: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(value!);
    };
    const timer = setTimeout(() => {
      socket.destroy();
      done(
        new ProxmoxUnavailableError(
          `${method} ${path} on ${where} timed out after ${timeoutMs} ms`,
        ),
      );
    }, timeoutMs);
    const socket = tls.connect({
      host,
      port,
      servername: net.isIP(host) ? undefined : host,
      rejectUnauthorized: false,
      secureContext: clientContext(),
    });
    // Headers and body go out as separate writes: without this the body waits for an ACK.
    socket.setNoDelay(true);
    socket.once("error", (error) =>
      done(
        new ProxmoxUnavailableError(
          `could not reach the Proxmox API at ${where}: ${error.message}`,
        ),
      ),
    );
    socket.once("secureConnect", () => {
      const cert = socket.getPeerCertificate();
      const offered = cert?.raw ? formatFingerprint(cert.raw) : "none";
      if (normalizeFingerprint(offered) !== normalizeFingerprint(endpoint.certSha256)) {
        socket.destroy();
        return done(new ProxmoxCertificateMismatchError(where, endpoint.certSha256, offered));
      }
      const req = https.request(
        {
          method,
          host,
          port,
          path: `/api2/json${path}`,
          headers: {
            ...(request.authorization === undefined
              ? {}
              : { Authorization: request.authorization }),
            Accept: "application/json",
            ...(body === undefined
              ? {}
              : {
                  "Content-Type": "application/x-www-form-urlencoded",
                  "Content-Length": Buffer.byteLength(body),
                }),
          },
          createConnection: () => socket,
          agent: false,
          // The socket's certificate was just checked against the pin; without this, the
          // request re-verifies it against the CA store and refuses Proxmox's self-signed one.
          rejectUnauthorized: false,
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => done(null, { status: res.statusCode ?? 0, body: text }));
          res.on("error", (error) =>
            done(
              new ProxmoxUnavailableError(
                `${method} ${path} on ${where} broke off: ${error.message}`,
              ),
            ),
          );
        },
      );
      req.on("error", (error) =>
        done(new ProxmoxUnavailableError(`${method} ${path} on ${where} failed: ${error.message}`)),
      );
      req.end(body);
    });
  });
}

/**
 * The answer's `data`, parsed with `schema`; every other outcome is an error that says what
 * happened: 401 (token refused), 403 (permission), anything else "could not get an answer".
 */
export async function pinnedApiCall<S extends z.ZodType>(
  endpoint: PinnedEndpoint,
  request: PinnedRequest,
  schema: S,
  /** e.g. `GET /version on pve1`, for the error messages. */
  what: string,
): Promise<z.infer<S>> {
  const { status, body } = await pinnedHttpsRequest(endpoint, request);
  if (status === 401)
    throw new ProxmoxAuthError(`${what}: the API token was refused (401); check or recreate it`);
  if (status === 403)
    throw new ProxmoxPermissionError(`${what}: permission denied (403): ${apiMessage(body)}`);
  if (status < 200 || status >= 300) {
    throw new ProxmoxUnavailableError(`${what} answered ${status}: ${apiMessage(body)}`, status);
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ProxmoxUnavailableError(`${what} answered with something that is not JSON`);
  }
  const envelope = ZEnvelope.safeParse(json);
  const parsed = envelope.success ? schema.safeParse(envelope.data.data) : undefined;
  if (!parsed?.success)
    throw new ProxmoxUnavailableError(`${what} answered in an unexpected shape`);
  return parsed.data;
}

function apiMessage(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof message === "string" && message.trim()) return message.trim();
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 200) || "no message";
}

/**
 * Whether anything answers HTTP at the endpoint (any status counts, a 401 included, and so
 * does another certificate: something is there). Only no answer at all — refused, cut, silent
 * until the deadline — is `silent`, with why.
 */
export async function probeApi(
  endpoint: PinnedEndpoint,
): Promise<{ answers: true } | { answers: false; why: string }> {
  try {
    await pinnedHttpsRequest(endpoint, { method: "GET", path: "/version" });
    return { answers: true };
  } catch (error) {
    if (error instanceof ProxmoxCertificateMismatchError) return { answers: true };
    return { answers: false, why: error instanceof Error ? error.message : String(error) };
  }
}
