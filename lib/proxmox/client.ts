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
import { configIsTemplate } from "./is-template";
import {
  ZEnvelope,
  ZNodeList,
  ZNodeStatus,
  ZPermissions,
  ZStorageStatusList,
  ZVersion,
  ZVmConfig,
  ZVmList,
} from "./schemas";

export type ProxmoxTarget = {
  /** e.g. `https://10.0.0.5:8006` */
  baseUrl: string;
  node: string;
  /** `user@realm!tokenid` */
  tokenId: string;
  tokenSecret: string;
  /** SHA-256 of the DER certificate, `AB:CD:…` (openssl/Proxmox style); case and colons ignored. */
  certSha256: string;
  timeoutMs?: number;
};

/** Every request the client can send, as `METHOD path-template`; a test checks them against Proxmox's schema. */
export const PROXMOX_REQUESTS = [
  "GET /version",
  "GET /nodes/{node}/qemu",
  "GET /nodes/{node}/qemu/{vmid}/config",
  "GET /access/permissions",
  "GET /nodes",
  "GET /nodes/{node}/status",
  "GET /nodes/{node}/storage",
] as const;

function normalizeFingerprint(value: string): string {
  return value.replace(/[^0-9a-f]/gi, "").toUpperCase();
}

function formatFingerprint(der: Buffer): string {
  const hex = crypto.createHash("sha256").update(der).digest("hex").toUpperCase();
  return hex.match(/../g)!.join(":");
}

export class ProxmoxClient {
  private readonly url: URL;

  constructor(private readonly target: ProxmoxTarget) {
    this.url = new URL(target.baseUrl);
  }

  /** `GET /version`. */
  version() {
    return this.get("/version", ZVersion);
  }

  /** `GET /nodes`: the cluster's nodes by the names Proxmox uses in every `/nodes/{node}` path. */
  nodes() {
    return this.get("/nodes", ZNodeList);
  }

  /** `GET /nodes/{node}/status`: CPU, memory, kernel, version (needs `Sys.Audit`). */
  nodeStatus() {
    return this.get(`/nodes/${encodeURIComponent(this.target.node)}/status`, ZNodeStatus);
  }

  /**
   * `GET /nodes/{node}/storage?content=images`: the enabled storages that accept VM disk images
   * (and that the token may see).
   */
  imageStorages() {
    return this.get(
      `/nodes/${encodeURIComponent(this.target.node)}/storage?content=images`,
      ZStorageStatusList,
    );
  }

  /** VMs the token may see (`VM.Audit`); others are silently left out by Proxmox. */
  listVms() {
    return this.get(`/nodes/${encodeURIComponent(this.target.node)}/qemu`, ZVmList);
  }

  vmConfig(vmid: number) {
    return this.get(
      `/nodes/${encodeURIComponent(this.target.node)}/qemu/${vmid}/config`,
      ZVmConfig,
    );
  }

  permissions(path?: string) {
    return this.get(
      path ? `/access/permissions?path=${encodeURIComponent(path)}` : "/access/permissions",
      ZPermissions,
    );
  }

  /**
   * Whether `vmid` is a usable template. Only a successful VM list proves absence (→ false);
   * the config of a missing VM is HTTP 500, the same as a node in trouble, so it cannot.
   * Any failure throws: the caller's retry path keeps an existing template alive.
   */
  async isTemplate(vmid: number): Promise<boolean> {
    const list = await this.listVms();
    if (!list.some((vm) => vm.vmid === vmid)) return false;
    return configIsTemplate(await this.vmConfig(vmid));
  }

  private async get<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
    const { status, body } = await this.request("GET", path);
    const what = `GET ${path} on ${this.target.node}`;
    if (status === 401)
      throw new ProxmoxAuthError(`${what}: the API token was refused (401); check or recreate it`);
    if (status === 403)
      throw new ProxmoxPermissionError(`${what}: permission denied (403): ${proxmoxMessage(body)}`);
    if (status < 200 || status >= 300) {
      throw new ProxmoxUnavailableError(
        `${what} answered ${status}: ${proxmoxMessage(body)}`,
        status,
      );
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

  /**
   * One request on its own TLS connection. The certificate is checked against the pin before
   * a single byte of the request (and so the token) is written.
   */
  private request(method: string, path: string): Promise<{ status: number; body: string }> {
    const timeoutMs = this.target.timeoutMs ?? 15_000;
    const host = this.url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(this.url.port || 8006);
    const where = `${this.url.origin}`;
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
      });
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
        if (normalizeFingerprint(offered) !== normalizeFingerprint(this.target.certSha256)) {
          socket.destroy();
          return done(new ProxmoxCertificateMismatchError(where, this.target.certSha256, offered));
        }
        const req = https.request(
          {
            method,
            host,
            port,
            path: `/api2/json${path}`,
            headers: {
              Authorization: `PVEAPIToken=${this.target.tokenId}=${this.target.tokenSecret}`,
              Accept: "application/json",
            },
            createConnection: () => socket,
            agent: false,
            // The socket's certificate was just checked against the pin; without this, the
            // request re-verifies it against the CA store and refuses Proxmox's self-signed one.
            rejectUnauthorized: false,
          },
          (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => (body += chunk));
            res.on("end", () => done(null, { status: res.statusCode ?? 0, body }));
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
          done(
            new ProxmoxUnavailableError(`${method} ${path} on ${where} failed: ${error.message}`),
          ),
        );
        req.end();
      });
    });
  }
}

function proxmoxMessage(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof message === "string" && message.trim()) return message.trim();
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 200) || "no message";
}
