import { describe, expect, it } from "vitest";

import { macOfMagicPacket } from "@/lab/power-controllers/wol";

import { ZPowerControllerInput } from "./schemas";
import { magicPacket } from "./wol";

const fieldsOf = (input: unknown) => {
  const parsed = ZPowerControllerInput.safeParse(input);
  return parsed.success ? [] : parsed.error.issues.map((issue) => String(issue.path[0]));
};

describe("ZPowerControllerInput", () => {
  it("takes each kind with its defaults: Redfish 443 and system 1, IPMI 623, Wake-on-LAN 9", () => {
    expect(
      ZPowerControllerInput.parse({
        kind: "redfish",
        address: "idrac-pve1.example",
        username: "console",
        password: "pw",
        port: "",
        systemId: "",
      }),
    ).toEqual({
      kind: "redfish",
      address: "idrac-pve1.example",
      port: 443,
      username: "console",
      password: "pw",
      systemId: "1",
      auth: "basic",
    });
    expect(
      ZPowerControllerInput.parse({
        kind: "redfish",
        address: "10.0.1.6",
        username: "console",
        auth: "session",
      }),
    ).toMatchObject({ kind: "redfish", auth: "session" });
    // Through the cluster: nothing to enter; whatever else comes along is dropped.
    expect(ZPowerControllerInput.parse({ kind: "pve-wol", mac: "$(reboot)" })).toEqual({
      kind: "pve-wol",
    });
    expect(
      ZPowerControllerInput.parse({ kind: "ipmi", address: "10.0.1.5", username: "root" }),
    ).toEqual({ kind: "ipmi", address: "10.0.1.5", port: 623, username: "root" });
    expect(
      ZPowerControllerInput.parse({
        kind: "wol",
        mac: "AA-BB-CC-DD-EE-0F",
        broadcastAddress: "192.168.1.255",
      }),
    ).toEqual({
      kind: "wol",
      mac: "aa:bb:cc:dd:ee:0f",
      broadcastAddress: "192.168.1.255",
      port: 9,
    });
  });

  it("refuses what could pass for an ipmitool option, a shell word or a path, naming the field", () => {
    const ipmi = { kind: "ipmi", address: "10.0.1.5", username: "root", password: "pw" };
    expect(fieldsOf({ ...ipmi, address: "-I" })).toEqual(["address"]);
    expect(fieldsOf({ ...ipmi, address: "$(reboot)" })).toEqual(["address"]);
    expect(fieldsOf({ ...ipmi, username: "-E" })).toEqual(["username"]);
    expect(fieldsOf({ ...ipmi, password: "a\u0000b" })).toEqual(["password"]);
    expect(fieldsOf({ ...ipmi, password: "x".repeat(21) })).toEqual(["password"]);
    expect(fieldsOf({ ...ipmi, kind: "redfish", systemId: "1/../../Managers" })).toEqual([
      "systemId",
    ]);
    expect(fieldsOf({ kind: "smoke-signals" })).toEqual(["kind"]);
    const redfish = { ...ipmi, kind: "redfish" };
    expect(fieldsOf({ ...redfish, auth: "digest" })).toEqual(["auth"]);
    expect(fieldsOf({ ...redfish, auth: "session\nX-Injected: 1" })).toEqual(["auth"]);
    expect(fieldsOf({ ...redfish, auth: ["session"] })).toEqual(["auth"]);
    expect(fieldsOf({ ...redfish, auth: { $ne: 1 } })).toEqual(["auth"]);
  });
});

describe("the magic packet", () => {
  it("is six 0xFF bytes and the MAC sixteen times, as the lab's listener reads it", () => {
    const packet = magicPacket("52:54:00:c1:00:0a");
    expect(packet.length).toBe(102);
    expect(packet.subarray(0, 6)).toEqual(Buffer.alloc(6, 0xff));
    expect(macOfMagicPacket(packet)).toBe("52:54:00:c1:00:0a");
    expect(macOfMagicPacket(packet.subarray(0, 101))).toBeNull();
    expect(() => magicPacket("52:54:00")).toThrow(/not a MAC/);
  });
});
