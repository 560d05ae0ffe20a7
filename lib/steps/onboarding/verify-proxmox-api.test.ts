import { missingPrivileges, requiredPrivileges } from "@/lib/proxmox/console-identity";
import { describe, expect, it } from "vitest";
import { judgeNodeName, missingPrivilegesReason } from "./verify-proxmox-api";

describe("VerifyProxmoxApi: the node name", () => {
  it("an exact match passes", () => {
    expect(judgeNodeName("pve1", ["pve1", "pve2"])).toBeNull();
  });

  it("a match in another case fails naming both spellings", () => {
    const outcome = judgeNodeName("PVE1", ["pve1"]);
    expect(outcome).toMatchObject({ kind: "fail" });
    expect(outcome && "reason" in outcome && outcome.reason).toMatch(
      /differs in case.*"PVE1".*"pve1"/,
    );
  });

  it("a domain suffix fails naming the short name Proxmox uses", () => {
    const outcome = judgeNodeName("pve1.example.com", ["pve1"]);
    expect(outcome && "reason" in outcome && outcome.reason).toMatch(/domain suffix.*"pve1"/);
  });

  it("an unknown name fails listing the nodes Proxmox knows", () => {
    const outcome = judgeNodeName("pve9", ["pve1"]);
    expect(outcome && "reason" in outcome && outcome.reason).toMatch(/no node "pve9".*"pve1"/);
  });
});

describe("VerifyProxmoxApi: privileges", () => {
  const required = requiredPrivileges("pve1");
  const all = () => Object.fromEntries(required.map((r) => [r.privilege, 0]));
  const answers = (omit?: string) =>
    new Map(
      [...new Set(required.map((r) => r.path))].map((path) => {
        const privs = all();
        if (omit) delete privs[omit];
        return [path, { [path]: privs }];
      }),
    );

  it("fills in the node in every path", () => {
    expect(required.map((r) => r.path)).toContain("/nodes/pve1");
    expect(required.every((r) => !r.path.includes("{node}"))).toBe(true);
  });

  it("a privilege whose propagate flag is 0 is still held: the key is the grant", () => {
    expect(missingPrivileges(required, answers())).toEqual([]);
  });

  it("a missing privilege is named with what it is for", () => {
    const missing = missingPrivileges(required, answers("VM.Audit"));
    expect(missing.map((m) => m.privilege)).toEqual(["VM.Audit"]);
    const reason = missingPrivilegesReason("clupilot@pve!console", missing);
    expect(reason).toContain("lacks VM.Audit on /vms (template checks");
    expect(reason).toContain("privilege separation");
    expect(reason).toContain(
      "pveum acl modify / --tokens 'clupilot@pve!console' --roles 'CluPilot'",
    );
  });

  it("an empty answer (a separated token without its own ACL) lacks everything", () => {
    const empty = new Map(required.map((r) => [r.path, {}]));
    expect(missingPrivileges(required, empty)).toHaveLength(required.length);
  });
});
