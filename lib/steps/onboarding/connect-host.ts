import { advance, fail, type Step } from "@/lib/pipeline/step";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { alreadyInPlace } from "../../pipeline/already-in-place";

/** `id -u` first: root needs nothing else; otherwise sudo must work without a password prompt. */
export const PRIVILEGE_PROBE =
  "id -u; sudo -n true 2>/dev/null && echo sudo-ok || echo sudo-missing";

/**
 * Goal: SSH works with the stored credential, the host key is pinned, and the console can act
 * as root. The pin itself happens on first contact inside the SSH service, so every later
 * connection, in any step, is checked against it.
 */
export const connectHost: Step<HostServices> = {
  name: "ConnectHost",
  maxDuration: () => 300,
  visit: (ctx) =>
    withPermanentSshFailures(async () => {
      const host = await ctx.services.host();
      // Read before connecting: the first contact pins inside ssh() and updates the record.
      const pinnedBefore = host.hostKeySha256;
      // A fresh handshake, never the worker's kept connection: a host key changed since that
      // connection was opened shows only on a new one, and this step is where it must.
      const session = await ctx.services.reconnect();
      const probe = await session.exec(PRIVILEGE_PROBE, { timeoutMs: 20_000 });
      const [uid, sudo] = probe.stdout.trim().split("\n");
      if (probe.code !== 0 || uid === undefined) {
        throw new Error(
          `checking the user's privileges failed (exit ${probe.code}): ${probe.stderr.trim()}`,
        );
      }
      if (uid.trim() !== "0" && sudo?.trim() !== "sudo-ok") {
        return fail(
          `${host.sshUser}@${host.address} is neither root nor allowed passwordless sudo; ` +
            `connect as root, or add "${host.sshUser} ALL=(ALL) NOPASSWD:ALL" to /etc/sudoers.d on the host`,
        );
      }
      const as = `${host.sshUser} (${uid.trim() === "0" ? "root" : "passwordless sudo"})`;
      if (pinnedBefore !== null) {
        return alreadyInPlace(ctx, `login as ${as}, host key ${session.hostKeySha256} as pinned`);
      }
      ctx.log(`connected as ${as}; host key ${session.hostKeySha256}`);
      return advance(`host key ${session.hostKeySha256}`);
    }),
};
