import { eq } from "drizzle-orm";
import { z } from "zod";
import { hosts } from "@/lib/db/schema";
import { advance, type Step } from "@/lib/pipeline/step";
import { sh } from "@/lib/ssh";
import type { HostServices } from "../services";
import { LEFT_CLUSTER, type LeftCluster } from "./leave-cluster";
import { bestEffortOverSsh } from "./reachability";

/** `user@realm!tokenid`, as CreateApiToken recorded it; anything else is not ours to remove. */
const TOKEN_ID_RE = /^([A-Za-z0-9._-]+@[A-Za-z0-9._-]+)!([A-Za-z][A-Za-z0-9._-]*)$/;

export function splitTokenId(tokenId: string): { user: string; token: string } | null {
  const match = TOKEN_ID_RE.exec(tokenId);
  return match ? { user: match[1]!, token: match[2]! } : null;
}

export const userListCommand = () => "pveum user list --output-format json";
export const tokenListCommand = (user: string) =>
  sh`pveum user token list ${user} --output-format json`;
export const tokenRemoveCommand = (user: string, token: string) =>
  sh`pveum user token remove ${user} ${token}`;

const ZUsers = z.array(z.object({ userid: z.string() }).loose());
const ZTokens = z.array(z.object({ tokenid: z.string() }).loose());

/** A list only proves absence when it was read and understood; anything else is "could not ask". */
function parseList<S extends z.ZodType>(stdout: string, schema: S): z.infer<S> | null {
  try {
    const parsed = schema.safeParse(JSON.parse(stdout));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Goal: the console's API token is gone from the node — exactly the token id the console
 * recorded, nothing else (its user, role and other tokens stay: they may be used by hand).
 * Over SSH as root with `pveum`: the token cannot remove itself through the API (it holds no
 * User.Modify, on purpose). Best effort: an unreachable host, or a token list that could not be
 * read, is reported as "not removed" with the command to run by hand, never as removed.
 */
export const removeApiToken: Step<HostServices> = {
  name: "RemoveApiToken",
  maxDuration: () => 300,
  async visit(ctx) {
    const host = await ctx.services.host();
    const left = ctx.context.get<LeftCluster>(LEFT_CLUSTER);
    if (left) {
      // The token lives in the cluster's shared /etc/pve: removing it would lock the console out
      // of every member that stays. The node itself is shut down and out of the cluster.
      await forgetToken(ctx.services, host.id);
      return advance(
        `API token ${host.apiTokenId ?? "(none recorded)"} kept: it is cluster '${left.cluster}'s one console token, used by the members that stay; ${left.node} is shut down and no longer a member`,
      );
    }
    if (!host.apiTokenId) return advance("no API token recorded for this host: nothing to remove");
    const id = splitTokenId(host.apiTokenId);
    if (!id) {
      return advance(
        `recorded token id ${host.apiTokenId} is not of the form user@realm!token: not touched`,
      );
    }
    const node = host.nodeName ?? host.address;
    const byHand = `run "${tokenRemoveCommand(id.user, id.token)}" on ${node} as root`;
    const notDone = `API token ${host.apiTokenId} NOT removed from ${node}; ${byHand}`;
    return bestEffortOverSsh(ctx.visit, notDone, async () => {
      const exec = (command: string) => ctx.services.exec(command, { timeoutMs: 30_000 });
      const listTokens = async () => {
        const listed = await exec(tokenListCommand(id.user));
        return listed.code === 0 ? parseList(listed.stdout, ZTokens) : null;
      };

      const users = await exec(userListCommand());
      const userList = users.code === 0 ? parseList(users.stdout, ZUsers) : null;
      if (userList === null) {
        return advance(
          `could not read the user list on ${node} (exit ${users.code}: ${firstLine(users.stderr)}): ${notDone}`,
        );
      }
      if (!userList.some((u) => u.userid === id.user)) {
        await forgetToken(ctx.services, host.id);
        return advance(`user ${id.user} is not on ${node}: token ${host.apiTokenId} already gone`);
      }
      const before = await listTokens();
      if (before === null) {
        return advance(`could not read the token list of ${id.user} on ${node}: ${notDone}`);
      }
      if (!before.some((t) => t.tokenid === id.token)) {
        await forgetToken(ctx.services, host.id);
        return advance(`token ${host.apiTokenId} was not on ${node} (already removed)`);
      }
      const removed = await exec(tokenRemoveCommand(id.user, id.token));
      // Proven by the list, not by the exit code alone: only a list without it says "removed".
      const after = await listTokens();
      if (after === null || after.some((t) => t.tokenid === id.token)) {
        return advance(
          `removing token ${host.apiTokenId} on ${node} did not take (exit ${removed.code}: ${firstLine(removed.stderr)}): ${notDone}`,
        );
      }
      await forgetToken(ctx.services, host.id);
      return advance(`API token ${host.apiTokenId} removed from ${node}`);
    });
  },
};

/** The token no longer exists: the console forgets its id (the secret goes with MarkRetired). */
async function forgetToken(services: HostServices, hostId: string): Promise<void> {
  await services.db
    .update(hosts)
    .set({ apiTokenId: null, updatedAt: new Date() })
    .where(eq(hosts.id, hostId));
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0] || "no error output";
}
