import https from "node:https";

import type { LabClusterNode } from "./start";

/** Test helper: one request to a lab cluster node's API (form-encoded body, as Proxmox's clients). */
export type ClusterAnswer = { status: number; data: unknown; message: string | undefined };

export function clusterCall(
  node: LabClusterNode,
  method: "GET" | "POST" | "PUT",
  apiPath: string,
  token: { id: string; secret: string },
  params: Record<string, string | string[]> = {},
): Promise<ClusterAnswer> {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    for (const v of Array.isArray(value) ? value : [value]) form.append(key, v);
  }
  const body = method === "GET" ? undefined : form.toString();
  const query = method === "GET" && form.size > 0 ? `?${form}` : "";
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${node.api.url}/api2/json${apiPath}${query}`,
      {
        method,
        rejectUnauthorized: false,
        // A fresh connection per call: a node that lost power then refuses it (ECONNREFUSED).
        agent: false,
        timeout: 10_000,
        headers: {
          Authorization: `PVEAPIToken=${token.id}=${token.secret}`,
          ...(body === undefined ? {} : { "Content-Type": "application/x-www-form-urlencoded" }),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          const json = JSON.parse(text) as { data: unknown; message?: string };
          resolve({ status: res.statusCode ?? 0, data: json.data, message: json.message?.trim() });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(body);
  });
}
