import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLab, type LabNode } from "../index";
import { labExecOk } from "../test-helpers";
import { apiGet, tokenAuth } from "./test-helpers";

/**
 * The simulated Proxmox API of an onboarded lab node: answers from the same state the tools
 * write, token auth with privilege separation, Proxmox's status codes and messages, faults.
 */

describe("lab Proxmox API on an onboarded node", () => {
  let lab: LabNode;
  let console_: string;
  let separated: string;
  let unseparated: string;

  beforeAll(async () => {
    lab = await startLab({
      state: "onboarded",
      storage: "dir",
      timeScale: 0.01,
      pve: { templates: [9000], apiAuthFailureDelayMs: 200 },
    });
    console_ = tokenAuth(lab.pve.token!);
    // A user who may audit VMs, with one token of each kind.
    const out = await labExecOk(
      lab,
      "pveum user add audit@pve && pveum acl modify /vms -user audit@pve -role PVEAuditor" +
        " && pveum user token add audit@pve sep --privsep 1 --output-format json" +
        " && pveum user token add audit@pve nosep --privsep 0 --output-format json",
    );
    const [sep, nosep] = out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { "full-tokenid": string; value: string });
    separated = tokenAuth({ id: sep!["full-tokenid"], secret: sep!.value });
    unseparated = tokenAuth({ id: nosep!["full-tokenid"], secret: nosep!.value });
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it("serves HTTPS with the certificate whose fingerprint it reports", async () => {
    const res = await apiGet(lab, "/version", console_);
    expect(res.status).toBe(200);
    expect(res.json?.data).toMatchObject({ release: "9.1" });
    expect(lab.api.certSha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(res.peerSha256).toBe(lab.api.certSha256);
    expect(lab.api.url).toBe(`https://127.0.0.1:${lab.api.port}`);
  });

  it("answers 401 authentication failure only after the configured delay", async () => {
    const wrong = await apiGet(lab, "/version", `PVEAPIToken=${lab.pve.token!.id}=wrong`);
    expect(wrong.status).toBe(401);
    expect(wrong.statusMessage).toBe("authentication failure");
    expect(wrong.ms).toBeGreaterThanOrEqual(190);
    const none = await apiGet(lab, "/version", null);
    expect(none.status).toBe(401);
  });

  it("lists templates with template: 1 and normal VMs without the key", async () => {
    await labExecOk(lab, "qm create 100 --name web --memory 1024");
    const res = await apiGet(lab, "/nodes/pve1/qemu", console_);
    const list = res.json?.data as Array<Record<string, unknown>>;
    expect(list.find((v) => v.vmid === 9000)).toMatchObject({ template: 1, status: "stopped" });
    expect(list.find((v) => v.vmid === 100)).not.toHaveProperty("template");
    const config = await apiGet(lab, "/nodes/pve1/qemu/9000/config", console_);
    expect(config.json?.data).toMatchObject({
      template: 1,
      scsi0: "local:9000/base-9000-disk-0.raw,size=3G",
    });
  });

  it("answers HTTP 500 with Proxmox's message for the config of a missing VM (also after qm destroy)", async () => {
    await labExecOk(lab, "qm create 555 --name doomed && qm destroy 555 --purge");
    const res = await apiGet(lab, "/nodes/pve1/qemu/555/config", console_);
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body)).toEqual({
      data: null,
      message: "Configuration file 'nodes/pve1/qemu-server/555.conf' does not exist\n",
    });
    const malformed = await apiGet(lab, "/nodes/pve1/qemu/abc/config", console_);
    expect(malformed.status).toBe(400);
  });

  it("leaves VMs out of the list silently but answers 403 for their config without VM.Audit", async () => {
    const list = await apiGet(lab, "/nodes/pve1/qemu", separated);
    expect(list.status).toBe(200);
    expect(list.json?.data).toEqual([]);
    for (const vmid of [9000, 9999]) {
      const config = await apiGet(lab, `/nodes/pve1/qemu/${vmid}/config`, separated);
      expect(config.status).toBe(403);
      expect(config.json?.message).toBe(`Permission check failed (/vms/${vmid}, VM.Audit)\n`);
    }
  });

  it("gives a privsep=1 token without own ACLs nothing and a privsep=0 token its user's privileges", async () => {
    const sepPerms = await apiGet(lab, "/access/permissions?path=/vms/9000", separated);
    expect(sepPerms.json?.data).toEqual({ "/vms/9000": {} });
    const nosepPerms = await apiGet(lab, "/access/permissions?path=/vms/9000", unseparated);
    expect(nosepPerms.json?.data).toMatchObject({ "/vms/9000": { "VM.Audit": 1 } });
    const list = await apiGet(lab, "/nodes/pve1/qemu", unseparated);
    expect((list.json?.data as Array<{ vmid: number }>).map((v) => v.vmid)).toContain(9000);
  });

  it("lists image storages with the content filter", async () => {
    const res = await apiGet(lab, "/nodes/pve1/storage?content=images", console_);
    expect((res.json?.data as Array<{ storage: string }>).map((s) => s.storage)).toEqual(["local"]);
    const status = await apiGet(lab, "/cluster/status", console_);
    expect(status.json?.data).toMatchObject([{ type: "node", name: "pve1", local: 1, online: 1 }]);
  });

  it("fault: the VM list answers 502", async () => {
    lab.api.faults.vmList502 = true;
    try {
      const res = await apiGet(lab, "/nodes/pve1/qemu", console_);
      expect(res.status).toBe(502);
      expect(res.contentType).toContain("text/html");
    } finally {
      lab.api.faults.vmList502 = false;
    }
  });

  it("fault: the VM list hangs", async () => {
    lab.api.faults.vmListHang = true;
    try {
      await expect(apiGet(lab, "/nodes/pve1/qemu", console_, { timeoutMs: 300 })).rejects.toThrow(
        "timeout",
      );
      expect((await apiGet(lab, "/version", console_)).status).toBe(200);
    } finally {
      lab.api.faults.vmListHang = false;
    }
  });

  it("fault: the config of an existing VM answers 500", async () => {
    lab.api.faults.config500Vmids = [9000];
    try {
      const res = await apiGet(lab, "/nodes/pve1/qemu/9000/config", console_);
      expect(res.status).toBe(500);
      expect((await apiGet(lab, "/nodes/pve1/qemu", console_)).status).toBe(200);
    } finally {
      lab.api.faults.config500Vmids = [];
    }
  });

  it("fault: the API is slow", async () => {
    lab.api.faults.delayMs = 300;
    try {
      expect((await apiGet(lab, "/version", console_)).ms).toBeGreaterThanOrEqual(290);
    } finally {
      lab.api.faults.delayMs = 0;
    }
  });

  it("pvesh answers from the same routes as root", async () => {
    const out = await labExecOk(
      lab,
      "pvesh get /nodes/pve1/storage --content images --output-format json",
    );
    expect((JSON.parse(out) as Array<{ storage: string }>).map((s) => s.storage)).toEqual([
      "local",
    ]);
  });
});
