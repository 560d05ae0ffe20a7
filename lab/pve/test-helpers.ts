import https from "node:https";
import type { TLSSocket } from "node:tls";

import { connectSsh, type ExecResult } from "@/lib/ssh/client";

import type { LabNode } from "../index";

/** Test helpers: commands over the lab's real SSH (as the console runs them) and API calls. */

export async function ssh(lab: LabNode, command: string): Promise<ExecResult> {
  const session = await connectSsh({
    host: lab.ssh.host,
    port: lab.ssh.port,
    username: lab.ssh.username,
    auth: { kind: "password", password: lab.ssh.password },
    pinnedHostKey: null,
    readyTimeoutMs: 5000,
  });
  try {
    return await session.exec(command, { timeoutMs: 30_000 });
  } finally {
    session.close();
  }
}

/** Like ssh() but throws unless the command exits 0; returns stdout. */
export async function sshOk(lab: LabNode, command: string): Promise<string> {
  const result = await ssh(lab, command);
  if (result.code !== 0) {
    throw new Error(`${command} → ${String(result.code)}: ${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

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
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = https.get(
      `${lab.api.url}/api2/json${apiPath}`,
      {
        rejectUnauthorized: false,
        headers: authorization === null ? {} : { Authorization: authorization },
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
  });
}
