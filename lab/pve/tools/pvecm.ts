import { clusterView } from "../cluster/membership";
import { createCluster, deleteNode, joinCluster, PvecmError } from "../cluster/pvecm-ops";
import { CliExit, out, parseArgs, runTool, toolContext } from "./common";

/**
 * Simulated `pvecm` (pve-cluster 9): `create`, `add`, `delnode`, `status`, `nodes`. `add` joins over the
 * API as pve-cluster does without `--use_ssh`: it reads the member's root password as
 * PVE::PTY::read_password does when stdin is no terminal (one line, no prompt) — and
 * pins the member's certificate with `--fingerprint`. Membership lives in the cluster's shared
 * corosync.conf (lab/pve/cluster/membership.ts); `status` and `nodes` print what
 * `corosync-quorumtool -siH` / `-l` print.
 */

const USAGE = {
  create: "pvecm create <clustername> [OPTIONS]",
  add: "pvecm add <hostname> [OPTIONS]",
  delnode: "pvecm delnode <node>",
};

function notInCluster(): never {
  throw new CliExit(
    2,
    "Error: Corosync config '/etc/pve/corosync.conf' does not exist - is this node part of a cluster?\n",
  );
}

/**
 * PVE::PTY::read_password without a terminal (commands over SSH without a pty): one line of
 * stdin, no prompt; nothing at all is "EOF while reading password".
 */
async function readPasswordLine(): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk: string) => {
      data += chunk;
    });
    process.stdin.on("end", () => {
      if (data === "") reject(new CliExit(255, "EOF while reading password\n"));
      else resolve(data.split("\n")[0] ?? "");
    });
  });
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, "0")}`;
}

async function main(): Promise<void> {
  const ctx = toolContext("pvecm");
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case "create": {
      const args = parseArgs(rest, {
        options: { link0: "string", nodeid: "string", votes: "string" },
        usage: USAGE.create,
      });
      const name = args.positional[0];
      if (name === undefined) throw new CliExit(255, `400 not enough arguments\n${USAGE.create}\n`);
      try {
        const link0 = args.options.get("link0");
        out(createCluster(ctx.root, ctx.node, { clustername: name, ...(link0 ? { link0 } : {}) }));
      } catch (error) {
        if (error instanceof PvecmError) throw new CliExit(255, `${error.message}\n`);
        throw error;
      }
      return;
    }
    case "add": {
      const args = parseArgs(rest, {
        options: { link0: "string", fingerprint: "string", force: "boolean", use_ssh: "boolean" },
        usage: USAGE.add,
      });
      const hostname = args.positional[0];
      if (hostname === undefined)
        throw new CliExit(255, `400 not enough arguments\n${USAGE.add}\n`);
      if (args.options.get("use_ssh") === "1")
        throw new CliExit(255, "lab: pvecm add --use_ssh is not simulated\n");
      const fingerprint = args.options.get("fingerprint");
      if (fingerprint === undefined)
        throw new CliExit(
          255,
          "lab: pvecm add without --fingerprint asks on a terminal; give it\n",
        );
      if (!/^([A-Fa-f0-9]{2}:){31}[A-Fa-f0-9]{2}$/.test(fingerprint)) {
        throw new CliExit(
          255,
          `400 Parameter verification failed.\nfingerprint: value does not match the regex pattern\n\n${USAGE.add}\n`,
        );
      }
      const password = await readPasswordLine();
      const link0 = args.options.get("link0");
      try {
        out(
          joinCluster(ctx.root, ctx.node, {
            hostname,
            fingerprint,
            password,
            ...(link0 ? { link0 } : {}),
            force: args.options.get("force") === "1",
          }),
        );
      } catch (error) {
        if (error instanceof PvecmError) {
          out(error.printed);
          throw new CliExit(255, `${error.message}\n`);
        }
        throw error;
      }
      return;
    }
    case "delnode": {
      const args = parseArgs(rest, { options: {}, usage: USAGE.delnode });
      const name = args.positional[0];
      if (name === undefined)
        throw new CliExit(255, `400 not enough arguments\n${USAGE.delnode}\n`);
      try {
        const printed = deleteNode(ctx.root, ctx.node, name);
        out(printed.stdout);
        if (printed.stderr !== "") process.stderr.write(printed.stderr);
      } catch (error) {
        if (error instanceof PvecmError) throw new CliExit(255, `${error.message}\n`);
        throw error;
      }
      return;
    }
    case "status": {
      const view = clusterView(ctx.root, ctx.node);
      if (view === null) notInCluster();
      const local = view.members.find((m) => m.local);
      const online = view.members.filter((m) => m.online);
      const quorum = Math.floor(view.totalVotes / 2) + 1;
      out(
        "Cluster information\n-------------------\n" +
          `${"Name:".padEnd(18)}${view.name}\n` +
          `${"Config Version:".padEnd(18)}${view.configVersion}\n` +
          `${"Transport:".padEnd(18)}knet\n${"Secure auth:".padEnd(18)}on\n\n` +
          "Quorum information\n------------------\n" +
          `${"Date:".padEnd(18)}${new Date().toUTCString()}\n` +
          `${"Quorum provider:".padEnd(18)}corosync_votequorum\n` +
          `${"Nodes:".padEnd(18)}${online.length}\n` +
          `${"Node ID:".padEnd(18)}${hex(local?.nodeid ?? 0)}\n` +
          `${"Ring ID:".padEnd(18)}1.${view.configVersion.toString(16)}\n` +
          `${"Quorate:".padEnd(18)}${view.quorate ? "Yes" : "No"}\n\n` +
          "Votequorum information\n----------------------\n" +
          `${"Expected votes:".padEnd(18)}${view.totalVotes}\n` +
          `${"Highest expected:".padEnd(18)}${view.totalVotes}\n` +
          `${"Total votes:".padEnd(18)}${view.onlineVotes}\n` +
          `${"Quorum:".padEnd(18)}${quorum}${view.quorate ? "" : " Activity blocked"}\n` +
          `${"Flags:".padEnd(18)}${view.quorate ? "Quorate" : ""}\n\n` +
          "Membership information\n----------------------\n" +
          "    Nodeid      Votes Name\n" +
          online
            .map(
              (m) =>
                `${hex(m.nodeid)} ${String(m.votes).padStart(10)} ${m.ring0_addr}${m.local ? " (local)" : ""}\n`,
            )
            .join(""),
      );
      return;
    }
    case "nodes": {
      const view = clusterView(ctx.root, ctx.node);
      if (view === null) notInCluster();
      out(
        "\nMembership information\n----------------------\n    Nodeid      Votes Name\n" +
          view.members
            .filter((m) => m.online)
            .map(
              (m) =>
                `${String(m.nodeid).padStart(10)} ${String(m.votes).padStart(10)} ${m.name}${m.local ? " (local)" : ""}\n`,
            )
            .join(""),
      );
      return;
    }
    default:
      throw new CliExit(
        255,
        `ERROR: unknown command 'pvecm ${command ?? ""}'\nUSAGE: pvecm <COMMAND> [ARGS] [OPTIONS]\n`,
      );
  }
}

runTool(main);
