import "server-only";
import { eq } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { AppError } from "@/lib/errors";
import { loadCredentialAuth } from "@/lib/host-access/host-credential";
import { hostNotFound, retiredHostError } from "@/lib/host-access/host-guards";
import {
  BMC_REPORT_COMMAND,
  parseBmcReport,
  type BmcReport,
} from "@/lib/power-controllers/bmc-report";
import { connectSsh, HostKeyMismatchError, SshError } from "@/lib/ssh";
import { asRoot } from "@/lib/steps/remote-job/remote-host";

/**
 * Asks the host itself for its BMC's LAN address (`ipmitool lan print`, as root, over the
 * host's pinned SSH key) — a suggestion for the power controller form, never stored or set
 * here. Only a host the console has already connected to: without a pinned key a first
 * contact would trust whatever answers.
 */
export async function askHostForBmc(db: Database, hostId: string): Promise<BmcReport> {
  const [host] = await db.select().from(hosts).where(eq(hosts.id, hostId));
  if (!host) throw hostNotFound(hostId);
  if (host.retiredAt) throw retiredHostError(host.name);
  if (!host.hostKeySha256) {
    throw new AppError(
      "conflict",
      `${host.name} has never been connected to, so its SSH key is not pinned: the console asks it nothing before onboarding has connected.`,
    );
  }
  let session;
  try {
    session = await connectSsh({
      host: host.address,
      port: host.sshPort,
      username: host.sshUser,
      auth: await loadCredentialAuth(db, host.credentialId),
      pinnedHostKey: host.hostKeySha256,
      readyTimeoutMs: 15_000,
    });
  } catch (error) {
    if (error instanceof HostKeyMismatchError) {
      throw new AppError(
        "conflict",
        `${host.name} presented another SSH host key than the pinned one; nothing was asked. See the host's page (Clear pin) if it was reinstalled.`,
      );
    }
    if (error instanceof SshError) {
      throw new AppError(
        "unavailable",
        `${host.name} could not be asked: ${error.message} Check that it is up and reachable over SSH, then ask again.`,
      );
    }
    throw error;
  }
  try {
    // `ipmitool lan print` waits on a BMC that does not answer; 30 s is plenty for one that does.
    const result = await session.exec(asRoot(host.sshUser, BMC_REPORT_COMMAND), {
      timeoutMs: 30_000,
    });
    if (result.code !== 0) {
      throw new AppError(
        "unavailable",
        `Asking ${host.name} for its BMC failed (exit ${result.code ?? result.signal}): ${result.stderr.trim().split("\n").pop() ?? "no output"}. Check that ${host.sshUser} may act as root (sudo -n) there.`,
      );
    }
    return parseBmcReport(result.stdout);
  } catch (error) {
    if (error instanceof SshError) {
      throw new AppError(
        "unavailable",
        `${host.name} stopped answering while asked for its BMC: ${error.message}`,
      );
    }
    throw error;
  } finally {
    session.close();
  }
}
