import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startLab, type LabNode } from "../index";
import { labExec } from "../test-helpers";
import { markInstalled } from "./dpkg-status";

const BRIDGE = `auto lo
iface lo inet loopback

iface eno1 inet manual

auto vmbr0
iface vmbr0 inet static
\taddress 192.0.2.10/24
\tgateway 192.0.2.1
\tbridge-ports eno1
\tbridge-stp off
\tbridge-fd 0
`;

describe("lab hostname and ifreload", () => {
  let lab: LabNode;
  beforeAll(async () => {
    lab = await startLab({ timeScale: 0 });
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it("hostnamectl set-hostname writes /etc/hostname; hostname -f / -i read /etc/hosts; -I the applied addresses", async () => {
    await writeFile(
      path.join(lab.root, "etc/hosts"),
      "127.0.0.1\tlocalhost\n192.0.2.10\tpve7.example.com\tpve7\n",
    );
    const r = await labExec(
      lab,
      "hostnamectl set-hostname pve7 && hostname && hostname -f && hostname -i && hostname -I && uname -n",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("pve7\npve7.example.com\n192.0.2.10 \n192.0.2.10 \npve7\n");
    expect(await readFile(path.join(lab.root, "etc/hostname"), "utf8")).toBe("pve7\n");
    expect((await labExec(lab, "hostnamectl set-hostname 'bad name!'")).code).toBe(1);
  });

  it("ifreload exists only with ifupdown2 installed", async () => {
    expect((await labExec(lab, "ifreload -a")).code).toBe(127);
    markInstalled(lab.root, [{ name: "ifupdown2", version: "3.3.0-1+pmx10", architecture: "all" }]);
  });

  it("a valid vmbr0 bridge is applied and recorded", async () => {
    await writeFile(path.join(lab.root, "etc/network/interfaces"), BRIDGE);
    const r = await labExec(lab, "ifreload -a");
    expect(r.code, r.stderr).toBe(0);
    expect(await readFile(path.join(lab.root, ".lab/network-applied"), "utf8")).toBe(BRIDGE);
    const applied = JSON.parse(
      await readFile(path.join(lab.root, ".lab/network-applied.json"), "utf8"),
    ) as { ifaces: { name: string; bridgePorts: string[] | null }[] };
    expect(applied.ifaces.find((i) => i.name === "vmbr0")?.bridgePorts).toEqual(["eno1"]);
  });

  it("ip addr shows each link's master with its addresses; with -4 only links that carry IPv4", async () => {
    type Entry = { ifname: string; master?: string; addr_info: { local: string }[] };
    const list = async (command: string) => {
      const r = await labExec(lab, command);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Entry[];
    };
    const all = await list("ip -j addr show");
    expect(all.find((e) => e.ifname === "eno1")).toMatchObject({ master: "vmbr0", addr_info: [] });
    expect(all.find((e) => e.ifname === "vmbr0")?.addr_info.map((a) => a.local)).toEqual([
      "192.0.2.10",
    ]);
    const inet = await list("ip -j -4 addr show");
    expect(inet.map((e) => e.ifname)).toEqual(["lo", "vmbr0"]);
  });

  it.each([
    [
      "a missing bridge-ports line",
      BRIDGE.replace("\tbridge-ports eno1\n", ""),
      "bridge-ports missing",
    ],
    [
      "a port that does not exist",
      BRIDGE.replace("bridge-ports eno1", "bridge-ports eth9"),
      "bridge port eth9 does not exist",
    ],
    ["a bad address", BRIDGE.replace("192.0.2.10/24", "192.0.2.300/24"), "invalid address"],
    [
      "a gateway outside the subnet",
      BRIDGE.replace("gateway 192.0.2.1", "gateway 198.51.100.1"),
      "Nexthop has invalid gateway",
    ],
    ["an unknown keyword", `${BRIDGE}\tbridge-potrs eno1\n`, "unsupported keyword (bridge-potrs)"],
  ])("an invalid file (%s) fails and leaves the old config", async (_what, text, message) => {
    await writeFile(path.join(lab.root, "etc/network/interfaces"), text);
    const r = await labExec(lab, "ifreload -a");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(message);
    expect(await readFile(path.join(lab.root, ".lab/network-applied"), "utf8")).toBe(BRIDGE);
  });
});
