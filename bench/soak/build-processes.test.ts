import { describe, expect, it } from "vitest";
import type { LabNode } from "@/lab";
import { buildGroupsOn, isDriverOf } from "./build-processes";
import type { ProcessInfo } from "./proc";

const node = { name: "pve1", root: "/tmp/clupilot-lab-abc" } as LabNode;
const dir = "/tmp/clupilot-lab-abc/var/lib/clupilot/template-build";
const process = (pid: number, pgid: number, cmdline: string, state = "S"): ProcessInfo => ({
  pid,
  ppid: 1,
  pgid,
  state,
  cmdline,
});

describe("a template build in a lab node's process table", () => {
  it("is the driver and its subshells, not the SSH command that started it", () => {
    expect(isDriverOf(node, `bash ${dir}/template-run.sh ${dir}/build.env`)).toBe(true);
    expect(isDriverOf(node, `/bin/bash ${dir}/template-run.sh ${dir}/build.env`)).toBe(true);
    // The start command's shell names the driver in its script: it is not one.
    expect(
      isDriverOf(
        node,
        `/bin/bash -c printf 'clupilot-pgid:%s\\n' "$$" >&2; cd '${dir}' nohup setsid bash ${dir}/template-run.sh`,
      ),
    ).toBe(false);
    // Another node's driver is not this node's.
    expect(isDriverOf(node, `bash /tmp/clupilot-lab-xyz/template-build/template-run.sh x`)).toBe(
      false,
    );
  });

  it("groups a driver with its process group, one build per group, zombies left out", () => {
    const table = [
      process(100, 90, `/bin/bash -c cd '${dir}'; nohup setsid bash ${dir}/template-run.sh`),
      process(101, 101, `bash ${dir}/template-run.sh ${dir}/build.env`),
      process(102, 101, `bash ${dir}/template-run.sh ${dir}/build.env`),
      process(103, 101, "virt-customize -a image"),
      process(104, 101, "sleep 1", "Z"),
    ];
    expect(buildGroupsOn(node, table)).toEqual([
      { pgid: 101, members: [table[1], table[2], table[3]] },
    ]);
  });
});
