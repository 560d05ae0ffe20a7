import { describe, expect, it } from "vitest";
import {
  aptErrors,
  desiredSources,
  disableDeb822,
  disableOneLine,
  listFileName,
  parseRepositoryProbe,
  planRepository,
  type RepositoryFacts,
} from "./install-proxmox-repository";

const URL = "http://download.proxmox.com/debian/pve";
const facts = (over: Partial<RepositoryFacts>): RepositoryFacts => ({
  keyringValid: true,
  files: new Map([["pve-install-repo.sources", desiredSources(URL)]]),
  listsPresent: true,
  ...over,
});

describe("InstallProxmoxRepository", () => {
  it("writes the guide's deb822 source, signed by the Proxmox keyring", () => {
    expect(desiredSources(URL)).toBe(
      "Types: deb\nURIs: http://download.proxmox.com/debian/pve\nSuites: trixie\n" +
        "Components: pve-no-subscription\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n",
    );
    expect(() => desiredSources("http://x\nTypes: deb")).toThrow();
    expect(listFileName(URL)).toBe("download.proxmox.com_debian_pve_dists_trixie_InRelease");
  });

  it("parses the keyring's first byte, every source file and the index state", () => {
    const parsed = parseRepositoryProbe(
      "keyring=99\n--clupilot-file-- debian.sources\nTypes: deb\n\n" +
        "--clupilot-file-- pve-enterprise.list\ndeb https://enterprise.proxmox.com/debian/pve trixie pve-enterprise\n\n" +
        "--clupilot--\nlists=missing\n",
    );
    expect(parsed.keyringValid).toBe(true);
    expect([...parsed.files.keys()]).toEqual(["debian.sources", "pve-enterprise.list"]);
    expect(parsed.files.get("debian.sources")).toBe("Types: deb\n");
    expect(parsed.listsPresent).toBe(false);
    expect(parseRepositoryProbe("keyring=3c\n--clupilot--\nlists=present\n").keyringValid).toBe(
      false,
    );
  });

  it("goal holds → an empty plan: nothing fetched, written or updated", () => {
    expect(planRepository(facts({}), URL)).toEqual({
      fetchKeyring: false,
      changes: [],
      update: false,
    });
  });

  it("a fresh host: key, source file and apt-get update", () => {
    const plan = planRepository(
      facts({ keyringValid: false, files: new Map(), listsPresent: false }),
      URL,
    );
    expect(plan).toEqual({
      fetchKeyring: true,
      changes: [{ kind: "write", name: "pve-install-repo.sources", content: desiredSources(URL) }],
      update: true,
    });
  });

  it("disables the enterprise repository: Enabled: no in deb822, a .list with nothing else removed", () => {
    const enterprise =
      "Types: deb\nURIs: https://enterprise.proxmox.com/debian/pve\nSuites: trixie\nComponents: pve-enterprise\n";
    expect(disableDeb822(enterprise)).toBe(`${enterprise}Enabled: no\n`);
    expect(disableDeb822(`${enterprise}Enabled: yes\n`)).toBe(`${enterprise}Enabled: no\n`);
    const mixed = `Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\n\n${enterprise}`;
    expect(disableDeb822(mixed)).toBe(`${mixed}Enabled: no\n`);

    const plan = planRepository(
      facts({
        files: new Map([
          ["pve-install-repo.sources", desiredSources(URL)],
          [
            "pve-enterprise.list",
            "deb https://enterprise.proxmox.com/debian/pve trixie pve-enterprise\n",
          ],
          ["ceph.sources", enterprise.replace("pve", "ceph-squid")],
          ["debian.sources", "Types: deb\nURIs: http://deb.debian.org/debian\n"],
        ]),
      }),
      URL,
    );
    expect(plan.changes).toEqual([
      { kind: "remove", name: "pve-enterprise.list", reason: "only the enterprise repository" },
      {
        kind: "write",
        name: "ceph.sources",
        content: `${enterprise.replace("pve", "ceph-squid")}Enabled: no\n`,
      },
    ]);
    expect(plan.update).toBe(true);
  });

  it("in a .list with other entries, only the enterprise line is commented out", () => {
    expect(
      disableOneLine(
        "deb http://deb.debian.org/debian trixie main\ndeb https://enterprise.proxmox.com/debian/pve trixie pve-enterprise\n",
      ),
    ).toBe(
      "deb http://deb.debian.org/debian trixie main\n# disabled by CluPilot (needs a subscription): deb https://enterprise.proxmox.com/debian/pve trixie pve-enterprise\n",
    );
  });

  it("apt's reason: its E: lines, deduplicated", () => {
    expect(
      aptErrors(
        "W: Some index files failed to download\nE: Failed to fetch http://x/InRelease  Temporary failure resolving 'x'\nE: Failed to fetch http://x/InRelease  Temporary failure resolving 'x'\n",
      ),
    ).toBe("Failed to fetch http://x/InRelease  Temporary failure resolving 'x'");
  });
});
