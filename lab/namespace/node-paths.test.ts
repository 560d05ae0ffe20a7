import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { NodePaths } from "./node-paths";

/**
 * The tool server's view of a node, without a namespace: node paths through the binds, symlinks
 * followed as the node's kernel follows them. (namespace.int.test.ts holds the same paths
 * against a real namespace.)
 */

let dir: string;
let paths: NodePaths;
const real = (...parts: string[]) => path.join(dir, ...parts);

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-node-paths-"));
  for (const folder of ["root/etc", "root/run/lab", "root/var", "root/tmp", "shared"]) {
    fs.mkdirSync(real(folder), { recursive: true });
  }
  fs.writeFileSync(real("root/etc/hostname"), "pve1\n");
  fs.symlinkSync("/run", real("root/var/run"));
  fs.symlinkSync("../usr/bin/env", real("root/etc/env-link"));
  fs.symlinkSync("/var/run/lab", real("root/tmp/to-lab"));
  fs.symlinkSync("loop-b", real("root/tmp/loop-a"));
  fs.symlinkSync("loop-a", real("root/tmp/loop-b"));
  paths = new NodePaths(
    [
      { target: "/run", source: real("root/run") },
      { target: "/etc", source: real("root/etc") },
      { target: "/var", source: real("root/var") },
      { target: "/tmp", source: real("root/tmp") },
      { target: "/tmp/shared", source: real("shared"), readOnly: true },
    ],
    [
      { point: "/", readOnly: false },
      { point: "/dev", readOnly: false },
      { point: "/sys", readOnly: true },
    ],
  );
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("a node's paths seen from outside its namespace", () => {
  it("maps each path through the innermost bind it lies in; the rest is the machine's", () => {
    expect(paths.resolve("/etc/hostname")).toBe(real("root/etc/hostname"));
    expect(paths.resolve("/tmp/shared/x")).toBe(real("shared/x"));
    expect(paths.resolve("/usr/bin/env")).toBe("/usr/bin/env");
    expect(paths.resolve("/etc/../tmp/./new")).toBe(real("root/tmp/new"));
  });

  it("follows symlinks in the node's view: absolute ones from the node's /, relative ones across binds", () => {
    expect(paths.resolve("/var/run/lab")).toBe(real("root/run/lab"));
    expect(paths.resolve("/etc/env-link")).toBe("/usr/bin/env");
    // `..` after a link is the parent of where it led (/run), as in the kernel.
    expect(paths.resolve("/tmp/to-lab/../lab")).toBe(real("root/run/lab"));
    // lstat, readlink, unlink: the link itself.
    expect(paths.resolve("/var/run", false)).toBe(real("root/var/run"));
    expect(() => paths.resolve("/tmp/loop-a")).toThrow(/ELOOP/);
  });

  it("stops at the first part that is not there, so the call fails or creates as inside", () => {
    expect(paths.resolve("/tmp/missing/../x")).toBe(`${real("root/tmp")}/missing/../x`);
  });

  it("names real paths the node's way again", () => {
    expect(paths.toNode(real("root/etc/hostname"))).toBe("/etc/hostname");
    expect(paths.toNode(real("root/run"))).toBe("/run");
    expect(paths.toNode(real("shared/a/b"))).toBe("/tmp/shared/a/b");
    expect(paths.toNode("/usr/bin/env")).toBe("/usr/bin/env");
  });

  it("lets the node write in its binds and on writable mounts, never on / or a read-only bind", () => {
    expect(paths.writable(real("root/tmp/new"))).toBe(true);
    expect(paths.writable(real("shared/new"))).toBe(false);
    expect(paths.writable("/dev/null")).toBe(true);
    expect(paths.writable("/sys/kernel/x")).toBe(false);
    expect(paths.writable("/usr/bin/new")).toBe(false);
  });
});
