import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { debconfValue } from "../debian/debconf";
import { markInstalled } from "../debian/dpkg-status";
import { debianCloudImage, readLabImage, writeLabImage } from "../image/format";
import { startLab, waitUntil, type LabNode } from "../index";
import { labExec } from "../test-helpers";
import { acquireToolServer, toolServerStats } from "./index";

/**
 * The tools on a lab node's PATH are clients of the lab's tool server: what a command sees of
 * them (output, exit code, stdin, pipes, being killed, the server being away) is what it saw of
 * a tool process.
 */

let lab: LabNode;

beforeAll(async () => {
  lab = await startLab({ state: "proxmox", timeScale: 0.1 });
  markInstalled(lab.root, [{ name: "libguestfs-tools", version: "1:1.56.1-1" }]);
});

afterAll(async () => {
  await lab?.stop();
});

/** Runs `bash -c command` as the node's SSH server would (in its namespace, with its env). */
function runLocal(command: string): {
  pid: number;
  done: Promise<{ code: number | null; stdout: Buffer; stderr: string }>;
} {
  const bash = lab.command(["/bin/bash", "-c", command]);
  const child = spawn(bash.file, bash.args, {
    env: { ...lab.env } as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdout: Buffer[] = [];
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    pid: child.pid!,
    done: new Promise((resolve) =>
      child.on("close", (code) => resolve({ code, stdout: Buffer.concat(stdout), stderr })),
    ),
  };
}

describe("the simulated tools, served by the lab's tool server", () => {
  it("relay stdout, stderr and the exit code; a closed pipe ends the tool as SIGPIPE does", async () => {
    const missing = await labExec(lab, "qm config 99999");
    expect(missing.code).toBe(255);
    expect(missing.stderr).toBe(
      "Configuration file 'nodes/pve1/qemu-server/99999.conf' does not exist\n",
    );
    expect(missing.stdout).toBe("");

    const piped = await labExec(lab, "dpkg -l | head -n 1");
    expect(piped.stdout).toBe("Desired=Unknown/Install/Remove/Purge/Hold\n");

    // More than a pipe holds (64 KiB), so the reader is gone before the tool has written it all.
    const image = debianCloudImage();
    image.headerBytes = 4 * 1024 * 1024;
    image.files["/big"] = "x".repeat(1024 * 1024);
    fs.mkdirSync(path.join(lab.root, "tmp/images"), { recursive: true });
    writeLabImage(path.join(lab.root, "tmp/images/pipe.qcow2"), image);
    const closed = await labExec(
      lab,
      'virt-cat -a /tmp/images/pipe.qcow2 /big | head -c 4 > /dev/null; echo "${PIPESTATUS[*]}"',
    );
    expect(closed.stdout).toBe("141 0\n");
  });

  it("leave stdin to the next command unless the tool reads it, and feed it when it does", async () => {
    const untouched = await labExec(lab, 'qm list > /dev/null; read -r line; echo "$line"', {
      stdin: "first line\nsecond line\n",
    });
    expect(untouched.stdout).toBe("first line\n");

    const read = await labExec(lab, "debconf-set-selections", {
      stdin: "postfix postfix/main_mailer_type select Local only\n",
    });
    expect(read.code).toBe(0);
    expect(debconfValue(lab.root, "postfix/main_mailer_type")).toBe("Local only");
  });

  it("deliver megabytes of output byte for byte, relative paths from the command's directory", async () => {
    const content = Array.from({ length: 3 * 1024 * 1024 }, (_, i) =>
      String.fromCharCode(1 + ((i * 7) % 0x7fe)),
    ).join("");
    const image = debianCloudImage(32 * 1024 * 1024);
    image.headerBytes = 16 * 1024 * 1024;
    image.files["/big"] = content;
    fs.mkdirSync(path.join(lab.root, "tmp/images"), { recursive: true });
    writeLabImage(path.join(lab.root, "tmp/images/big.qcow2"), image);

    const { done } = runLocal("cd /tmp/images && virt-cat -a big.qcow2 /big");
    const result = await done;
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.equals(Buffer.from(content, "utf8"))).toBe(true);
  });

  it("stop the tool's run when the client is killed: a killed virt-customize never writes the image", async () => {
    const file = path.join(lab.root, "tmp/customize.qcow2");
    writeLabImage(file, debianCloudImage());
    // Examining the guest alone takes 0.8 s at time scale 0.1, the install 1.9 s more.
    const run = runLocal("exec virt-customize -a /tmp/customize.qcow2 --install qemu-guest-agent");
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(run.pid, "SIGTERM");
    const result = await run.done;
    expect(result.code).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(readLabImage(file).customizations).toEqual([]);
  });

  it("say so and fail when the tool server does not answer or refuses, never a fake success", async () => {
    const addressFile = path.join(lab.root, ".lab/tool-server");
    const address = fs.readFileSync(addressFile, "utf8");
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    try {
      fs.writeFileSync(addressFile, `${closedPort} ${address.split(" ")[1]}`);
      const down = await labExec(lab, "pveversion");
      expect(down.code).toBe(70);
      expect(down.stderr).toContain(
        `lab: pveversion: the lab's tool server at 127.0.0.1:${closedPort} does not answer`,
      );

      fs.writeFileSync(addressFile, `${address.split(" ")[0]} ${"0".repeat(48)}\n`);
      const refused = await labExec(lab, "pveversion");
      expect(refused.code).toBe(70);
      expect(refused.stderr).toContain("it belongs to another lab");

      fs.rmSync(addressFile);
      const gone = await labExec(lab, "pveversion");
      expect(gone.code).toBe(70);
      expect(gone.stderr).toContain("the lab's tool server is not running");
    } finally {
      fs.writeFileSync(addressFile, address);
    }
    expect((await labExec(lab, "pveversion")).code).toBe(0);
  });

  it("keep nothing of a registration once it is answered: many node boots and stats reads add no listener", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      // A registration's namespace is only used when a tool runs; none runs for these.
      const node = { binds: [], entry: { mount: "/proc/self/ns/mnt", user: null } };
      const leases = [];
      for (let i = 0; i < 15; i++) {
        leases.push(await acquireToolServer(node));
        expect(await toolServerStats()).not.toBeNull();
      }
      for (const lease of leases) await lease.release();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
  });

  it("come back with the node after a restart of its SSH server", async () => {
    await lab.restart();
    await waitUntil(async () => (await labExec(lab, "qm list").catch(() => null))?.code === 0, {
      timeoutMs: 10_000,
    });
  });
});
