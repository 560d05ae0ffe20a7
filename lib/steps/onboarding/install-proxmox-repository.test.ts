import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  aptUpdateJobBody,
  chooseRepository,
  desiredEnterpriseSources,
  desiredSources,
  judgeRepository,
  disableDeb822,
  disableOneLine,
  listFileName,
  parseRepositoryProbe,
  planRepository,
  keyringRefusal,
  type RepositoryFacts,
} from "./install-proxmox-repository";

const URL = "http://download.proxmox.com/debian/pve";
const KEY = "24B30F06ECC1836A4E5EFECBA7BCD1420BFE778E";
const BOOKWORM_KEY = "F4E136C67CDCE41AE6DE6FC81140AF8F639E0C39";
const facts = (over: Partial<RepositoryFacts>): RepositoryFacts => ({
  keyringFingerprints: [KEY],
  files: new Map([["pve-install-repo.sources", desiredSources(URL)]]),
  listsPresent: true,
  enterpriseListsPresent: false,
  subscriptionStatus: null,
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

  it("parses the keyring's fingerprints, every source file and the index state", () => {
    const parsed = parseRepositoryProbe(
      `keyring=${BOOKWORM_KEY} ${KEY.toLowerCase()} \n--clupilot-file-- debian.sources\nTypes: deb\n\n` +
        "--clupilot-file-- pve-enterprise.list\ndeb https://enterprise.proxmox.com/debian/pve trixie pve-enterprise\n\n" +
        "--clupilot--\nlists=missing\n",
    );
    expect(parsed.keyringFingerprints).toEqual([BOOKWORM_KEY, KEY]);
    expect([...parsed.files.keys()]).toEqual(["debian.sources", "pve-enterprise.list"]);
    expect(parsed.files.get("debian.sources")).toBe("Types: deb\n");
    expect(parsed.listsPresent).toBe(false);
    // An HTML page saved as the keyring: gpg finds no key in it.
    expect(parseRepositoryProbe("keyring=\n--clupilot--\n").keyringFingerprints).toEqual([]);
    expect(parseRepositoryProbe("keyring=missing\n--clupilot--\n").keyringFingerprints).toBe(null);
    expect(parseRepositoryProbe("keyring=no-gpg\n--clupilot--\n").keyringFingerprints).toBe(null);
  });

  it("goal holds → an empty plan: nothing fetched, written or updated", () => {
    expect(planRepository(facts({}), URL, KEY)).toEqual({
      fetchKeyring: false,
      changes: [],
      update: false,
    });
  });

  it("a fresh host: key, source file and apt-get update", () => {
    const plan = planRepository(
      facts({ keyringFingerprints: null, files: new Map(), listsPresent: false }),
      URL,
      KEY,
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
      KEY,
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

  it("a keyring that holds other keys only (another vendor's, or none) is fetched again", () => {
    expect(planRepository(facts({ keyringFingerprints: [BOOKWORM_KEY] }), URL, KEY)).toMatchObject({
      fetchKeyring: true,
      update: true,
    });
    expect(planRepository(facts({ keyringFingerprints: [] }), URL, KEY).fetchKeyring).toBe(true);
  });

  it("a refused download names the pinned and the found value, and what to do", () => {
    const pin = { url: "https://mirror.example/k.gpg", sha256: "AB".repeat(32), fingerprint: KEY };
    const sum = keyringRefusal(
      pin,
      { code: 5, stdout: `sha256=${"cd".repeat(32)}\n`, stderr: "" },
      300,
    );
    expect(sum).toBe(
      `the keyring downloaded from https://mirror.example/k.gpg has SHA-256 ${"cd".repeat(32)}, but Proxmox's trixie keyring has ${"ab".repeat(32)} (the pinned value): nothing was installed. Check the URL (a proxy or mirror serving another file?); if Proxmox published a new keyring, set CLUPILOT_PROXMOX_KEYRING_SHA256 and CLUPILOT_PROXMOX_KEYRING_FINGERPRINT to the values Proxmox publishes, then Retry`,
    );
    const key = keyringRefusal(
      pin,
      { code: 6, stdout: `fingerprints=${BOOKWORM_KEY} \n`, stderr: "" },
      300,
    );
    expect(key).toContain(`holds key(s) ${BOOKWORM_KEY}, not the pinned Proxmox key ${KEY}`);
    expect(keyringRefusal(pin, { code: 6, stdout: "fingerprints=\n", stderr: "" }, 300)).toContain(
      "holds key(s) (none: not an OpenPGP keyring)",
    );
  });
});

describe("the repository a host uses: no-subscription, or enterprise with an active subscription", () => {
  const NO_SUB = desiredSources(URL);
  const DISABLED = `${NO_SUB}Enabled: no\n`;
  const enterpriseHost = (over: Partial<RepositoryFacts> = {}) =>
    facts({
      subscriptionStatus: "active",
      files: new Map([
        ["pve-install-repo.sources", DISABLED],
        ["pve-enterprise.sources", desiredEnterpriseSources()],
      ]),
      listsPresent: false,
      enterpriseListsPresent: true,
      ...over,
    });

  it.each([
    [null, "no-subscription"],
    ["notfound", "no-subscription"],
    ["new", "no-subscription"],
    ["invalid", "no-subscription"],
    ["expired", "no-subscription"],
    ["suspended", "no-subscription"],
    ["active", "enterprise"],
  ])("subscription %s → %s", (status, choice) => {
    expect(chooseRepository(status)).toBe(choice);
  });

  it("reads only the status of the subscription (never the key) from the probe", () => {
    const parsed = parseRepositoryProbe(
      "keyring=missing\n--clupilot--\nlists=present\nenterprise-lists=present\nsubscription=active\n",
    );
    expect(parsed).toMatchObject({ enterpriseListsPresent: true, subscriptionStatus: "active" });
    expect(
      parseRepositoryProbe("keyring=missing\n--clupilot--\nsubscription=\n").subscriptionStatus,
    ).toBe(null);
  });

  it("an active subscription: Proxmox's pve-enterprise.sources written, no-subscription disabled", () => {
    const plan = planRepository(facts({ subscriptionStatus: "active" }), URL, KEY);
    expect(plan).toEqual({
      fetchKeyring: false,
      changes: [
        { kind: "write", name: "pve-enterprise.sources", content: desiredEnterpriseSources() },
        { kind: "write", name: "pve-install-repo.sources", content: DISABLED },
      ],
      update: true,
    });
    expect(desiredEnterpriseSources()).toBe(
      "Types: deb\nURIs: https://enterprise.proxmox.com/debian/pve\nSuites: trixie\n" +
        "Components: pve-enterprise\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n",
    );
  });

  it("the enterprise goal holds on a switched host: InstallProxmoxRepository leaves it (re-onboarding)", () => {
    expect(planRepository(enterpriseHost(), URL, KEY)).toEqual({
      fetchKeyring: false,
      changes: [],
      update: false,
    });
    expect(judgeRepository(enterpriseHost(), URL, KEY)).toMatchObject({ holds: true });
    // Without its index the enterprise goal does not hold yet.
    expect(
      judgeRepository(enterpriseHost({ enterpriseListsPresent: false }), URL, KEY),
    ).toMatchObject({ holds: false });
  });

  it("a subscription no longer active: back to no-subscription, the enterprise source disabled", () => {
    const plan = planRepository(enterpriseHost({ subscriptionStatus: "expired" }), URL, KEY);
    expect(plan.changes).toEqual([
      { kind: "write", name: "pve-install-repo.sources", content: NO_SUB },
      {
        kind: "write",
        name: "pve-enterprise.sources",
        content: `${desiredEnterpriseSources()}Enabled: no\n`,
      },
    ]);
  });

  it("one-line no-subscription entries are commented out, other lines kept", () => {
    const plan = planRepository(
      facts({
        subscriptionStatus: "active",
        files: new Map([
          [
            "sources.list",
            "deb http://deb.debian.org/debian trixie main\ndeb http://download.proxmox.com/debian/pve trixie pve-no-subscription\n",
          ],
          [
            "pve-nosub.list",
            "deb http://download.proxmox.com/debian/pve trixie pve-no-subscription\n",
          ],
        ]),
      }),
      URL,
      KEY,
    );
    expect(plan.changes).toContainEqual({
      kind: "write",
      name: "sources.list",
      content:
        "deb http://deb.debian.org/debian trixie main\n# disabled by CluPilot (the host has a subscription): deb http://download.proxmox.com/debian/pve trixie pve-no-subscription\n",
    });
    expect(plan.changes).toContainEqual({
      kind: "remove",
      name: "pve-nosub.list",
      reason: "only Proxmox repositories the host does not use",
    });
  });
});

describe("the apt-get update job's body", () => {
  it.each([600, 3])(
    "passes shellcheck as the bash script the job runs (lock bound %i s)",
    (bound) => {
      // shellcheck is installed by .ci/run; a missing binary must fail, not skip.
      execFileSync("shellcheck", ["-s", "bash", "-"], {
        input: aptUpdateJobBody(bound),
        encoding: "utf8",
      });
    },
  );
});
