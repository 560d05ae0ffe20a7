import { describe, expect, it } from "vitest";
import { buildGroupsOn, isDriverOf } from "./build-processes";
import type { ProcessInfo } from "./proc";

const node = { mountNamespace: "mnt:[4026532001]" };
const other = "mnt:[4026532002]";
const dir = "/var/lib/clupilot/template-build";
const process = (
  pid: number,
  pgid: number,
  cmdline: string,
  state = "S",
  mountNamespace: string | null = node.mountNamespace,
): ProcessInfo => ({ pid, ppid: 1, pgid, state, cmdline, mountNamespace });

describe("a template build in a lab node's process table", () => {
  it("is the driver and its subshells, not the SSH command that started it", () => {
    const driver = (cmdline: string, ns = node.mountNamespace) =>
      isDriverOf(node, { cmdline, mountNamespace: ns });
    expect(driver(`bash ${dir}/template-run.sh ${dir}/build.env`)).toBe(true);
    expect(driver(`/bin/bash ${dir}/template-run.sh ${dir}/build.env`)).toBe(true);
    // The start command's shell names the driver in its script: it is not one.
    expect(
      driver(
        `/bin/bash -c printf 'clupilot-pgid:%s\\n' "$$" >&2; cd '${dir}' nohup setsid bash ${dir}/template-run.sh`,
      ),
    ).toBe(false);
    // Another node's driver (the same path, in its own namespace) is not this node's.
    expect(driver(`bash ${dir}/template-run.sh ${dir}/build.env`, other)).toBe(false);
  });

  it("is none on a node that is down (a reboot under way), not even a process whose namespace could not be read", () => {
    const down = { mountNamespace: null };
    const driver = (ns: string | null) =>
      isDriverOf(down, {
        cmdline: `bash ${dir}/template-run.sh ${dir}/build.env`,
        mountNamespace: ns,
      });
    expect(driver(null)).toBe(false);
    expect(driver(node.mountNamespace)).toBe(false);
    expect(
      buildGroupsOn(down, [process(101, 101, `bash ${dir}/template-run.sh x`, "S", null)]),
    ).toEqual([]);
  });

  it("groups a driver with its process group, one build per group, zombies left out", () => {
    const table = [
      process(100, 90, `/bin/bash -c cd '${dir}'; nohup setsid bash ${dir}/template-run.sh`),
      process(101, 101, `bash ${dir}/template-run.sh ${dir}/build.env`),
      process(102, 101, `bash ${dir}/template-run.sh ${dir}/build.env`),
      process(103, 101, "virt-customize -a image"),
      process(104, 101, "sleep 1", "Z"),
      process(201, 201, `bash ${dir}/template-run.sh ${dir}/build.env`, "S", other),
    ];
    expect(buildGroupsOn(node, table)).toEqual([
      { pgid: 101, members: [table[1], table[2], table[3]] },
    ]);
  });
});
