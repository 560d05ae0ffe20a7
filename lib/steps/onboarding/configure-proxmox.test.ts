import { describe, expect, it } from "vitest";
import {
  bridgeApplied,
  bridgeConfigured,
  bridgeInterfaces,
  configureProxmoxStep,
  describeNetwork,
  parseNetworkProbe,
} from "./configure-proxmox";

const DEBIAN = `# This file describes the network interfaces available on your system
source /etc/network/interfaces.d/*

# The loopback network interface
auto lo
iface lo inet loopback

# The primary network interface
allow-hotplug eno1
iface eno1 inet static
	address 192.0.2.10/24
	gateway 192.0.2.1
	dns-nameservers 192.0.2.53

iface eno1 inet6 static
	address 2001:db8::10/64
	gateway 2001:db8::1

auto eno2
iface eno2 inet dhcp
`;

const probe = (route: string, addr: string, interfaces = DEBIAN) =>
  [route, addr, interfaces, "ifreload=yes\n", "", ""].join("--clupilot--\n");

describe("ConfigureProxmox", () => {
  it("moves the primary interface's stanzas onto vmbr0 and keeps every other line", () => {
    const result = bridgeInterfaces(DEBIAN, "eno1");
    expect("content" in result && result.content)
      .toBe(`# This file describes the network interfaces available on your system
source /etc/network/interfaces.d/*

# The loopback network interface
auto lo
iface lo inet loopback

# The primary network interface
iface eno1 inet manual

auto vmbr0
iface vmbr0 inet static
	address 192.0.2.10/24
	gateway 192.0.2.1
	dns-nameservers 192.0.2.53
	bridge-ports eno1
	bridge-stp off
	bridge-fd 0

iface vmbr0 inet6 static
	address 2001:db8::10/64
	gateway 2001:db8::1


auto eno2
iface eno2 inet dhcp
`);
    expect(bridgeConfigured("content" in result ? result.content : "")).toBe(true);
    expect(bridgeConfigured(DEBIAN)).toBe(false);
  });

  it("refuses when the primary interface is configured outside the file", () => {
    expect(bridgeInterfaces(DEBIAN, "enp3s0")).toEqual({
      refuse: expect.stringMatching(
        /^enp3s0 \(the interface of the default route\) has no "iface enp3s0 inet" stanza/,
      ) as string,
    });
  });

  it("the bridge is live only with the default route, an address and a port on it", () => {
    const live = parseNetworkProbe(
      probe(
        '[{"dst":"default","gateway":"192.0.2.1","dev":"vmbr0"}]\n',
        '[{"ifname":"eno1","master":"vmbr0","addr_info":[]},{"ifname":"vmbr0","addr_info":[{"family":"inet","local":"192.0.2.10","prefixlen":24,"scope":"global"},{"family":"inet6","local":"2001:db8::10","prefixlen":64,"scope":"global"}]}]\n',
      ),
    );
    expect(live.addresses.get("vmbr0")).toEqual(["192.0.2.10/24"]);
    expect(live.ports.get("vmbr0")).toEqual(["eno1"]);
    expect(bridgeApplied(live)).toBe(true);
    const notYet = parseNetworkProbe(
      probe(
        '[{"dst":"default","gateway":"192.0.2.1","dev":"eno1"}]\n',
        '[{"ifname":"eno1","addr_info":[{"family":"inet","local":"192.0.2.10","prefixlen":24,"scope":"global"}]}]\n',
      ),
    );
    expect(notYet.defaultDev).toBe("eno1");
    expect(bridgeApplied(notYet)).toBe(false);
  });

  it("reads the rollback timer: pending with its seconds left on the host's clock, and the line a rollback that ran left", () => {
    const facts = parseNetworkProbe(
      [
        '[{"dst":"default","gateway":"192.0.2.1","dev":"eno1"}]\n',
        '[{"ifname":"eno1","addr_info":[{"family":"inet","local":"192.0.2.10","prefixlen":24,"scope":"global"}]},{"ifname":"vmbr0","addr_info":[]}]\n',
        DEBIAN,
        "ifreload=yes\nsystemd-run=yes\n",
        "",
        "",
        "units:\nactive\ninactive\nnow=1000\ndeadline=1042\n",
        "2026-12-01T15:00:00Z ifreload-exit=0\n",
        "",
      ].join("--clupilot--\n"),
    );
    expect(facts.systemdRun).toBe(true);
    expect(facts.defaultGateway).toBe("192.0.2.1");
    expect(facts.rollback).toEqual({
      timerActive: true,
      serviceActive: false,
      secondsLeft: 42,
      ran: "2026-12-01T15:00:00Z ifreload-exit=0",
      log: "",
    });
    expect(describeNetwork(facts)).toBe(
      "default route via eno1 (gateway 192.0.2.1); eno1 192.0.2.10/24; vmbr0 no address",
    );
  });

  it("a probe without timer sections (no deadline written) reads as no timer and no rollback", () => {
    const facts = parseNetworkProbe(probe("[]\n", "[]\n"));
    expect(facts.rollback).toEqual({
      timerActive: false,
      serviceActive: false,
      secondsLeft: null,
      ran: null,
      log: "",
    });
  });

  it("reads no timer when systemctl printed nothing, and the service that runs the rollback as pending", () => {
    const timer = (section: string) =>
      parseNetworkProbe(
        ["[]\n", "[]\n", DEBIAN, "ifreload=yes\n", "", "", section, "", ""].join("--clupilot--\n"),
      ).rollback;
    expect(timer("units:\nnow=1000\ndeadline=1042\n")).toMatchObject({
      timerActive: false,
      serviceActive: false,
      secondsLeft: 42,
    });
    expect(timer("units:\ninactive\nactivating\nnow=1000\ndeadline=\n")).toMatchObject({
      timerActive: false,
      serviceActive: true,
      secondsLeft: null,
    });
  });

  it("refuses a rollback window the step's 600 s cannot wait out", () => {
    expect(() => configureProxmoxStep({ rollbackSeconds: 301 })).toThrow(/from 5 to 300/);
    expect(() => configureProxmoxStep({ rollbackSeconds: 2 })).toThrow(/from 5 to 300/);
    expect(configureProxmoxStep({ rollbackSeconds: 5 }).name).toBe("ConfigureProxmox");
  });
});
