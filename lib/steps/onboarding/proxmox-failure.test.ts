import { describe, expect, it } from "vitest";
import { HostApiNotReadyError } from "@/lib/host-access/proxmox-client";
import { advance } from "@/lib/pipeline/step";
import {
  ProxmoxAuthError,
  ProxmoxCertificateMismatchError,
  ProxmoxPermissionError,
  ProxmoxUnavailableError,
} from "@/lib/proxmox/errors";
import { withPermanentProxmoxFailures } from "./proxmox-failure";

const throwing = (error: Error) => () => withPermanentProxmoxFailures(() => Promise.reject(error));

describe("Proxmox API failures in a step", () => {
  it("a certificate mismatch fails at once with the pin and the offered fingerprint", async () => {
    const outcome = await throwing(
      new ProxmoxCertificateMismatchError("https://10.0.0.5:8006", "AA:BB", "CC:DD"),
    )();
    expect(outcome).toMatchObject({ kind: "fail" });
    expect(outcome.kind === "fail" && outcome.reason).toContain("pinned AA:BB, offered CC:DD");
  });

  it("a refused token (401) fails at once saying how to get a new one", async () => {
    const outcome = await throwing(new ProxmoxAuthError("GET /version on pve1: refused (401)"))();
    expect(outcome.kind === "fail" && outcome.reason).toMatch(/401.*CreateApiToken rotates it/);
  });

  it("a host without a recorded token or pin fails at once with what is missing", async () => {
    const outcome = await throwing(
      new HostApiNotReadyError("the host's API token secret is missing; retry CreateApiToken"),
    )();
    expect(outcome.kind === "fail" && outcome.reason).toContain("retry CreateApiToken");
  });

  it("a permission error (403) fails at once", async () => {
    const outcome = await throwing(new ProxmoxPermissionError("GET x: permission denied (403)"))();
    expect(outcome).toMatchObject({ kind: "fail" });
  });

  it("'could not ask' (5xx, timeout, network) is thrown, so the engine retries it", async () => {
    await expect(
      throwing(new ProxmoxUnavailableError("GET /nodes answered 502", 502))(),
    ).rejects.toThrow(/502/);
  });

  it("an answer passes through", async () => {
    expect(await withPermanentProxmoxFailures(async () => advance("ok"))).toEqual(advance("ok"));
  });
});
