import { execFile, spawn, type ChildProcess } from "node:child_process";
import dgram from "node:dgram";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

import { listenKeepingPort } from "../listen-port";
import type { LabChassis } from "./chassis";

export type LabIpmi = {
  port: number;
  /** ipmi_sim's process id while it runs (tests check it is gone after stop). */
  pid(): number | null;
  /** Unreachable: ipmi_sim is stopped (no UDP answer at all); back: started again on its port. */
  setUnreachable(value: boolean): Promise<void>;
  stop(): Promise<void>;
};

/**
 * A lab node's BMC over IPMI LAN: Debian's real OpenIPMI simulator, `ipmi_sim` (package
 * `openipmi`), on 127.0.0.1 and a free UDP port, with one administrator user (RMCP+, what
 * `ipmitool -I lanplus` speaks). Its chassis power is wired to the lab node through ipmi_sim's
 * `chassis_control` program (lanserv's extcmd: `<prog> get power` answers `power:<0|1>`,
 * `<prog> set power <0|1>` switches): a small script that asks this process's loopback hub,
 * which reads and drives the node's chassis.
 */
export async function startLabIpmi(options: {
  chassis: LabChassis;
  dir: string;
  username: string;
  password: string;
}): Promise<LabIpmi> {
  const { chassis, dir } = options;
  fs.mkdirSync(path.join(dir, "state"), { recursive: true });

  // The hub the chassis_control script calls: GET /power, POST /power/<0|1>.
  const hub = http.createServer((req, res) => {
    const url = req.url ?? "/";
    if (req.method === "GET" && url === "/power") {
      res.end(`power:${chassis.isOn() ? 1 : 0}\n`);
      return;
    }
    const set = /^\/power\/([01])$/.exec(url);
    if (req.method === "POST" && set) {
      if (set[1] === "1") chassis.requestPowerOn("ipmi chassis power on");
      else void chassis.forceOff();
      res.end("\n");
      return;
    }
    res.statusCode = 404;
    res.end("\n");
  });
  const hubPort = await listenKeepingPort(hub, 0, "127.0.0.1");

  const script = path.join(dir, "chassis-control");
  fs.writeFileSync(
    script,
    [
      "#!/bin/sh",
      "# ipmi_sim's chassis_control program: `get power` or `set power <0|1>`.",
      `hub=http://127.0.0.1:${hubPort}`,
      'case "$1" in',
      '  get) exec curl -sfS --max-time 5 "$hub/power" ;;',
      '  set) [ "$2" = power ] || exit 0; exec curl -sfS --max-time 5 -X POST "$hub/power/$3" ;;',
      "esac",
      "exit 1",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  fs.writeFileSync(
    path.join(dir, "sim.emu"),
    [
      "mc_setbmc 0x20",
      "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr",
      "mc_enable 0x20",
      "",
    ].join("\n"),
  );
  const config = (port: number) =>
    [
      `name "lab-${chassis.node.name}"`,
      "set_working_mc 0x20",
      "  startlan 1",
      `    addr 127.0.0.1 ${port}`,
      "    priv_limit admin",
      "    allowed_auths_callback none md2 md5 straight",
      "    allowed_auths_user none md2 md5 straight",
      "    allowed_auths_operator none md2 md5 straight",
      "    allowed_auths_admin none md2 md5 straight",
      "    guid a123456789abcdefa123456789abcdef",
      "  endlan",
      `  chassis_control "${script}"`,
      `  user 2 true "${options.username}" "${options.password}" admin 10 none md2 md5 straight`,
      "",
    ].join("\n");

  let port = 0;
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const candidate = port || (await freeUdpPort());
      fs.writeFileSync(path.join(dir, "lan.conf"), config(candidate));
      // setpriv --pdeathsig: ipmi_sim dies with this process even when it is killed outright.
      const started = spawn(
        "setpriv",
        [
          "--pdeathsig",
          "KILL",
          "--",
          "ipmi_sim",
          "-c",
          path.join(dir, "lan.conf"),
          "-f",
          path.join(dir, "sim.emu"),
          "-s",
          path.join(dir, "state"),
          "-n",
        ],
        { stdio: "ignore" },
      );
      const exited = new Promise<void>((resolve) => started.once("exit", () => resolve()));
      started.once("error", () => undefined);
      if (await answers(candidate, options, exited)) {
        port = candidate;
        child = started;
        return;
      }
      await stopChild(started);
      if (attempt >= 4 || port !== 0)
        throw new Error(
          `lab: ipmi_sim for ${chassis.node.name} did not answer on 127.0.0.1:${candidate}`,
        );
    }
  };
  await start();

  return {
    get port() {
      return port;
    },
    pid: () => child?.pid ?? null,
    async setUnreachable(value) {
      chassis.faults.unreachable = value;
      if (value && child) {
        const c = child;
        child = null;
        await stopChild(c);
      } else if (!value && !child) {
        await start();
      }
    },
    async stop() {
      if (child) await stopChild(child);
      child = null;
      await new Promise<void>((resolve) => hub.close(() => resolve()));
    },
  };
}

/** Whether ipmi_sim answers a session as this user (polled until it does, or it exited). */
async function answers(
  port: number,
  user: { username: string; password: string },
  exited: Promise<void>,
): Promise<boolean> {
  let gone = false;
  void exited.then(() => (gone = true));
  for (let tries = 0; tries < 40 && !gone; tries++) {
    const ok = await new Promise<boolean>((resolve) =>
      execFile(
        "ipmitool",
        [
          "-I",
          "lanplus",
          "-H",
          "127.0.0.1",
          "-p",
          String(port),
          "-U",
          user.username,
          "-E",
          "-N",
          "1",
          "-R",
          "1",
          "chassis",
          "power",
          "status",
        ],
        { env: { ...process.env, IPMI_PASSWORD: user.password }, timeout: 10_000 },
        (error) => resolve(error === null),
      ),
    );
    if (ok) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** A UDP port on 127.0.0.1 that was free a moment ago, below the kernel's ephemeral range. */
async function freeUdpPort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const socket = dgram.createSocket("udp4");
      socket.once("error", () => {
        socket.close();
        resolve(false);
      });
      socket.bind(candidate, "127.0.0.1", () => socket.close(() => resolve(true)));
    });
    if (free) return candidate;
  }
}
