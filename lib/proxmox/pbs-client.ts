import { z } from "zod";
import { pinnedApiCall, type PinnedRequest } from "./pinned-https";
import { ZPermissions, ZVersion } from "./schemas";

export type PbsTarget = {
  /** e.g. `https://10.0.0.9:8007` */
  baseUrl: string;
  /** `user@realm!tokenid` */
  tokenId: string;
  tokenSecret: string;
  /** SHA-256 of the DER certificate, `AB:CD:…`. */
  certSha256: string;
  timeoutMs?: number;
};

/** PBS's token header: a colon before the secret (the PVE form, with `=`, gets 401). */
export function pbsAuthorization(tokenId: string, secret: string): string {
  return `PBSAPIToken=${tokenId}:${secret}`;
}

/** The path of a PBS shutdown: PBS names its own node `localhost`. */
export const PBS_SHUTDOWN_PATH = "/nodes/localhost/status";

/** A Proxmox Backup Server's API, with the same pinning and deadline as the PVE client. */
export class PbsClient {
  constructor(private readonly target: PbsTarget) {}

  version() {
    return this.call({ method: "GET", path: "/version" }, ZVersion);
  }

  /** `GET /access/permissions?path=…`: the token's own privileges there (the key is the grant). */
  permissions(path: string) {
    return this.call(
      { method: "GET", path: `/access/permissions?path=${encodeURIComponent(path)}` },
      ZPermissions,
    );
  }

  /**
   * `POST /nodes/localhost/status command=shutdown` (needs `Sys.PowerManagement` on
   * `/system/status`): answered at once, the server powers off right after.
   */
  async shutdown(): Promise<void> {
    await this.call(
      { method: "POST", path: PBS_SHUTDOWN_PATH, form: { command: "shutdown" } },
      z.null(),
    );
  }

  private call<S extends z.ZodType>(
    request: Omit<PinnedRequest, "authorization">,
    schema: S,
  ): Promise<z.infer<S>> {
    return pinnedApiCall(
      this.target,
      { ...request, authorization: pbsAuthorization(this.target.tokenId, this.target.tokenSecret) },
      schema,
      `${request.method} ${request.path} on ${new URL(this.target.baseUrl).host}`,
    );
  }
}
