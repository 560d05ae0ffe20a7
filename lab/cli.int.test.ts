import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

import {
  ZNutSourceSchema,
  ZSnmpSourceSchema,
  type TNutSource,
  type TSnmpSource,
  type UpsSource,
} from "@/lib/power/ups/reading";
import { createUpsSource } from "@/lib/power/ups/source";
import { pinnedApiCall } from "@/lib/proxmox/pinned-https";
import { redfishController } from "@/lib/power-controllers/redfish";
import { SshConnectError } from "@/lib/ssh/errors";

import { labExecOk, labSession } from "./test-helpers";

const REPO = path.resolve(import.meta.dirname, "..");

type Printed = {
  nodes: Array<{
    name: string;
    ssh: { host: string; port: number; username: string; password: string; hostKeySha256: string };
    api?: { url: string; certSha256: string };
  }>;
  control: string;
};

function startCli(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  firstLine: Promise<string>;
  exited: Promise<{ code: number | null; signal: string | null }>;
} {
  const child = spawn(process.execPath, ["--import", "tsx", "lab/cli.ts", ...args], {
    cwd: REPO,
    stdio: "pipe",
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  let err = "";
  let out = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const end = out.indexOf("\n");
      if (end >= 0) resolve(out.slice(0, end));
    });
    child.once("exit", () => reject(new Error(`the CLI exited before printing: ${err}`)));
  });
  firstLine.catch(() => {});
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => err, firstLine, exited };
}

function portRefuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

describe("npm run lab (lab/cli.ts as a real child process)", () => {
  // A stand-in for the console's POST /api/hosts: accepts pve1, refuses pve2 with field errors.
  const registered: Array<Record<string, unknown>> = [];
  let consoleServer: http.Server;
  let consoleUrl: string;
  beforeAll(async () => {
    consoleServer = http.createServer((request, response) => {
      let body = "";
      request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      request.on("end", () => {
        const host = JSON.parse(body) as Record<string, unknown>;
        registered.push({ ...host, path: request.url, type: request.headers["content-type"] });
        response.setHeader("content-type", "application/json");
        if (host.name === "pve1") {
          response.writeHead(201).end(JSON.stringify({ hostId: "h-1", runId: "r-1" }));
        } else {
          response
            .writeHead(400)
            .end(JSON.stringify({ error: "Invalid input", fieldErrors: { name: ["Taken."] } }));
        }
      });
    });
    await new Promise<void>((resolve) => consoleServer.listen(0, "127.0.0.1", resolve));
    const address = consoleServer.address() as net.AddressInfo;
    consoleUrl = `http://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => consoleServer.close(() => resolve()));
  });

  it("prints one JSON object, serves SSH and the control API, registers, and stops on SIGINT", async () => {
    const cli = startCli([
      "--nodes",
      "2",
      "--state",
      "proxmox",
      "--storage",
      "lvm-thin",
      "--time-scale",
      "0.01",
      "--register",
      `${consoleUrl}/`,
    ]);
    try {
      const printed = JSON.parse(await cli.firstLine) as Printed;
      expect(printed.nodes.map((n) => n.name)).toEqual(["pve1", "pve2"]);
      expect(printed.control).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

      for (const node of printed.nodes) {
        expect(Object.keys(node.ssh).sort()).toEqual(
          ["host", "hostKeySha256", "password", "port", "username"].sort(),
        );
        const session = await labSession(node, {
          pinnedHostKey: node.ssh.hostKeySha256,
          readyTimeoutMs: 5000,
        });
        expect((await session.exec("uname -n")).stdout).toBe(`${node.name}\n`);
        // --state/--storage reached the node.
        expect(
          (await session.exec('grep -c "^lvmthin: local-lvm" /etc/pve/storage.cfg')).stdout,
        ).toBe("1\n");
        expect(node.api?.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
        expect(node.api?.certSha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
        session.close();
      }

      const [pve1, pve2] = printed.nodes;
      if (pve1 === undefined || pve2 === undefined) throw new Error("two nodes expected");
      const flip = await fetch(`${printed.control}/api/nodes/pve1/faults`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ "ssh.refuseConnections": true }),
      });
      expect(flip.status).toBe(200);
      const refused = await labSession(pve1, {
        pinnedHostKey: pve1.ssh.hostKeySha256,
        readyTimeoutMs: 5000,
      }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SshConnectError);
      const state = (await (await fetch(`${printed.control}/api/nodes`)).json()) as {
        nodes: Array<{ name: string; switches: Array<{ name: string; value: unknown }> }>;
      };
      const refuseOf = (name: string) =>
        state.nodes
          .find((n) => n.name === name)
          ?.switches.find((s) => s.name === "ssh.refuseConnections")?.value;
      expect(refuseOf("pve1")).toBe(true);
      expect(refuseOf("pve2")).toBe(false);

      // --register: one POST per node, the refusal reported with its field errors.
      await expect.poll(() => cli.stderr(), { timeout: 5000 }).toContain("could not register pve2");
      expect(registered).toEqual([
        expect.objectContaining({
          path: "/api/hosts",
          type: "application/json",
          name: "pve1",
          address: "127.0.0.1",
          sshPort: pve1.ssh.port,
          sshUser: "root",
          authMethod: "password",
          password: pve1.ssh.password,
        }),
        expect.objectContaining({ name: "pve2", sshPort: pve2.ssh.port }),
      ]);
      expect(cli.stderr()).toContain("registered pve1");
      expect(cli.stderr()).toContain('HTTP 400 Invalid input {"name":["Taken."]}');

      // Ctrl-C under npm arrives twice (terminal + npm forwarding it): still a clean stop.
      cli.child.kill("SIGINT");
      cli.child.kill("SIGINT");
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      expect(cli.stderr()).toContain("lab: stopped");
      const controlPort = Number(new URL(printed.control).port);
      const apiPorts = printed.nodes.map((n) => Number(new URL(n.api?.url ?? "http://x:1").port));
      for (const port of [pve1.ssh.port, pve2.ssh.port, controlPort, ...apiPorts]) {
        expect(await portRefuses(port), `port ${port} closed`).toBe(true);
      }
    } finally {
      cli.child.kill("SIGKILL");
    }
  });

  it("--ups starts a lab UPS readable over NUT and SNMP, unplugged from the control API", async () => {
    const cli = startCli(["--ups", "--time-scale", "0.01"]);
    const sources: UpsSource[] = [];
    try {
      const printed = JSON.parse(await cli.firstLine) as Printed & {
        ups: { name: string; nut: TNutSource; snmpV2c: TSnmpSource; snmpV3: TSnmpSource };
      };
      expect(printed.ups.name).toBe("labups");
      const nut = createUpsSource(ZNutSourceSchema.parse(printed.ups.nut));
      const v3 = createUpsSource(ZSnmpSourceSchema.parse(printed.ups.snmpV3));
      sources.push(nut, v3);
      expect(await nut.read()).toMatchObject({ kind: "reading", onBattery: false });

      const unplug = await fetch(`${printed.control}/api/ups/labups/faults`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ "ups.mains": false }),
      });
      expect(unplug.status).toBe(200);
      expect(await nut.read()).toMatchObject({ kind: "reading", onBattery: true });
      expect(await v3.read()).toMatchObject({ kind: "reading", onBattery: true });
      expect(cli.stderr()).toContain(`UPS labups: NUT labups@127.0.0.1:${printed.ups.nut.port}`);

      await Promise.all(sources.map((source) => source.close()));
      cli.child.kill("SIGINT");
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      expect(await portRefuses(printed.ups.nut.port)).toBe(true);
    } finally {
      await Promise.all(sources.map((source) => source.close()));
      cli.child.kill("SIGKILL");
    }
  });

  it("--cluster 3 --ceph --pbs: three nodes (SSH and API) sharing one cluster, guests, HA, Ceph and a backup server, all on the control page", async () => {
    const cli = startCli([
      "--cluster",
      "3",
      "--cluster-name",
      "pve-cluster",
      "--ceph",
      "--pbs",
      "--time-scale",
      "0.01",
    ]);
    try {
      const printed = JSON.parse(await cli.firstLine) as Printed & {
        cluster: {
          name: string;
          ceph: boolean;
          token: { id: string; secret: string };
          nodes: {
            name: string;
            ip: string;
            ssh: { host: string; port: number; username: string; password: string };
            api: { url: string; certSha256: string };
          }[];
        };
        pbs: {
          name: string;
          url: string;
          certSha256: string;
          token: { id: string; secret: string };
          bmc: {
            redfish: {
              address: string;
              port: number;
              systemId: string;
              certSha256: string;
              username: string;
              password: string;
            };
          };
        };
      };
      expect(printed.nodes).toEqual([]);
      expect(printed.cluster).toMatchObject({ name: "pve-cluster", ceph: true });
      expect(printed.cluster.nodes.map((n) => n.name)).toEqual(["pve1", "pve2", "pve3"]);
      const { token } = printed.cluster;
      // The console's own pinned client reaches every node with the printed token.
      const ask = (node: { api: { url: string; certSha256: string } }, path: string) =>
        pinnedApiCall(
          { baseUrl: node.api.url, certSha256: node.api.certSha256, timeoutMs: 5000 },
          { method: "GET", path, authorization: `PVEAPIToken=${token.id}=${token.secret}` },
          z.unknown(),
          `GET ${path}`,
        );
      for (const node of printed.cluster.nodes) {
        const rows = (await ask(node, "/cluster/status")) as { type: string; quorate?: number }[];
        expect(rows.filter((r) => r.type === "node")).toHaveLength(3);
        expect(rows.find((r) => r.type === "cluster")?.quorate).toBe(1);
        expect((rows.find((r) => r.type === "cluster") as { name?: string })?.name).toBe(
          "pve-cluster",
        );
      }
      // Each node has an SSH side to onboard it through Add host, on its own root.
      for (const node of printed.cluster.nodes) {
        expect((await labExecOk(node, "uname -n")).trim()).toBe(node.name);
      }
      const ceph = (await ask(printed.cluster.nodes[0]!, "/cluster/ceph/status")) as {
        monmap: { mons: { name: string }[] };
      };
      expect(ceph.monmap.mons.map((m) => m.name)).toEqual(["pve1", "pve2", "pve3"]);
      const version = await pinnedApiCall(
        { baseUrl: printed.pbs.url, certSha256: printed.pbs.certSha256, timeoutMs: 5000 },
        {
          method: "GET",
          path: "/version",
          authorization: `PBSAPIToken=${printed.pbs.token.id}:${printed.pbs.token.secret}`,
        },
        z.object({ version: z.string() }).loose(),
        "GET /version on the lab PBS",
      );
      expect(version.version).toMatch(/^4\./);
      // The PBS's own BMC, as its Edit → Power controller takes it, reads it On.
      const pbsBmc = printed.pbs.bmc.redfish;
      const reading = await redfishController({
        ...pbsBmc,
        auth: "basic",
        timeoutMs: 5000,
      }).readPowerState();
      expect(reading.state).toBe("on");

      type ClusterState = {
        quorate: boolean;
        ha: { armedState: string };
        nodes: { name: string; online: boolean }[];
        guests: { vmid: number; type: string; ha: boolean; storage: string; status: string }[];
        ceph: { flags: string[] } | null;
      };
      const state = (await (await fetch(`${printed.control}/api/cluster`)).json()) as ClusterState;
      expect(state).toMatchObject({
        quorate: true,
        ha: { armedState: "armed" },
        ceph: { flags: [] },
      });
      expect(state.guests).toHaveLength(9);
      expect(new Set(state.guests.map((g) => g.type))).toEqual(new Set(["qemu", "lxc"]));
      expect(state.guests.filter((g) => g.ha).length).toBe(3);
      expect(state.guests.filter((g) => g.storage === "ceph").length).toBe(6);
      expect(state.guests.every((g) => g.status === "running")).toBe(true);
      const page = await (await fetch(printed.control)).text();
      expect(page).toContain("Cluster pve-cluster");
      expect(page).toContain("cluster.hangOnShutdown");
      expect(page).toContain("Proxmox Backup Server pbs1");
      // Every node's BMC is printed (what the host page's Power controller form takes) and
      // switched from the page; pve3's Redfish reads its power.
      expect(page).toContain("bmc.pve3.unreachable");
      const bmc = (
        printed.cluster.nodes[2] as unknown as {
          bmc: { redfish: { port: number; username: string; password: string } };
        }
      ).bmc;
      const redfishState = async () => {
        const answer = await new Promise<string>((resolve, reject) => {
          const req = https.request(
            {
              host: "127.0.0.1",
              port: bmc.redfish.port,
              path: "/redfish/v1/Systems/1",
              rejectUnauthorized: false,
              auth: `${bmc.redfish.username}:${bmc.redfish.password}`,
            },
            (res) => {
              let text = "";
              res.on("data", (chunk: Buffer) => (text += chunk.toString()));
              res.on("end", () => resolve(text));
            },
          );
          req.on("error", reject);
          req.end();
        });
        return (JSON.parse(answer) as { PowerState: string }).PowerState;
      };
      expect(await redfishState()).toBe("On");

      // The fault switches and the power actions answer on the cluster's own paths.
      const hang = await fetch(`${printed.control}/api/cluster/faults`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ "cluster.hangOnShutdown": [100, 121] }),
      });
      expect(hang.status).toBe(200);
      const off = await fetch(`${printed.control}/api/cluster/actions/cluster.pve3.powerOff`, {
        method: "POST",
        headers: { "content-type": "application/json" },
      });
      expect(off.status).toBe(200);
      const after = (await off.json()) as ClusterState;
      expect(after.nodes.map((n) => [n.name, n.online])).toEqual([
        ["pve1", true],
        ["pve2", true],
        ["pve3", false],
      ]);
      expect(await portRefuses(Number(new URL(printed.cluster.nodes[2]!.api.url).port))).toBe(true);
      expect(await redfishState()).toBe("Off");
      const pbsOff = await fetch(`${printed.control}/api/pbs/faults`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ "pbs.powerPrivilege": false }),
      });
      expect(pbsOff.status).toBe(200);

      cli.child.kill("SIGINT");
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      const ports = [
        Number(new URL(printed.control).port),
        Number(new URL(printed.pbs.url).port),
        ...printed.cluster.nodes.map((n) => Number(new URL(n.api.url).port)),
      ];
      for (const port of ports) expect(await portRefuses(port), `port ${port} closed`).toBe(true);
    } finally {
      cli.child.kill("SIGKILL");
    }
  });

  it("refuses unknown flags and invalid values with a usage error", async () => {
    const unknown = startCli(["--nodes", "1", "--bogus"]);
    expect((await unknown.exited).code).toBe(2);
    expect(unknown.stderr()).toContain("Unknown option '--bogus'");
    expect(unknown.stderr()).toContain("Usage: npm run lab");

    const badValue = startCli(["--storage", "nfs"]);
    expect((await badValue.exited).code).toBe(2);
    expect(badValue.stderr()).toContain(
      "--storage must be one of dir-no-images, dir, lvm-thin, zfs",
    );

    const badUpsPort = startCli(["--ups-nut-port", "70000"]);
    expect((await badUpsPort.exited).code).toBe(2);
    expect(badUpsPort.stderr()).toContain("--ups-nut-port must be a port number (1..65535)");

    const cephAlone = startCli(["--ceph"]);
    expect((await cephAlone.exited).code).toBe(2);
    expect(cephAlone.stderr()).toContain("--ceph needs --cluster N");

    const nameAlone = startCli(["--cluster-name", "pve-cluster"]);
    expect((await nameAlone.exited).code).toBe(2);
    expect(nameAlone.stderr()).toContain("--cluster-name needs --cluster N");

    const badName = startCli(["--cluster", "3", "--cluster-name", "a name"]);
    expect((await badName.exited).code).toBe(2);
    expect(badName.stderr()).toContain("--cluster-name must be 1 to 15 letters, digits or dashes");

    const mixed = startCli(["--cluster", "3", "--nodes", "2"]);
    expect((await mixed.exited).code).toBe(2);
    expect(mixed.stderr()).toContain("drop --nodes");

    const tooSmall = startCli(["--cluster", "1"]);
    expect((await tooSmall.exited).code).toBe(2);
    expect(tooSmall.stderr()).toContain("--cluster must be a whole number from 2 to 9");
  });
});
