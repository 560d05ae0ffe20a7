import https from "node:https";
import type { TLSSocket } from "node:tls";

import type { LabNode } from "../index";

/** Test helpers: calls to the lab node's Proxmox VE API (SSH commands: lab/test-helpers.ts). */

export type ApiResponse = {
  status: number;
  statusMessage: string;
  contentType: string;
  body: string;
  json: { data?: unknown; message?: string; errors?: Record<string, string> } | null;
  /** SHA-256 fingerprint of the certificate the server presented (`AB:CD:…`). */
  peerSha256: string;
  ms: number;
};

export function tokenAuth(token: { id: string; secret: string }): string {
  return `PVEAPIToken=${token.id}=${token.secret}`;
}

export function apiGet(
  lab: LabNode,
  apiPath: string,
  authorization: string | null,
  options: { timeoutMs?: number } = {},
): Promise<ApiResponse> {
  return apiRequest(lab, "GET", apiPath, authorization, options);
}

/** A POST with form-encoded parameters, as Proxmox's own clients send them. */
export function apiPost(
  lab: LabNode,
  apiPath: string,
  authorization: string | null,
  params: Record<string, string>,
  options: { timeoutMs?: number } = {},
): Promise<ApiResponse> {
  return apiRequest(lab, "POST", apiPath, authorization, {
    ...options,
    body: new URLSearchParams(params).toString(),
  });
}

/** A PUT with form-encoded parameters. */
export function apiPut(
  lab: LabNode,
  apiPath: string,
  authorization: string | null,
  params: Record<string, string>,
  options: { timeoutMs?: number } = {},
): Promise<ApiResponse> {
  return apiRequest(lab, "PUT", apiPath, authorization, {
    ...options,
    body: new URLSearchParams(params).toString(),
  });
}

function apiRequest(
  lab: LabNode,
  method: string,
  apiPath: string,
  authorization: string | null,
  options: { timeoutMs?: number; body?: string } = {},
): Promise<ApiResponse> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${lab.api.url}/api2/json${apiPath}`,
      {
        method,
        rejectUnauthorized: false,
        headers: {
          ...(authorization === null ? {} : { Authorization: authorization }),
          ...(options.body === undefined
            ? {}
            : { "Content-Type": "application/x-www-form-urlencoded" }),
        },
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const peerSha256 = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => {
          let json: ApiResponse["json"] = null;
          try {
            json = JSON.parse(body) as ApiResponse["json"];
          } catch {
            json = null;
          }
          resolve({
            status: res.statusCode ?? 0,
            statusMessage: res.statusMessage ?? "",
            contentType: String(res.headers["content-type"] ?? ""),
            body,
            json,
            peerSha256,
            ms: Date.now() - started,
          });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(options.body);
  });
}
