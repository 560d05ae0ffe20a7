import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "@/lib/db/client";
import { definePipeline, type Pipeline } from "@/lib/pipeline/step";
import { startImageServer, type ImageServer, type LabNode } from "@/lab";
import {
  LAB_PROXMOX_KEY_FINGERPRINT,
  LAB_PROXMOX_KEYRING,
  LAB_PROXMOX_KEYRING_SHA256,
  labProxmoxKeyring,
} from "@/lab/debian/apt-sources";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { settled, startTestRun } from "@/test/runs";
import { onboardingConfigFromEnv, type OnboardingConfig } from "./config";
import { connectHost } from "./connect-host";
import { installProxmoxRepository } from "./install-proxmox-repository";
import { createLabHost } from "@/test/lab-host";
import { createHostServices, type HostServices } from "./services";

const run = promisify(execFile);

/**
 * The keyring InstallProxmoxRepository installs is Proxmox's (in the lab: the lab's stand-in,
 * pinned through the same settings): a download with another checksum, or the pinned checksum
 * but not the pinned key, is refused with both values and nothing is installed.
 */

let db: Database;
let harness: StepHarness;
let image: ImageServer;
let foreign: { bytes: Buffer; fingerprint: string; sha256: string };
let server: http.Server;
let foreignUrl: string;
const pipelines: Record<string, Pipeline<HostServices>> = {};

function pipeline(name: string, cfg: OnboardingConfig) {
  const p = definePipeline<HostServices>({
    name,
    steps: [connectHost, installProxmoxRepository(cfg)],
    services: (r, database) => createHostServices(database, r, cfg),
  });
  pipelines[name] = p;
  return p;
}

/** A real OpenPGP key that is not the pinned one (made with gpg, in a throw-away home). */
async function makeForeignKey() {
  const home = await mkdtemp(path.join(os.tmpdir(), "clupilot-foreign-key-"));
  try {
    const env = { ...process.env, GNUPGHOME: home };
    await run(
      "gpg",
      [
        "--batch",
        "--passphrase",
        "",
        "--quick-gen-key",
        "Not Proxmox <mirror@example.invalid>",
        "ed25519",
        "sign",
        "never",
      ],
      { env },
    );
    const exported = await run("gpg", ["--batch", "--export"], {
      env,
      encoding: "buffer",
    });
    const bytes = exported.stdout;
    const listed = await run("gpg", ["--batch", "--with-colons", "--list-keys"], { env });
    const fingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(listed.stdout)![1]!;
    return { bytes, fingerprint, sha256: createHash("sha256").update(bytes).digest("hex") };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

let good: Pipeline<HostServices>;
let wrongSum: Pipeline<HostServices>;
let wrongKey: Pipeline<HostServices>;

beforeAll(async () => {
  image = await startImageServer({ imageSizeBytes: 64 * 1024 });
  foreign = await makeForeignKey();
  server = http.createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/octet-stream" });
    res.end(foreign.bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  foreignUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/debian/proxmox-archive-keyring-trixie.gpg`;
  const base: OnboardingConfig = {
    ...onboardingConfigFromEnv({} as NodeJS.ProcessEnv),
    ...labProxmoxKeyring(image.keyringUrl),
    minMemoryMiB: 256,
    minFreeDiskGiB: 1,
    pollSeconds: 0.2,
  };
  good = pipeline("test-keyring-good", base);
  // A mirror serving another keyring, the pins unchanged.
  wrongSum = pipeline("test-keyring-wrong-sum", { ...base, proxmoxKeyringUrl: foreignUrl });
  // Someone pinned that file's checksum but not its key: the fingerprint still refuses it.
  wrongKey = pipeline("test-keyring-wrong-key", {
    ...base,
    proxmoxKeyringUrl: foreignUrl,
    proxmoxKeyringSha256: foreign.sha256,
  });
  harness = await startStepHarness({ pipelines, lab: { timeScale: 0.05 } });
  db = harness.db;
});
afterAll(async () => {
  await harness?.stop();
  await image?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

let counter = 0;
async function addHost(node: LabNode): Promise<string> {
  const { hostId, runId } = await createLabHost(db, node, `keyring-${++counter}`);
  await settled(db, runId);
  return hostId;
}

const KEYRING = "usr/share/keyrings/proxmox-archive-keyring.gpg";

/** Nothing of the refused download is left: no keyring, no temp file, no source written. */
async function expectNothingInstalled(node: LabNode) {
  expect(existsSync(path.join(node.root, KEYRING))).toBe(false);
  expect(await readdir(path.join(node.root, "usr/share/keyrings"))).not.toContainEqual(
    expect.stringMatching(/^proxmox-archive-keyring/),
  );
  expect(existsSync(path.join(node.root, "etc/apt/sources.list.d/pve-install-repo.sources"))).toBe(
    false,
  );
}

describe("InstallProxmoxRepository installs Proxmox's keyring only", () => {
  it("the lab's keyring is what the lab's configuration pins: checksum and gpg fingerprint", async () => {
    expect(createHash("sha256").update(LAB_PROXMOX_KEYRING).digest("hex")).toBe(
      LAB_PROXMOX_KEYRING_SHA256,
    );
    const home = await mkdtemp(path.join(os.tmpdir(), "clupilot-lab-key-"));
    try {
      const file = path.join(home, "keyring.gpg");
      await writeFile(file, LAB_PROXMOX_KEYRING);
      const shown = await run("gpg", ["--batch", "--with-colons", "--show-keys", file], {
        env: { ...process.env, GNUPGHOME: home },
      });
      expect(shown.stdout).toContain(`fpr:::::::::${LAB_PROXMOX_KEY_FINGERPRINT}:`);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it("a keyring with another checksum is refused with both checksums; nothing is installed", async () => {
    const node = await harness.lab();
    const hostId = await addHost(node);
    const failed = await settled(db, await startTestRun(db, wrongSum, hostId));
    expect(failed).toMatchObject({ status: "failed", failedStep: "InstallProxmoxRepository" });
    expect(failed.failureReason).toBe(
      `the keyring downloaded from ${foreignUrl} has SHA-256 ${foreign.sha256}, but Proxmox's trixie keyring has ` +
        `${LAB_PROXMOX_KEYRING_SHA256} (the pinned value): nothing was installed. Check the URL (a proxy or mirror ` +
        "serving another file?); if Proxmox published a new keyring, set CLUPILOT_PROXMOX_KEYRING_SHA256 and " +
        "CLUPILOT_PROXMOX_KEYRING_FINGERPRINT to the values Proxmox publishes, then Retry",
    );
    await expectNothingInstalled(node);
  });

  it("a keyring with the pinned checksum but without the pinned key is refused with both fingerprints", async () => {
    const node = await harness.lab();
    const hostId = await addHost(node);
    const failed = await settled(db, await startTestRun(db, wrongKey, hostId));
    expect(failed).toMatchObject({ status: "failed", failedStep: "InstallProxmoxRepository" });
    expect(failed.failureReason).toContain(
      `the keyring downloaded from ${foreignUrl} holds key(s) ${foreign.fingerprint}, not the pinned Proxmox key ${LAB_PROXMOX_KEY_FINGERPRINT}: nothing was installed`,
    );
    await expectNothingInstalled(node);
  });

  it("a keyring already on the host that lacks the pinned key is replaced by the verified download", async () => {
    const node = await harness.lab();
    await mkdir(path.join(node.root, "usr/share/keyrings"), { recursive: true });
    await writeFile(path.join(node.root, KEYRING), foreign.bytes);
    const hostId = await addHost(node);
    const done = await settled(db, await startTestRun(db, good, hostId));
    expect(done.failureReason ?? "").toBe("");
    expect(await readFile(path.join(node.root, KEYRING))).toEqual(LAB_PROXMOX_KEYRING);
  });
});
