import { describe, expect, it } from "vitest";
import { decideHosts, parseHostnameProbe } from "./prepare-hostname";

const DEBIAN_HOSTS =
  "127.0.0.1\tlocalhost\n127.0.1.1\tpve1.example.com\tpve1\n\n" +
  "# The following lines are desirable for IPv6 capable hosts\n" +
  "::1     localhost ip6-localhost ip6-loopback\nff02::1 ip6-allnodes\n";

describe("PrepareHostname", () => {
  it("learns the address from the interface of the default route, not from where SSH arrives", () => {
    const facts = parseHostnameProbe(
      [
        "pve1\n",
        DEBIAN_HOSTS,
        '[{"dst":"default","gateway":"192.0.2.1","dev":"eno1"}]\n',
        '[{"ifname":"lo","addr_info":[{"family":"inet","local":"127.0.0.1","scope":"host"}]},' +
          '{"ifname":"docker0","addr_info":[{"family":"inet","local":"172.17.0.1","scope":"global"}]},' +
          '{"ifname":"eno1","addr_info":[{"family":"inet","local":"192.0.2.10","prefixlen":24,"scope":"global"}]}]\n',
      ].join("--clupilot--\n"),
    );
    expect(facts).toMatchObject({ hostname: "pve1", address: "192.0.2.10", hosts: DEBIAN_HOSTS });
  });

  it("no default route → no address, and says why", () => {
    const facts = parseHostnameProbe(
      ["pve1\n", DEBIAN_HOSTS, "[]\n", "[]\n"].join("--clupilot--\n"),
    );
    expect(facts).toMatchObject({
      address: null,
      addressProblem: "the host has no IPv4 default route",
    });
  });

  it("a correct entry is left alone", () => {
    expect(
      decideHosts("127.0.0.1\tlocalhost\n192.0.2.10 pve1.example.com pve1\n", "pve1", "192.0.2.10"),
    ).toEqual({ kind: "holds" });
  });

  it("Debian's 127.0.1.1 line becomes the host's own address in its place, keeping the FQDN and every other line", () => {
    expect(decideHosts(DEBIAN_HOSTS, "pve1", "192.0.2.10")).toEqual({
      kind: "rewrite",
      content: DEBIAN_HOSTS.replace("127.0.1.1\tpve1.example.com", "192.0.2.10\tpve1.example.com"),
      replaced: ["127.0.1.1\tpve1.example.com\tpve1"],
    });
  });

  it("other names on a wrong line survive on it; a stale address for the host is dropped", () => {
    const decision = decideHosts(
      "127.0.0.1 localhost pve1\n198.51.100.7 pve1 old-name\n",
      "pve1",
      "192.0.2.10",
    );
    expect(decision).toEqual({
      kind: "rewrite",
      content: "192.0.2.10\tpve1\n127.0.0.1\tlocalhost\n198.51.100.7\told-name\n",
      replaced: ["127.0.0.1 localhost pve1", "198.51.100.7 pve1 old-name"],
    });
  });

  it("no line names the host → its line goes right after localhost", () => {
    expect(decideHosts("127.0.0.1 localhost\n::1 localhost\n", "pve1", "192.0.2.10")).toMatchObject(
      {
        content: "127.0.0.1 localhost\n192.0.2.10\tpve1\n::1 localhost\n",
      },
    );
  });

  it("a global IPv6 entry for the host is fine; ::1 for it is not", () => {
    expect(decideHosts("192.0.2.10 pve1\n2001:db8::10 pve1\n", "pve1", "192.0.2.10").kind).toBe(
      "holds",
    );
    expect(
      decideHosts("192.0.2.10 pve1\n::1 localhost pve1\n", "pve1", "192.0.2.10"),
    ).toMatchObject({
      content: "192.0.2.10 pve1\n::1\tlocalhost\n",
    });
  });

  it("refuses a host name that is not a valid name", () => {
    expect(decideHosts(DEBIAN_HOSTS, "bad name", "192.0.2.10").kind).toBe("refuse");
  });
});
