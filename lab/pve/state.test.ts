import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { effectivePrivs, parseUserCfg, splitPrivList, verifyPrivs } from "./access";
import { STORAGE_LAYOUTS } from "./seed";
import {
  formatSize,
  formatStorageCfg,
  parseStorageCfg,
  parseVolumeId,
  storageContent,
} from "./state";

const SAMPLES = path.resolve(import.meta.dirname, "../../test/fixtures/proxmox/storage-cfg");

describe("storage.cfg", () => {
  const samples = fs.readdirSync(SAMPLES).filter((f) => f.endsWith(".cfg"));

  it("has real layouts to read", () => {
    expect(samples.length).toBeGreaterThanOrEqual(6);
  });

  it.each(samples)("keeps every storage, option and flag of %s on rewrite", (file) => {
    const text = fs.readFileSync(path.join(SAMPLES, file), "utf8");
    const parsed = parseStorageCfg(text);
    const again = parseStorageCfg(formatStorageCfg(parsed));
    expect(again).toEqual(parsed);
    const blocks = text.split("\n").filter((l) => /^\S+: \S+$/.test(l));
    expect(parsed.storages.map((s) => `${s.type}: ${s.id}`)).toEqual(blocks);
  });

  it("reads the disable and sparse flags as options without a value", () => {
    const cfg = parseStorageCfg(STORAGE_LAYOUTS.zfs);
    expect(cfg.storages[1]?.options).toContainEqual(["sparse", null]);
    expect(storageContent(cfg.storages[1]!)).toEqual(["images", "rootdir"]);
  });

  it.each([
    ["dir-no-images", "debian-install-no-images.cfg"],
    ["dir", "installer-ext4-local-only.cfg"],
    ["lvm-thin", "installer-lvm-thin.cfg"],
    ["zfs", "installer-zfs.cfg"],
  ] as const)("seeds the %s layout verbatim as %s", (layout, file) => {
    expect(STORAGE_LAYOUTS[layout]).toBe(fs.readFileSync(path.join(SAMPLES, file), "utf8"));
  });

  it("seeds `local` without images for Proxmox installed over Debian", () => {
    const cfg = parseStorageCfg(STORAGE_LAYOUTS["dir-no-images"]);
    expect(storageContent(cfg.storages[0]!)).not.toContain("images");
  });
});

describe("volume ids and sizes", () => {
  it("parses directory and block volume ids", () => {
    expect(parseVolumeId("local:9000/vm-9000-disk-0.raw")).toEqual({
      storage: "local",
      name: "vm-9000-disk-0.raw",
      vmid: 9000,
    });
    expect(parseVolumeId("local-lvm:base-9000-disk-0")).toEqual({
      storage: "local-lvm",
      name: "base-9000-disk-0",
      vmid: 9000,
    });
  });

  it("renders size= like Proxmox", () => {
    expect(formatSize(3 * 1024 ** 3)).toBe("3G");
    expect(formatSize(2252 * 1024 ** 2)).toBe("2252M");
  });
});

describe("privileges", () => {
  const cfg = parseUserCfg(
    [
      "user:ops@pve:1:0:::::",
      "token:ops@pve!sep:0:1::",
      "token:ops@pve!nosep:0:0::",
      "token:ops@pve!own:0:1::",
      "role:Reader:VM.Audit,Sys.Audit:",
      "acl:1:/:ops@pve:Reader:",
      "acl:1:/vms:ops@pve!own:PVEVMAdmin:",
      "acl:0:/nodes:ops@pve:PVEAuditor:",
    ].join("\n"),
  );

  it("gives a privilege-separated token without own ACLs nothing", () => {
    expect(effectivePrivs(cfg, "ops@pve!sep", "/vms/100").size).toBe(0);
  });

  it("gives a token without privilege separation exactly its user's privileges", () => {
    expect(effectivePrivs(cfg, "ops@pve!nosep", "/vms/100")).toEqual(
      effectivePrivs(cfg, "ops@pve", "/vms/100"),
    );
    expect(effectivePrivs(cfg, "ops@pve!nosep", "/vms/100").has("VM.Audit")).toBe(true);
  });

  it("intersects a separated token's own ACLs with its user's", () => {
    const privs = effectivePrivs(cfg, "ops@pve!own", "/vms/100");
    expect([...privs.keys()]).toEqual(["VM.Audit"]);
  });

  it("reports the propagate flag and applies propagate=0 only to its own path", () => {
    expect(effectivePrivs(cfg, "ops@pve", "/nodes").get("Sys.Audit")).toBe(0);
    expect(effectivePrivs(cfg, "ops@pve", "/nodes/pve1").get("Sys.Audit")).toBe(1);
    expect(effectivePrivs(cfg, "ops@pve", "/nodes/pve1").has("Datastore.Audit")).toBe(false);
  });

  it("rejects VM.Monitor, which PVE 9 removed", () => {
    expect(() => verifyPrivs(splitPrivList("VM.Audit VM.Monitor"))).toThrow(
      "invalid privilege 'VM.Monitor'",
    );
    expect(() => verifyPrivs(splitPrivList("VM.Audit,VM.GuestAgent.Audit"))).not.toThrow();
  });
});
