import { consoleKeys } from "@/lib/db/schema";
import { removeKeyCommand } from "@/lib/console-key/commands";
import { advance, type Step } from "@/lib/pipeline/step";
import type { HostServices } from "../services";
import { LEFT_CLUSTER, type LeftCluster } from "./leave-cluster";
import { bestEffortOverSsh } from "./reachability";

/**
 * Goal: none of the console's keys (the active one, and any a rotation replaced) is left in
 * the login user's `~/.ssh/authorized_keys`. Each key is removed by exact-line match through a
 * temp file and `mv` (lib/console-key/commands.ts), so other people's keys and comments stay
 * byte for byte. Runs as the login user itself, not through sudo: the key was installed for
 * that account. Checked whatever the host's credential is — an operator may have installed the
 * key on a host that logs in with a password.
 */
export const removeConsoleKey: Step<HostServices> = {
  name: "RemoveConsoleKey",
  maxDuration: () => 300,
  async visit(ctx) {
    const host = await ctx.services.host();
    const left = ctx.context.get<LeftCluster>(LEFT_CLUSTER);
    if (left) {
      // Shut down and out of its cluster, the node is not reached again (Proxmox: a removed node
      // must not come back into the cluster's network as it is); root's authorized_keys on a
      // member is the cluster's /etc/pve/priv/authorized_keys, which the members that stay use.
      return advance(
        `not touched: ${left.node} is shut down and no longer a member of '${left.cluster}'; reinstall it before it is used again`,
      );
    }
    const keys = await ctx.services.db.select({ line: consoleKeys.publicKey }).from(consoleKeys);
    if (keys.length === 0) return advance("the console has no SSH key: nothing to remove");
    const file = `${host.sshUser}'s ~/.ssh/authorized_keys on ${host.nodeName ?? host.address}`;
    const notDone = `the console's key was NOT removed from ${file}; remove the lines ending in "clupilot-console@…" by hand`;
    return bestEffortOverSsh(ctx.visit, notDone, async () => {
      const session = await ctx.services.ssh();
      let removed = 0;
      for (const { line } of keys) {
        const command = removeKeyCommand(line);
        ctx.log(`$ ${command}`);
        const result = await session.exec(command, { timeoutMs: 30_000 });
        const answer = result.stdout.trim();
        ctx.log(`◀ exit ${result.code}: ${answer || result.stderr.trim()}`);
        if (result.code !== 0 || (answer !== "removed" && answer !== "absent")) {
          return advance(
            `removing a console key from ${file} failed (exit ${result.code}: ${result.stderr.trim() || answer || "no output"}): ${notDone}`,
          );
        }
        if (answer === "removed") removed += 1;
      }
      return advance(
        removed === 0
          ? `the console's key was not in ${file}: nothing to remove`
          : `removed the console's key (${removed} line${removed === 1 ? "" : "s"}) from ${file}; other lines kept`,
      );
    });
  },
};
