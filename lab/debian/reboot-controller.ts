import fs from "node:fs";
import path from "node:path";

import { labDir, readDebianFaults, readKernel, readTiming, scaled, writeBootId } from "./lab-state";
import { checkInterfaces, writeApplied } from "./network";
import { takePowerRequest, type PowerAction } from "./power";

/**
 * Runs in the lab process next to the SSH server. A simulated `reboot` (or `shutdown -r`,
 * `systemctl reboot`) leaves `.lab/power-request`; the controller then does what a real reboot
 * does to a console watching over SSH: after a short shutdown delay the SSH server stops
 * answering (connections refused) and every process of the host dies, the kernel installed
 * for the next boot becomes the running one, networking comes up from /etc/network/interfaces,
 * and after the boot time SSH answers again on the same port with the same host key.
 */

export type PowerState = "up" | "shutting-down" | "down" | "booting";

export type RebootRecord = {
  action: PowerAction;
  requestedAt: Date;
  downAt: Date | null;
  upAt: Date | null;
  kernelBefore: string | null;
  kernelAfter: string | null;
};

export type RebootControl = {
  /** `up` answers SSH; `down` does not (powered off, or a reboot that never returns). */
  readonly state: PowerState;
  /** Every reboot/poweroff, oldest first. */
  readonly history: readonly RebootRecord[];
  /** Reboots the host as if `reboot` had been run on it; resolves when it is back up (or stays down). */
  reboot(): Promise<void>;
  /** Powers on a host that is down (after poweroff, or a reboot that never returned). */
  powerOn(): Promise<void>;
  /** Resolves when SSH answers again. */
  waitUntilUp(timeoutMs?: number): Promise<void>;
};

export type PowerTarget = {
  /**
   * Stop answering SSH and kill every process of the host; `silent` is called the moment the
   * host stops answering (before its processes are gone).
   */
  stop(silent: () => void): Promise<void>;
  /** Answer SSH again on the same port with the host key on disk. */
  start(): Promise<void>;
};

export class RebootController implements RebootControl {
  state: PowerState = "up";
  readonly history: RebootRecord[] = [];
  private readonly timer: NodeJS.Timeout;
  private busy: Promise<void> | null = null;
  private stopped = false;
  private waiters: (() => void)[] = [];
  /**
   * The target's stop or start while it runs: the lab's stop waits for it, so a boot under way
   * never writes into (or starts processes from) a root that is being removed.
   */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly root: string,
    private readonly target: PowerTarget,
    pollMs = 50,
  ) {
    this.timer = setInterval(() => this.poll(), pollMs);
    this.timer.unref();
  }

  private poll(): void {
    if (this.busy !== null || this.stopped || this.state !== "up") return;
    const request = takePowerRequest(this.root);
    if (request === null) return;
    this.busy = this.cycle(request.action, new Date(request.requestedAt)).finally(() => {
      this.busy = null;
    });
  }

  async reboot(): Promise<void> {
    if (this.busy) await this.busy;
    this.busy = this.cycle("reboot", new Date());
    try {
      await this.busy;
    } finally {
      this.busy = null;
    }
  }

  async powerOn(): Promise<void> {
    if (this.busy) await this.busy;
    if (this.state !== "down" || this.stopped) return;
    await this.boot(this.history[this.history.length - 1] ?? null, 0);
  }

  waitUntilUp(timeoutMs = 30_000): Promise<void> {
    if (this.state === "up") return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`host not up after ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Stops watching (the lab is shutting down): a boot still waiting out its downtime never
   * completes; a power transition of the target already under way is waited for.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  private track(transition: Promise<void>): Promise<void> {
    this.inFlight.add(transition);
    const forget = () => this.inFlight.delete(transition);
    transition.then(forget, forget);
    return transition;
  }

  private async cycle(action: PowerAction, requestedAt: Date): Promise<void> {
    const record: RebootRecord = {
      action,
      requestedAt,
      downAt: null,
      upAt: null,
      kernelBefore: readKernel(this.root, "running")?.release ?? null,
      kernelAfter: null,
    };
    this.history.push(record);
    this.state = "shutting-down";
    // systemd stops services for a moment before sshd and the network go: the `reboot`
    // command itself gets to exit 0 over SSH (at least 300 ms, whatever the time scale).
    await delay(Math.max(300, scaled(this.root, 1500)));
    if (this.stopped) return;
    await this.track(
      this.target.stop(() => {
        record.downAt = new Date();
        this.state = "down";
      }),
    );
    fs.rmSync(path.join(labDir(this.root), "hostname-transient"), { force: true });
    fs.rmSync(path.join(labDir(this.root), "power-request"), { force: true });
    if (action === "poweroff") return;
    const faults = readDebianFaults(this.root);
    if (faults.rebootNeverReturns) return;
    const downMs = faults.rebootTakesMs ?? scaled(this.root, readTiming(this.root).rebootMs);
    await this.boot(record, downMs);
  }

  private async boot(record: RebootRecord | null, afterMs: number): Promise<void> {
    this.state = "booting";
    await delay(afterMs);
    if (this.stopped) return;
    const dir = labDir(this.root);
    const next = readKernel(this.root, "next");
    if (next !== null) {
      fs.writeFileSync(path.join(dir, "kernel"), `${next.release}\n`);
      fs.writeFileSync(path.join(dir, "kernel-version"), `${next.version}\n`);
      fs.rmSync(path.join(dir, "next-kernel"), { force: true });
      fs.rmSync(path.join(dir, "next-kernel-version"), { force: true });
    }
    const { errors, applied } = checkInterfaces(this.root);
    if (errors.length === 0) writeApplied(this.root, applied);
    fs.rmSync(path.join(this.root, "var/lib/dpkg/lock-frontend"), { force: true });
    writeBootId(this.root);
    await this.track(this.target.start());
    this.state = "up";
    if (record) {
      record.upAt = new Date();
      record.kernelAfter = readKernel(this.root, "running")?.release ?? null;
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
