import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { appendKeyCommand, hasKeyCommand, installKeyCommand, removeKeyCommand } from "./commands";
import { generateConsoleKeyPair, publicKeyFingerprint } from "@/lib/host-access/console-key-pair";

// The builders are run for real in /bin/sh (dash on Debian) against a temp HOME: what they do
// to authorized_keys is what a host's shell does.
let home: string;
const file = () => path.join(home, ".ssh", "authorized_keys");
const run = (command: string) =>
  spawnSync("/bin/sh", ["-c", command], {
    encoding: "utf8",
    env: { ...process.env, HOME: home },
  });
const contents = () => readFileSync(file(), "utf8");
const mode = (p: string) => statSync(p).mode & 0o777;

const OLD =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld0 clupilot-console@aaaaaaaa";
const NEW =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINewNewNewNewNewNewNewNewNewNewNewNewNewNew clupilot-console@bbbbbbbb";
const OTHER = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0ther operator@laptop";

beforeEach(() => {
  home = mkdtempSync(path.join(os.tmpdir(), "clupilot-ak-"));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

describe("appendKeyCommand", () => {
  it("creates ~/.ssh (0700) and the file (0600), appends once, idempotent", () => {
    expect(run(appendKeyCommand(NEW)).stdout).toBe("added\n");
    expect(run(appendKeyCommand(NEW)).stdout).toBe("present\n");
    expect(contents()).toBe(`${NEW}\n`);
    expect(mode(path.dirname(file()))).toBe(0o700);
    expect(mode(file())).toBe(0o600);
  });

  it("never glues the key onto a last line without newline, keeps other lines", () => {
    run("mkdir -p ~/.ssh");
    writeFileSync(file(), `# keys\n${OTHER}`);
    expect(run(appendKeyCommand(`  ${NEW}  `)).stdout).toBe("added\n");
    expect(contents()).toBe(`# keys\n${OTHER}\n${NEW}\n`);
  });

  it("treats a line that only contains the key (other comment, options) as not there", () => {
    run("mkdir -p ~/.ssh");
    writeFileSync(file(), `restrict ${NEW}\n`);
    expect(run(appendKeyCommand(NEW)).stdout).toBe("added\n");
    expect(contents()).toBe(`restrict ${NEW}\n${NEW}\n`);
  });
});

describe("removeKeyCommand", () => {
  it("removes exactly the line, keeps every other byte and the file's mode", () => {
    run("mkdir -p ~/.ssh");
    const before = `# keys\n${OTHER}\n${OLD}\n\n${NEW}\n${OLD}\n`;
    writeFileSync(file(), before);
    chmodSync(file(), 0o640);
    const result = run(removeKeyCommand(OLD));
    expect(result.stdout).toBe("removed\n");
    expect(contents()).toBe(`# keys\n${OTHER}\n\n${NEW}\n`);
    expect(mode(file())).toBe(0o640);
    expect(run(removeKeyCommand(OLD)).stdout).toBe("absent\n");
    expect(run(hasKeyCommand(OLD)).status).toBe(1);
    expect(run(hasKeyCommand(NEW)).status).toBe(0);
  });

  it("leaves an empty file when the key was the only line; absent without a file", () => {
    expect(run(removeKeyCommand(OLD)).stdout).toBe("absent\n");
    run(appendKeyCommand(OLD));
    expect(run(removeKeyCommand(OLD)).stdout).toBe("removed\n");
    expect(contents()).toBe("");
  });

  it("does not touch a line that only contains the key with options or another comment", () => {
    run("mkdir -p ~/.ssh");
    writeFileSync(file(), `from="10.0.0.1" ${OLD}\n`);
    expect(run(removeKeyCommand(OLD)).stdout).toBe("absent\n");
    expect(contents()).toBe(`from="10.0.0.1" ${OLD}\n`);
  });
});

describe("installKeyCommand (what the operator pastes)", () => {
  it("installs the key once, with the console's comment", () => {
    const pair = generateConsoleKeyPair("clupilot-console@12345678");
    expect(pair.publicKey).toMatch(/^ssh-ed25519 AAAA\S+ clupilot-console@12345678$/);
    expect(pair.privateKey).toContain("BEGIN OPENSSH PRIVATE KEY");
    expect(publicKeyFingerprint(pair.publicKey)).toBe(pair.fingerprint);
    expect(run(installKeyCommand(pair.publicKey)).status).toBe(0);
    expect(run(installKeyCommand(pair.publicKey)).status).toBe(0);
    expect(contents()).toBe(`${pair.publicKey}\n`);
    expect(mode(file())).toBe(0o600);
  });
});
