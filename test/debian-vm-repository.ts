/**
 * A stand-in for the Proxmox package repository, for the Debian VM (test/debian-vm.ts), which
 * reaches no mirror: a real signed apt repository (an OpenPGP key made here with gpg, an
 * InRelease clear-signed with it, a Packages index) holding empty stand-in packages built with
 * dpkg-deb, served inside the VM by Python's http.server on the VM's loopback. InstallProxmoxRepository
 * then fetches the keyring with curl and runs a real apt-get update against it, and
 * InstallProxmoxKernel installs `proxmox-default-kernel` with a real apt-get and dpkg — the
 * stand-in package holds no kernel (the real one is not reachable from these machines).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { DebianVm } from "./debian-vm";

const run = promisify(execFile);

/** Where the VM serves it (its own loopback): the URLs the test's onboarding config names. */
export const REPOSITORY_PORT = 8080;
const BASE = `http://127.0.0.1:${REPOSITORY_PORT}`;
const DIR_IN_VM = "/srv/clupilot-test-repository";
const UNIT = "clupilot-test-repository";

export type StandInPackage = { name: string; version: string; description: string };

export type StandInRepository = {
  keyringUrl: string;
  keyringSha256: string;
  fingerprint: string;
  repositoryUrl: string;
};

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** Builds the repository on this machine and starts serving it inside the VM. */
export async function serveStandInRepository(
  vm: DebianVm,
  packages: StandInPackage[],
): Promise<StandInRepository> {
  const work = await mkdtemp(path.join(os.tmpdir(), "clupilot-repository-"));
  try {
    const gnupg = path.join(work, "gnupg");
    await mkdir(gnupg, { mode: 0o700 });
    const gpg = (...args: string[]) =>
      run("gpg", ["--homedir", gnupg, "--batch", "--no-tty", ...args], { encoding: "utf8" });
    await gpg(
      ...["--pinentry-mode", "loopback", "--passphrase", ""],
      ...["--quick-gen-key", "CluPilot test repository <repository@clupilot.invalid>"],
      ...["ed25519", "sign", "never"],
    );
    const { stdout: colons } = await gpg("--with-colons", "--list-keys");
    const fingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(colons)?.[1];
    if (!fingerprint) throw new Error(`gpg made no key:\n${colons}`);

    const tree = path.join(work, "tree");
    const repo = path.join(tree, "debian/pve");
    const pool = path.join(repo, "pool");
    const binary = path.join(repo, "dists/trixie/pve-no-subscription/binary-amd64");
    await mkdir(pool, { recursive: true });
    await mkdir(binary, { recursive: true });

    const keyringFile = path.join(tree, "proxmox-archive-keyring-trixie.gpg");
    await run("gpg", [
      "--homedir",
      gnupg,
      "--batch",
      "--output",
      keyringFile,
      "--export",
      fingerprint,
    ]);
    const keyringBytes = await readFile(keyringFile);

    const entries: string[] = [];
    for (const pkg of packages) {
      const staging = path.join(work, `pkg-${pkg.name}`);
      await mkdir(path.join(staging, "DEBIAN"), { recursive: true });
      const control = [
        `Package: ${pkg.name}`,
        `Version: ${pkg.version}`,
        "Architecture: all",
        "Maintainer: CluPilot tests <tests@clupilot.invalid>",
        `Description: ${pkg.description}`,
        "",
      ].join("\n");
      await writeFile(path.join(staging, "DEBIAN/control"), control);
      const file = `${pkg.name}_${pkg.version}_all.deb`;
      await run("dpkg-deb", [
        "-Zxz",
        "--root-owner-group",
        "--build",
        staging,
        path.join(pool, file),
      ]);
      const deb = await readFile(path.join(pool, file));
      entries.push(
        control.trimEnd() +
          `\nFilename: pool/${file}\nSize: ${deb.length}\nSHA256: ${sha256(deb)}\n`,
      );
    }
    const index = Buffer.from(entries.join("\n"));
    await writeFile(path.join(binary, "Packages"), index);
    const release = [
      "Origin: CluPilot tests",
      "Label: stand-in for the Proxmox VE no-subscription repository",
      "Suite: trixie",
      "Codename: trixie",
      `Date: ${new Date(Date.now() - 60_000).toUTCString().replace("GMT", "UTC")}`,
      "Architectures: amd64",
      "Components: pve-no-subscription",
      "SHA256:",
      ` ${sha256(index)} ${index.length} pve-no-subscription/binary-amd64/Packages`,
      "",
    ].join("\n");
    const dists = path.join(repo, "dists/trixie");
    await writeFile(path.join(dists, "Release"), release);
    await gpg(
      ...["--local-user", fingerprint, "--digest-algo", "SHA512"],
      ...["--output", path.join(dists, "InRelease"), "--clearsign", path.join(dists, "Release")],
    );

    const { stdout: tar } = await run("tar", ["-C", tree, "-czf", "-", "."], {
      encoding: "buffer",
      maxBuffer: 64 << 20,
    });
    await vm.execOk(
      [
        `rm -rf ${DIR_IN_VM} && mkdir -p ${DIR_IN_VM}`,
        `base64 -d | tar -xzf - -C ${DIR_IN_VM}`,
        `systemctl stop ${UNIT} 2>/dev/null; systemctl reset-failed ${UNIT} 2>/dev/null`,
        `systemd-run --unit=${UNIT} --description='stand-in Proxmox repository (test)' python3 -m http.server ${REPOSITORY_PORT} --bind 127.0.0.1 --directory ${DIR_IN_VM} > /dev/null`,
        // Serving before this returns (Python starts slowly under TCG).
        `for i in $(seq 1 300); do curl -fsS -o /dev/null ${BASE}/debian/pve/dists/trixie/InRelease 2>/dev/null && exit 0; sleep 0.5; done; echo 'the stand-in repository does not answer' >&2; exit 1`,
      ].join("\n"),
      { stdin: tar.toString("base64"), timeoutMs: 300_000 },
    );
    return {
      keyringUrl: `${BASE}/proxmox-archive-keyring-trixie.gpg`,
      keyringSha256: sha256(keyringBytes),
      fingerprint,
      repositoryUrl: `${BASE}/debian/pve`,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
