import { describe, expect, it } from "vitest";
import { judgeOperatingSystem, parseOsProbe, type OsFacts } from "./check-operating-system";

const DEBIAN_13 = `PRETTY_NAME="Debian GNU/Linux 13 (trixie)"
NAME="Debian GNU/Linux"
VERSION_ID="13"
VERSION="13 (trixie)"
VERSION_CODENAME=trixie
ID=debian
`;

function probe(osRelease: string, machine = "x86_64", memKiB = 8_000_000, availKiB = 50_000_000) {
  return [
    osRelease,
    "--clupilot--\n",
    `${machine}\n`,
    "--clupilot--\n",
    `MemTotal:       ${memKiB} kB\n`,
    "--clupilot--\n",
    `/dev/vda1 100000000 1000 ${availKiB} 1% /\n`,
  ].join("");
}

const required = { minMemoryMiB: 2048, minFreeDiskGiB: 16 };

describe("CheckOperatingSystem", () => {
  it("parses os-release, machine, memory and free disk from one probe", () => {
    expect(parseOsProbe(probe(DEBIAN_13))).toEqual<OsFacts>({
      id: "debian",
      versionId: "13",
      codename: "trixie",
      prettyName: "Debian GNU/Linux 13 (trixie)",
      machine: "x86_64",
      memoryMiB: 7812,
      freeDiskGiB: 50_000_000 / 1024 / 1024,
    });
  });

  it("accepts Debian 13 on x86_64 with enough RAM and disk", () => {
    expect(judgeOperatingSystem(parseOsProbe(probe(DEBIAN_13)), required).kind).toBe("advance");
  });

  it("refuses Debian 12 and names what it found", () => {
    const bookworm = DEBIAN_13.replace(/13 \(trixie\)/g, "12 (bookworm)")
      .replace('"13"', '"12"')
      .replace("trixie", "bookworm");
    const outcome = judgeOperatingSystem(parseOsProbe(probe(bookworm)), required);
    expect(outcome).toEqual({
      kind: "fail",
      reason:
        "found Debian GNU/Linux 12 (bookworm); CluPilot onboards Debian 13 (trixie) only — reinstall the host with Debian 13 and retry",
    });
  });

  it("refuses another distribution", () => {
    const ubuntu = 'PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n';
    expect(judgeOperatingSystem(parseOsProbe(probe(ubuntu)), required)).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(/^found Ubuntu 24.04 LTS;/),
    });
  });

  it("refuses a non-x86_64 machine", () => {
    expect(judgeOperatingSystem(parseOsProbe(probe(DEBIAN_13, "aarch64")), required)).toMatchObject(
      {
        kind: "fail",
        reason: expect.stringMatching(/aarch64 CPU; Proxmox VE needs x86_64/),
      },
    );
  });

  it("refuses too little memory, naming how much it found", () => {
    expect(
      judgeOperatingSystem(parseOsProbe(probe(DEBIAN_13, "x86_64", 1_000_000)), required),
    ).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(/^found 976 MiB of RAM; at least 2048 MiB/),
    });
  });

  it("refuses too little free disk, naming how much it found", () => {
    expect(
      judgeOperatingSystem(
        parseOsProbe(probe(DEBIAN_13, "x86_64", 8_000_000, 5 * 1024 * 1024)),
        required,
      ),
    ).toMatchObject({
      kind: "fail",
      reason: expect.stringMatching(/^found 5.0 GiB free on \/var; at least 16 GiB/),
    });
  });

  it("refuses when a fact could not be read instead of assuming it", () => {
    const facts = parseOsProbe(DEBIAN_13); // nothing after os-release
    expect(judgeOperatingSystem(facts, required).kind).toBe("fail");
  });
});
