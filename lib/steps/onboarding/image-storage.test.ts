import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  ensureImageStorageScript,
  parseImageStorageResult,
  readTemplateLibrary,
} from "./image-storage";

describe("ensure image storage (ConfigureProxmox)", () => {
  it("the script sent on stdin is template.sh itself plus the call, and parses with bash -n", async () => {
    const library = await readTemplateLibrary();
    const script = ensureImageStorageScript(library);
    expect(script).toContain(library);
    expect(script).toMatch(/^ensure_image_storage$/m);
    execFileSync("bash", ["-n"], { input: script });
  });

  it("reads whether a storage was already there, was just given images, or the library refused", () => {
    expect(
      parseImageStorageResult(0, "clupilot-image-storage before=local-lvm after=local-lvm\n", ""),
    ).toEqual({ kind: "in-place", storage: "local-lvm" });
    expect(
      parseImageStorageResult(0, "no storage …\nclupilot-image-storage before= after=local\n", ""),
    ).toEqual({ kind: "added", storage: "local" });
    expect(
      parseImageStorageResult(
        1,
        "",
        "400 Parameter verification failed\nno storage accepts disk images, and 'local' is missing\n",
      ),
    ).toEqual({
      kind: "refused",
      reason: "no storage accepts disk images, and 'local' is missing",
    });
  });

  it("exit 0 without the verdict line is not success: 'could not tell' never reads as done", () => {
    expect(parseImageStorageResult(0, "", "").kind).toBe("refused");
    expect(parseImageStorageResult(0, "clupilot-image-storage before= after=\n", "").kind).toBe(
      "refused",
    );
    expect(parseImageStorageResult(null, "", "")).toMatchObject({
      reason: expect.stringContaining("cut off"),
    });
  });
});
