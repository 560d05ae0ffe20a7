import fs from "node:fs";
import path from "node:path";

import { labDir } from "./lab-state";

/**
 * How a simulated `reboot` / `shutdown` / `systemctl reboot` reaches the lab process: it
 * writes `.lab/power-request`; the node's reboot controller (lab/debian/reboot-controller.ts)
 * picks it up, takes SSH down, kills the host's processes, switches the kernel and comes back.
 */

export type PowerAction = "reboot" | "poweroff";

export type PowerRequest = { action: PowerAction; requestedAt: number; delayMs: number };

export function powerRequestFile(root: string): string {
  return path.join(labDir(root), "power-request");
}

export function requestPower(root: string, action: PowerAction, delayMs = 0): void {
  const file = powerRequestFile(root);
  const request: PowerRequest = { action, requestedAt: Date.now(), delayMs };
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(request));
  fs.renameSync(`${file}.tmp`, file);
}

export function cancelPower(root: string): boolean {
  const file = powerRequestFile(root);
  const existed = fs.existsSync(file);
  fs.rmSync(file, { force: true });
  return existed;
}

/** Reads and removes a pending request. */
export function takePowerRequest(root: string): PowerRequest | null {
  const file = powerRequestFile(root);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
  try {
    const request = JSON.parse(text) as PowerRequest;
    if (Date.now() < request.requestedAt + request.delayMs) return null;
    fs.rmSync(file, { force: true });
    return request;
  } catch {
    fs.rmSync(file, { force: true });
    return null;
  }
}
