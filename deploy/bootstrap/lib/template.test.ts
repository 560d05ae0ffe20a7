import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startNodeNamespace, type NodeNamespace } from "@/lab/namespace/namespace";
import { BUILD_DIR } from "@/lib/steps/onboarding/build-vm-template/commands";

const here = import.meta.dirname;
const scripts = ["template.sh", "template-run.sh"].map((name) => path.join(here, name));
const layouts = path.resolve(here, "../../../test/fixtures/proxmox/storage-cfg");

/**
 * template.sh reads the host's own /etc/pve/storage.cfg, with no way to point it elsewhere. So
 * its functions run here where that path is a file of ours: inside a lab node's mount namespace
 * (lab/namespace), whose /etc is a scratch folder's.
 */
let root: string;
let ns: NodeNamespace;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-template-sh-"));
  fs.mkdirSync(path.join(root, "etc/pve"), { recursive: true });
  // Where BuildVmTemplate uploads it (the repository may lie where the namespace covers).
  fs.mkdirSync(path.join(root, BUILD_DIR), { recursive: true });
  fs.copyFileSync(scripts[0]!, path.join(root, BUILD_DIR, "template.sh"));
  ns = await startNodeNamespace(root);
});
afterAll(async () => {
  await ns?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/**
 * Runs a function of template.sh in bash on a host whose storage.cfg is this file's copy. With
 * `hostname`, a `hostname` program first in PATH prints it (null: one that fails), as the host's
 * own would; without, the machine's.
 */
function templateFn(storageCfg: string, call: string, hostname?: string | null) {
  fs.copyFileSync(storageCfg, path.join(root, "etc/pve/storage.cfg"));
  // Under the build folder, which the namespace shows at the same path (its /tmp is its own).
  const shims = `${BUILD_DIR}/shims`;
  fs.rmSync(path.join(root, shims), { recursive: true, force: true });
  let PATH = "/usr/sbin:/usr/bin:/sbin:/bin";
  if (hostname !== undefined) {
    fs.mkdirSync(path.join(root, shims));
    const body = hostname === null ? "exit 1" : `printf '%s\\n' '${hostname}'`;
    fs.writeFileSync(path.join(root, shims, "hostname"), `#!/bin/sh\n${body}\n`, {
      mode: 0o755,
    });
    PATH = `${shims}:${PATH}`;
  }
  const bash = ns.command([
    "/bin/bash",
    "-c",
    `log() { :; }; die() { echo "DIE: $*" >&2; exit 1; }; . ${BUILD_DIR}/template.sh; ${call}`,
  ]);
  const result = spawnSync(bash.file, bash.args, {
    env: { ...process.env, PATH },
    encoding: "utf8",
  });
  return { code: result.status, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

describe("the template scripts", () => {
  it.each(scripts)("%s passes shellcheck", (script) => {
    // shellcheck is installed by .ci/run; a missing binary must fail, not skip.
    execFileSync("shellcheck", ["-x", script], { cwd: here, encoding: "utf8" });
  });

  it("the image-tools test (npm run test:image-tools) passes shellcheck", () => {
    execFileSync("shellcheck", ["-x", path.join(here, "../image-tools-test.sh")], {
      cwd: here,
      encoding: "utf8",
    });
  });

  it.each(scripts)("%s passes sh -n", (script) => {
    execFileSync("sh", ["-n", script]);
    execFileSync("bash", ["-n", script]);
  });

  it("the driver is executable", () => {
    expect(fs.statSync(scripts[1]!).mode & 0o111).not.toBe(0);
  });
});

describe("storage detection against real storage.cfg layouts", () => {
  const expected: Record<string, string> = {
    "installer-lvm-thin.cfg": "local-lvm",
    "installer-zfs.cfg": "local-zfs",
    "installer-btrfs.cfg": "local-btrfs", // local is disabled there
    "installer-ext4-local-only.cfg": "local",
    "debian-install-no-images.cfg": "",
    "debian-install-customised.cfg": "", // only backup on NFS, scratch disabled
    "cluster-shared.cfg": "local-lvm", // shared storages count only on a cluster member
  };

  it("covers every reference layout", () => {
    const files = fs.readdirSync(layouts).filter((f) => f.endsWith(".cfg"));
    expect(files.sort()).toEqual(Object.keys(expected).sort());
  });

  it.each(Object.entries(expected))("%s → %s", (file, storage) => {
    expect(templateFn(path.join(layouts, file), "detect_vm_storage")).toMatchObject({
      code: 0,
      stdout: storage,
    });
  });

  it("reads local's own content list, keeping what an operator added", () => {
    expect(
      templateFn(path.join(layouts, "debian-install-customised.cfg"), "storage_content local")
        .stdout,
    ).toBe("snippets,iso,vztmpl,backup");
    expect(
      templateFn(path.join(layouts, "debian-install-no-images.cfg"), "storage_content local")
        .stdout,
    ).toBe("iso,vztmpl,backup");
  });

  it("never reads the content of a disabled storage", () => {
    expect(
      templateFn(path.join(layouts, "installer-btrfs.cfg"), "storage_content local").code,
    ).toBe(1);
  });

  it("refuses to guess when the storage has no content line", () => {
    const dir = fs.mkdtempSync("/tmp/clupilot-cfg-");
    const cfg = path.join(dir, "storage.cfg");
    fs.writeFileSync(cfg, "dir: local\n\tpath /var/lib/vz\n");
    expect(templateFn(cfg, "storage_content local").code).toBe(1);
    expect(templateFn(cfg, "detect_vm_storage").stdout).toBe("");
    fs.rmSync(dir, { recursive: true });
  });

  it("ignores comments and a storage named like a key", () => {
    const dir = fs.mkdtempSync("/tmp/clupilot-cfg-");
    const cfg = path.join(dir, "storage.cfg");
    fs.writeFileSync(
      cfg,
      "# dir: commented\n#\tcontent images\ndir: local\n\tpath /var/lib/vz\n\tcontent iso\n\nnfs: shared-images\n\tpath /mnt/pve/x\n\tcontent images\n\tdisable 0\n",
    );
    expect(templateFn(cfg, "detect_vm_storage").stdout).toBe("shared-images");
    fs.rmSync(dir, { recursive: true });
  });
});

describe("storage detection on a cluster member (issue 31: templates every node can clone)", () => {
  const corosync = () => path.join(root, "etc/pve/corosync.conf");
  const cluster = path.join(layouts, "cluster-shared.cfg");
  beforeAll(() => fs.writeFileSync(corosync(), "totem {\n  cluster_name: lab\n}\n"));
  afterAll(() => fs.rmSync(corosync(), { force: true }));

  it("takes the first shared storage this node may use: rbd on pve1, which the NFS share leaves out", () => {
    expect(templateFn(cluster, "detect_vm_storage", "pve1")).toMatchObject({
      code: 0,
      stdout: "ceph-vm",
    });
  });

  it("takes the NFS share on a node its nodes list names, by the host name's first label", () => {
    expect(templateFn(cluster, "detect_vm_storage", "pve2").stdout).toBe("nas-images");
    expect(templateFn(cluster, "detect_vm_storage", "pve3.example.org").stdout).toBe("nas-images");
  });

  it("lists each storage's shared flag and nodes, a disabled shared one not at all", () => {
    expect(templateFn(cluster, "storages_with_images", "pve1").stdout.split("\n")).toEqual([
      "local-lvm lvmthin 0 -",
      "nas-images nfs 1 pve2,pve3",
      "ceph-vm rbd 1 -",
    ]);
  });

  it("falls back to local storage on a cluster without shared storage", () => {
    expect(
      templateFn(path.join(layouts, "installer-lvm-thin.cfg"), "detect_vm_storage", "pve1").stdout,
    ).toBe("local-lvm");
  });

  it("a host name it cannot read fails the choice; ensure_image_storage dies and changes nothing", () => {
    expect(templateFn(cluster, "detect_vm_storage", null).code).toBe(1);
    const before = fs.readFileSync(cluster, "utf8");
    const ensured = templateFn(cluster, "ensure_image_storage", null);
    expect(ensured.code).toBe(1);
    expect(ensured.stderr).toContain("cannot read this node's name");
    expect(fs.readFileSync(path.join(root, "etc/pve/storage.cfg"), "utf8")).toBe(before);
  });
});
