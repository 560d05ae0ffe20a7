import { CONSOLE_PRIVILEGE_NAMES } from "@/lib/proxmox/console-identity";
import { describe, expect, it } from "vitest";
import {
  accessCommand,
  parseAccessProbe,
  parseTokenAdd,
  planAccess,
  type AccessFacts,
} from "./create-api-token";

const FINGERPRINT =
  "12:F5:0E:6A:2F:EF:EC:FB:74:4D:71:10:BB:40:A7:97:5D:99:4B:58:09:66:21:12:E0:D6:EA:EE:93:12:A3:67";

/** Output of ACCESS_PROBE on a lab node in state "onboarded" (roles trimmed). */
function probeOutput(overrides: Partial<Record<string, string>> = {}) {
  const parts = {
    users:
      '[{"userid":"root@pam","enable":1,"expire":0,"realm-type":"pam","tokens":[]},' +
      '{"userid":"clupilot@pve","enable":1,"expire":0,"comment":"CluPilot console","realm-type":"pve"}]\n\n--clupilot-- users 0\n',
    roles:
      '[{"roleid":"Administrator","privs":"Sys.Audit,VM.Audit","special":1},' +
      `{"roleid":"CluPilot","privs":"${CONSOLE_PRIVILEGE_NAMES.join(",")}","special":0}]\n\n--clupilot-- roles 0\n`,
    acls:
      '[{"path":"/","type":"user","ugid":"clupilot@pve","roleid":"CluPilot","propagate":1},' +
      '{"path":"/","type":"token","ugid":"clupilot@pve!console","roleid":"CluPilot","propagate":1}]\n\n--clupilot-- acls 0\n',
    tokens: '[{"tokenid":"console","privsep":1,"expire":0}]\n\n--clupilot-- tokens 0\n',
    cert: `/etc/pve/local/pve-ssl.pem\nsha256 Fingerprint=${FINGERPRINT}\n\n--clupilot-- cert 0\n`,
    nodename: "pve1\n\n--clupilot-- nodename 0\n",
    cluster: "standalone\n\n--clupilot-- cluster 0\n",
    ...overrides,
  };
  return Object.values(parts).join("");
}

const complete: AccessFacts = {
  userExists: true,
  rolePrivs: [...CONSOLE_PRIVILEGE_NAMES],
  userAclOnRoot: true,
  tokenAclOnRoot: true,
  token: { privsep: true },
  certPath: "/etc/pve/local/pve-ssl.pem",
  certSha256: FINGERPRINT,
  nodeName: "pve1",
  clusterMember: false,
};

describe("CreateApiToken: reading the host", () => {
  it("reads user, role, ACLs, token, certificate fingerprint and node name", () => {
    expect(parseAccessProbe(probeOutput())).toEqual(complete);
  });

  it("a missing user makes the failed token list irrelevant (it fails by design)", () => {
    const facts = parseAccessProbe(
      probeOutput({
        users: '[{"userid":"root@pam","enable":1}]\n\n--clupilot-- users 0\n',
        acls: "[]\n\n--clupilot-- acls 0\n",
        tokens: "\n--clupilot-- tokens 255\n",
      }),
    );
    expect(facts).toMatchObject({
      userExists: false,
      token: null,
      userAclOnRoot: false,
      tokenAclOnRoot: false,
    });
  });

  it("a failed user list is 'could not ask', never 'absent': it throws", () => {
    expect(() => parseAccessProbe(probeOutput({ users: "\n--clupilot-- users 255\n" }))).toThrow(
      /pveum user list failed \(exit 255\)/,
    );
  });

  it("a failed token list of an existing user throws", () => {
    expect(() =>
      parseAccessProbe(probeOutput({ tokens: "ipcc_send_rec failed\n--clupilot-- tokens 255\n" })),
    ).toThrow(/token list failed/);
  });

  it("a missing certificate throws instead of pinning nothing", () => {
    expect(() =>
      parseAccessProbe(
        probeOutput({ cert: "/etc/pve/local/pve-ssl.pem\n\n--clupilot-- cert 1\n" }),
      ),
    ).toThrow(/API certificate/);
  });

  it("takes the node name up to the first dot, as Proxmox does", () => {
    expect(
      parseAccessProbe(probeOutput({ nodename: "pve1.example.com\n--clupilot-- nodename 0\n" }))
        .nodeName,
    ).toBe("pve1");
  });

  it("an ACL without propagation, or on another path, does not count", () => {
    const facts = parseAccessProbe(
      probeOutput({
        acls:
          '[{"path":"/","type":"user","ugid":"clupilot@pve","roleid":"CluPilot","propagate":0},' +
          '{"path":"/vms","type":"token","ugid":"clupilot@pve!console","roleid":"CluPilot","propagate":1}]\n--clupilot-- acls 0\n',
      }),
    );
    expect(facts.userAclOnRoot).toBe(false);
    expect(facts.tokenAclOnRoot).toBe(false);
  });
});

describe("CreateApiToken: the decision", () => {
  it("everything in place and the secret held → nothing to do (untouched)", () => {
    expect(planAccess(complete, "held")).toEqual([]);
  });

  it("a fresh node → user, role, user ACL, token, token ACL, in that order", () => {
    const fresh: AccessFacts = {
      ...complete,
      userExists: false,
      rolePrivs: null,
      userAclOnRoot: false,
      tokenAclOnRoot: false,
      token: null,
    };
    expect(planAccess(fresh, "none").map((a) => a.kind)).toEqual([
      "createUser",
      "createRole",
      "grantUser",
      "createToken",
      "grantToken",
    ]);
  });

  it("a role whose privilege list differs is fixed, in either direction", () => {
    expect(planAccess({ ...complete, rolePrivs: ["VM.Audit"] }, "held")).toEqual([
      { kind: "fixRole", had: ["VM.Audit"] },
    ]);
    expect(
      planAccess({ ...complete, rolePrivs: [...CONSOLE_PRIVILEGE_NAMES, "VM.Allocate"] }, "held"),
    ).toHaveLength(1);
    expect(
      planAccess({ ...complete, rolePrivs: [...CONSOLE_PRIVILEGE_NAMES].reverse() }, "held"),
    ).toEqual([]);
  });

  it("the token exists but the console lost its secret → rotate (and grant the new token)", () => {
    expect(planAccess(complete, "none").map((a) => a.kind)).toEqual(["rotateToken", "grantToken"]);
  });

  it("the API refuses the secret the console holds → rotate", () => {
    expect(planAccess(complete, "refused")[0]).toMatchObject({ kind: "rotateToken" });
  });

  it("on a cluster's member a secret the console lacks or that is refused is adopted from the cluster, never rotated (the token is every member's)", () => {
    const member = { ...complete, clusterMember: true };
    for (const secret of ["none", "refused"] as const) {
      expect(planAccess(member, secret)).toEqual([
        { kind: "adoptToken", why: expect.stringContaining("shared by the cluster") },
      ]);
    }
    expect(planAccess(member, "held")).toEqual([]);
  });

  it("a cluster's member without the token yet, or with one lacking privilege separation, gets a new one like any node", () => {
    const member = { ...complete, clusterMember: true };
    expect(planAccess({ ...member, token: null }, "none").map((a) => a.kind)).toEqual([
      "createToken",
      "grantToken",
    ]);
    expect(planAccess({ ...member, token: { privsep: false } }, "held")[0]).toMatchObject({
      kind: "rotateToken",
    });
  });

  it("a token without privilege separation is replaced by a separated one", () => {
    expect(planAccess({ ...complete, token: { privsep: false } }, "held")[0]).toMatchObject({
      kind: "rotateToken",
      why: expect.stringContaining("privilege separation"),
    });
  });

  it("a token that lost its own ACL gets it back (the privilege-separation trap)", () => {
    expect(planAccess({ ...complete, tokenAclOnRoot: false }, "held")).toEqual([
      { kind: "grantToken" },
    ]);
  });
});

describe("CreateApiToken: commands and the token answer", () => {
  it("the role never names VM.Monitor (removed in PVE 9)", () => {
    expect(CONSOLE_PRIVILEGE_NAMES).not.toContain("VM.Monitor");
    expect(accessCommand({ kind: "createRole" })).not.toContain("VM.Monitor");
  });

  it("rotation removes the token before adding it again, with privilege separation", () => {
    const command = accessCommand({ kind: "rotateToken", why: "x" });
    expect(command).toMatch(/token remove .* && pveum user token add .*--privsep 1/);
  });

  it("the cluster check is read, and a check that did not answer throws instead of reading 'standalone'", () => {
    expect(
      parseAccessProbe(probeOutput({ cluster: "member\n\n--clupilot-- cluster 0\n" }))
        .clusterMember,
    ).toBe(true);
    expect(() => parseAccessProbe(probeOutput({ cluster: "\n--clupilot-- cluster 2\n" }))).toThrow(
      /corosync\.conf failed \(exit 2\)/,
    );
    expect(() => parseAccessProbe(probeOutput({ cluster: undefined }))).toThrow(
      /lacks its cluster section/,
    );
  });

  it("adopting reads only the console token's line of the cluster's token.cfg, quoted", () => {
    const command = accessCommand({ kind: "adoptToken", why: "x" });
    expect(command).toContain("-v id='clupilot@pve!console'");
    expect(command).toContain("/etc/pve/priv/token.cfg");
  });

  it("reads the secret from pveum's JSON answer", () => {
    expect(
      parseTokenAdd(
        '{"full-tokenid":"clupilot@pve!console","info":{"privsep":"1"},"value":"5f9c4c8e-6f0a-4a7e-9d55-0a0b6c1d2e3f"}\n',
      ),
    ).toBe("5f9c4c8e-6f0a-4a7e-9d55-0a0b6c1d2e3f");
    expect(() => parseTokenAdd('{"full-tokenid":"someone@pve!other","value":"x"}')).toThrow(
      /expected clupilot@pve!console/,
    );
  });
});
