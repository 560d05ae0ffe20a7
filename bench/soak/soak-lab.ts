import fs from "node:fs";
import path from "node:path";
import {
  generateClientKey,
  startImageServer,
  startLab,
  type ImageServer,
  type LabNode,
} from "@/lab";
import { readTokenSecrets } from "@/lab/pve/access";
import { qemuServerDir } from "@/lab/pve/state";
import { startUntilEnd } from "../support/run-bench";
import type { SecretWatch } from "./secrets";

/** The first catalog's template: seeded on onboarded nodes, built on fresh ones. */
export const FIRST_TEMPLATE_VMID = 9000;
/** Lab time: a fresh onboarding takes ~40 s alone (bench/onboard.ts measured it). */
export const TIME_SCALE = 0.02;

export type AuthKind = "password" | "private_key" | "console_key";

export type SoakNode = {
  node: LabNode;
  origin: "fresh" | "onboarded";
  auth: AuthKind;
  /** The private key the soak made for this node (auth `private_key`). */
  privateKey: string | null;
};

/**
 * The soak's lab: the image server and `count` nodes, alternately fresh Debian 13 and onboarded
 * Proxmox (LVM-thin, with the first template), logging in by password, a private key of the
 * soak's own, or the console's key, in turn. Every secret of theirs goes into `secrets`.
 */
export async function startSoakLab(count: number, secrets: SecretWatch) {
  const images: ImageServer = await startUntilEnd(
    "image server",
    startImageServer({ imageSizeBytes: 256 * 1024 }),
    (server) => server.stop(),
  );
  const kinds: AuthKind[] = ["password", "private_key", "console_key"];
  const nodes = await Promise.all(
    Array.from({ length: count }, async (_, i): Promise<SoakNode> => {
      const origin = i % 2 === 0 ? "fresh" : "onboarded";
      const auth = kinds[i % kinds.length]!;
      const key = auth === "private_key" ? generateClientKey(`soak-${i + 1}`) : null;
      const name = `${origin === "fresh" ? "fresh" : "pve"}${Math.floor(i / 2) + 1}`;
      const node = await startUntilEnd(
        `lab node ${name}`,
        startLab({
          name,
          timeScale: TIME_SCALE,
          ...(key ? { authorizedKeys: [key.publicKey] } : {}),
          ...(origin === "onboarded"
            ? { state: "onboarded", storage: "lvm-thin", pve: { templates: [FIRST_TEMPLATE_VMID] } }
            : {}),
        }),
        (started) => started.stop(),
      );
      secrets.add(`SSH password of ${name}`, node.ssh.password);
      if (key) secrets.add(`private key of ${name}`, key.privateKey);
      return { node, origin, auth, privateKey: key?.privateKey ?? null };
    }),
  );
  return { images, nodes };
}

/** The node's template VMs as their config files stand: vmid → the file's text. */
export function templatesOn(node: LabNode): Map<number, string> {
  const dir = qemuServerDir(node.root, node.name);
  const templates = new Map<number, string>();
  let files: string[];
  try {
    files = fs.readdirSync(dir);
  } catch {
    return templates;
  }
  for (const file of files) {
    const match = /^(\d+)\.conf$/.exec(file);
    if (!match) continue;
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, file), "utf8");
    } catch {
      continue; // removed meanwhile: the next look says whether it came back
    }
    if (isTemplate(text)) templates.set(Number(match[1]), text);
  }
  return templates;
}

/** What BuildVmTemplate itself counts as a template: `template: 1` and a `base-` disk. */
export function isTemplate(config: string): boolean {
  return /^template: 1$/m.test(config) && /:(\d+\/)?base-\d+-disk-\d+/.test(config);
}

/** The Proxmox API token secrets on the node (the console's, once it created one). */
export function apiTokenSecretsOn(node: LabNode): Map<string, string> {
  return readTokenSecrets(node.root);
}
