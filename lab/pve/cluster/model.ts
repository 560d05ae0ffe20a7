/**
 * The shared side of a lab Proxmox VE cluster: what pmxcfs and corosync give every member the
 * same view of (membership, quorum, guest placement, HA resources and the HA manager's armed
 * state, Ceph's cluster map), plus the timed behaviour the power sequence has to cope with:
 * guests that take a while to shut down (or hang until forced), HA recovering guests of a node
 * that went away, and Ceph pools dropping below `min_size` freezing the guests that still do I/O.
 *
 * Time is real (timers), scaled by the options; every timer is cleared by `close()`.
 */

export type PveRelease = "8.4" | "9.1" | "9.2";

/** The pve-manager version a lab node of each release reports (`GET /version`, dpkg). */
export const PVE_MANAGER_VERSIONS: Record<PveRelease, string> = {
  "8.4": "8.4.14",
  "9.1": "9.1.1",
  "9.2": "9.2.0",
};
export type GuestType = "qemu" | "lxc";
export type GuestStatus = "running" | "stopped";

export type LabGuestSpec = {
  vmid: number;
  type: GuestType;
  node: string;
  name?: string;
  /** Default running. */
  status?: GuestStatus;
  template?: boolean;
  /** Managed by HA (`vm:<vmid>` / `ct:<vmid>`, state started). */
  ha?: boolean;
  /**
   * Where its disks live: `ceph` the RBD pool (freezes when the pool loses I/O), `nfs` the
   * cluster's shared NFS storage `nfs-vm`, `local` the node's own `local` directory (Proxmox
   * migrates it live only with `with-local-disks`). Default `local`.
   */
  storage?: GuestStorage;
  /** Time a clean shutdown takes; default the cluster's `guestShutdownMs`. */
  shutdownMs?: number;
  /** Configured memory (`memory:` in its config, `maxmem` in the lists). Default 2048. */
  memoryMiB?: number;
  /** Its config's `startup` property as written (`order=1,up=30`); none by default. */
  startup?: string;
  /**
   * Its config's `tags` property as written (`shed;web`): Proxmox keeps it in the guest's
   * config and shows it as is in `/cluster/resources` and the node's guest lists.
   */
  tags?: string;
};

export type GuestStorage = "ceph" | "nfs" | "local";

/** The NFS storage guests with `storage: "nfs"` keep their disks on (shared by every node). */
export const LAB_NFS_STORAGE = "nfs-vm";

export type LabCephOptions = {
  /** OSDs per node (default 2); every node is an OSD host. */
  osdsPerNode?: number;
  /** Monitor nodes; default the first three nodes. */
  monitors?: string[];
  /** Pools; default one RBD pool `vm-pool` size 3, min_size 2. */
  pools?: { name: string; size: number; minSize: number }[];
};

export type LabClusterTiming = {
  /** Default time a guest's clean shutdown takes. */
  guestShutdownMs: number;
  /** armed → disarming → disarmed. */
  haDisarmMs: number;
  /** From a node going away to HA starting its guests elsewhere (fencing + recovery). */
  haRecoveryMs: number;
  /** `POST /nodes/{node}/status command=shutdown` runs `sleep 2; poweroff`. */
  nodeShutdownDelayMs: number;
  /** A live migration (RAM copied to the target) of a VM, or a container's restart migration. */
  migrateMs: number;
  /** A restart migration of a container on local storage: its volume is copied as well. */
  localVolumeCopyMs: number;
  /** `qm start` / `pct start`: from the task to the guest reading running. */
  guestStartMs: number;
};

export type LabClusterFaults = {
  /** VMIDs whose clean shutdown never completes (only stop / forceStop ends them). */
  hangOnShutdown: number[];
  /** `PUT /cluster/ceph/flags` answers with a task that does not set the flags. */
  bulkFlagsIgnored: boolean;
  /** `PUT /cluster/ceph/flags/{flag}` answers 200 and sets nothing either (a Ceph that refuses). */
  singleFlagIgnored: boolean;
  /** VMIDs whose migration task fails: the target cannot be reached over SSH. */
  migrationFails: number[];
  /**
   * Nodes whose `GET /cluster/config/join` fails as when pmxcfs does not give corosync.conf
   * back (Proxmox then answers "node is not in a cluster, no join info available!").
   */
  joinInfoFails: string[];
};

export type ClusterNode = {
  name: string;
  nodeid: number;
  ip: string;
  online: boolean;
  memoryBytes: number;
};

/** What a node's host uses beside its guests (kernel, pve services). */
export const NODE_BASE_MEMORY_BYTES = 2 * 1024 ** 3;

export type ClusterGuest = {
  vmid: number;
  type: GuestType;
  node: string;
  name: string;
  status: GuestStatus;
  template: boolean;
  storage: GuestStorage;
  shutdownMs: number;
  memoryBytes: number;
  /** A shutdown or stop under way (a task holds it). */
  busy: boolean;
  /** `lock: migrate` while a migration holds it, and the node it goes to. */
  migratingTo: string | null;
  /** Its config's `startup` property, or null. */
  startup: string | null;
  /** Its config's `tags` property, or null. */
  tags: string | null;
};

export type HaResource = { sid: string; type: "vm" | "ct"; state: "started" | "stopped" };
export type ArmedState = "armed" | "disarming" | "disarmed";
export type ResourceMode = "freeze" | "ignore";

export const CEPH_FLAGS = [
  "nobackfill",
  "nodeep-scrub",
  "nodown",
  "noin",
  "noout",
  "norebalance",
  "norecover",
  "noscrub",
  "notieragent",
  "noup",
  "pause",
] as const;
export type CephFlag = (typeof CEPH_FLAGS)[number];

export type LabTask = {
  upid: string;
  node: string;
  type: string;
  id: string;
  user: string;
  starttime: number;
  pid: number;
  pstart: number;
  status: "running" | "stopped";
  exitstatus?: string;
};

export type LabClusterModelOptions = {
  name?: string;
  nodes: { name: string; ip: string }[];
  guests?: LabGuestSpec[];
  /** Default 9.2. */
  pveVersion?: PveRelease;
  ceph?: LabCephOptions | boolean;
  /** `ha: shutdown_policy=…` in datacenter.cfg; default conditional (absent from options). */
  haShutdownPolicy?: "conditional" | "freeze" | "failover" | "migrate";
  timing?: Partial<LabClusterTiming>;
  /** Every node's memory, or per node name. Default 64 GiB. */
  nodeMemoryMiB?: number | Record<string, number>;
};

export type GuestOutcome = "stopped" | "timeout" | "hung";

export class LabClusterModel {
  readonly name: string;
  readonly version: PveRelease;
  readonly nodes: ClusterNode[];
  readonly guests = new Map<number, ClusterGuest>();
  readonly ha = new Map<number, HaResource>();
  armedState: ArmedState = "armed";
  resourceMode: ResourceMode | null = null;
  readonly ceph: {
    osdsPerNode: number;
    monitors: string[];
    pools: { name: string; size: number; minSize: number }[];
    flags: Set<CephFlag>;
  } | null;
  readonly haShutdownPolicy: LabClusterModelOptions["haShutdownPolicy"];
  readonly timing: LabClusterTiming;
  readonly faults: LabClusterFaults = {
    hangOnShutdown: [],
    bulkFlagsIgnored: false,
    singleFlagIgnored: false,
    migrationFails: [],
    joinInfoFails: [],
  };
  readonly tasks = new Map<string, LabTask>();
  /**
   * The UDP port `POST /nodes/{node}/wakeonlan` sends to: Proxmox's is the "discard" port, 9;
   * a lab points it at its Wake-on-LAN listener (lab/power-controllers/wol.ts).
   */
  wakeOnLanPort = 9;
  /** Nodes told to shut down whose guests are still being stopped. */
  readonly shuttingDown = new Set<string>();
  /** Called when a node goes off (its API must stop answering). */
  onNodeOff: (node: string) => void = () => {};
  /** Called when HA recovered a guest on another node (its config file moves there). */
  onGuestMoved: (guest: ClusterGuest, from: string) => void = () => {};
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly waiters = new Set<() => void>();
  private taskCounter = 0;
  private closed = false;

  constructor(options: LabClusterModelOptions) {
    this.name = options.name ?? "lab";
    this.version = options.pveVersion ?? "9.2";
    const memoryMiB = (name: string) =>
      typeof options.nodeMemoryMiB === "number"
        ? options.nodeMemoryMiB
        : (options.nodeMemoryMiB?.[name] ?? 65_536);
    this.nodes = options.nodes.map((n, i) => ({
      ...n,
      nodeid: i + 1,
      online: true,
      memoryBytes: memoryMiB(n.name) * 1024 ** 2,
    }));
    this.timing = {
      guestShutdownMs: 1000,
      haDisarmMs: 1000,
      haRecoveryMs: 1000,
      nodeShutdownDelayMs: 2000,
      migrateMs: 2000,
      localVolumeCopyMs: 10_000,
      guestStartMs: 200,
      ...options.timing,
    };
    this.haShutdownPolicy = options.haShutdownPolicy;
    for (const spec of options.guests ?? []) this.addGuest(spec);
    const ceph = options.ceph === true ? {} : options.ceph || null;
    this.ceph = ceph && {
      osdsPerNode: ceph.osdsPerNode ?? 2,
      monitors: ceph.monitors ?? this.nodes.slice(0, 3).map((n) => n.name),
      pools: ceph.pools ?? [{ name: "vm-pool", size: 3, minSize: 2 }],
      flags: new Set(),
    };
  }

  addGuest(spec: LabGuestSpec): void {
    if (this.guests.has(spec.vmid)) throw new Error(`VMID ${spec.vmid} is used twice`);
    if (!this.node(spec.node)) throw new Error(`guest ${spec.vmid}: no node '${spec.node}'`);
    this.guests.set(spec.vmid, {
      vmid: spec.vmid,
      type: spec.type,
      node: spec.node,
      name: spec.name ?? `${spec.type === "qemu" ? "vm" : "ct"}${spec.vmid}`,
      status: spec.template ? "stopped" : (spec.status ?? "running"),
      template: spec.template ?? false,
      storage: spec.storage ?? "local",
      shutdownMs: spec.shutdownMs ?? this.timing.guestShutdownMs,
      memoryBytes: (spec.memoryMiB ?? 2048) * 1024 ** 2,
      busy: false,
      migratingTo: null,
      startup: spec.startup ?? null,
      tags: spec.tags ?? null,
    });
    if (spec.ha) {
      this.ha.set(spec.vmid, {
        sid: `${spec.type === "qemu" ? "vm" : "ct"}:${spec.vmid}`,
        type: spec.type === "qemu" ? "vm" : "ct",
        state: "started",
      });
    }
  }

  node(name: string): ClusterNode | undefined {
    return this.nodes.find((n) => n.name === name);
  }

  /** Corosync's majority: more than half of all votes (one per node) online. */
  get quorate(): boolean {
    return this.nodes.filter((n) => n.online).length * 2 > this.nodes.length;
  }

  /** Whether disarm/arm exist: pve-ha-manager ≥ 5.1.3, shipped with Proxmox VE 9.2. */
  get hasDisarm(): boolean {
    return this.version === "9.2";
  }

  /**
   * HA acts on its resources unless disarmed with `resource-mode=ignore` (then they count as
   * unmanaged: stopall and a node's own shutdown stop them like any guest).
   */
  haManages(vmid: number): boolean {
    if (!this.ha.has(vmid)) return false;
    return !(this.armedState === "disarmed" && this.resourceMode === "ignore");
  }

  /** HA recovers guests of lost nodes only while armed (disarming/disarmed: nobody does). */
  get haRecovers(): boolean {
    return this.armedState === "armed";
  }

  // -------------------------------------------------------------------------------------------
  // Ceph

  /** Nodes whose OSDs are up (every node is an OSD host). */
  osdHostsUp(): number {
    return this.nodes.filter((n) => n.online).length;
  }

  /**
   * One replica per host (failure domain host): a pool whose surviving replicas fall below
   * `min_size` blocks I/O. Flags do not change that — only guests no longer running do no I/O.
   */
  cephBlocked(): boolean {
    if (!this.ceph) return false;
    const up = this.osdHostsUp();
    return this.ceph.pools.some((p) => Math.min(p.size, up) < p.minSize);
  }

  /** A running guest on Ceph while the pool blocks I/O: its processes sit in D state. */
  frozen(guest: ClusterGuest): boolean {
    return guest.status === "running" && guest.storage === "ceph" && this.cephBlocked();
  }

  setFlag(flag: CephFlag, value: boolean): void {
    if (!this.ceph) throw new Error("Ceph is not installed");
    if (value) this.ceph.flags.add(flag);
    else this.ceph.flags.delete(flag);
  }

  // -------------------------------------------------------------------------------------------
  // Tasks

  startTask(node: string, type: string, id: string, user: string): LabTask {
    const now = Math.floor(Date.now() / 1000);
    const pid = 100_000 + ++this.taskCounter;
    const pstart = 1_000_000 + this.taskCounter;
    const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, "0");
    const upid = `UPID:${node}:${hex(pid)}:${hex(pstart)}:${hex(now)}:${type}:${id}:${user}:`;
    const task: LabTask = {
      upid,
      node,
      type,
      id,
      user,
      starttime: now,
      pid,
      pstart,
      status: "running",
    };
    this.tasks.set(upid, task);
    return task;
  }

  endTask(task: LabTask, exitstatus: string): void {
    task.status = "stopped";
    task.exitstatus = exitstatus;
    this.changed();
  }

  // -------------------------------------------------------------------------------------------
  // Guests

  /**
   * A clean shutdown (ACPI / `lxc-stop` with timeout): done after the guest's shutdownMs unless
   * it hangs (fault) or is frozen on Ceph I/O; after `timeoutS` it is killed when `forceStop`,
   * else the task fails and the guest keeps running — as `qm shutdown` does.
   */
  async shutdownGuest(vmid: number, timeoutS: number, forceStop: boolean): Promise<GuestOutcome> {
    const guest = this.guests.get(vmid)!;
    if (guest.status === "stopped") return "stopped";
    const hangs = this.faults.hangOnShutdown.includes(vmid);
    const deadline = Date.now() + timeoutS * 1000;
    const cleanAt = Date.now() + guest.shutdownMs;
    guest.busy = true;
    try {
      const outcome = await this.waitFor(() => {
        if (guest.status === "stopped") return "stopped";
        if (!hangs && !this.frozen(guest) && Date.now() >= cleanAt) return "stopped";
        if (Date.now() >= deadline) return "timeout";
        return null;
      }, [cleanAt, deadline]);
      if (outcome === "stopped") {
        this.markStopped(guest);
        return "stopped";
      }
      if (!forceStop) return "timeout";
    } finally {
      guest.busy = false;
    }
    return this.stopGuest(vmid);
  }

  /** Guests started (`status/start`), in the order their start tasks began. */
  readonly guestStarts: { vmid: number; at: number }[] = [];

  /**
   * `qm start` / `pct start`: the task runs the guest after `guestStartMs`. Refused (the task
   * fails) when the guest runs already or its node is off by then.
   */
  async startGuest(vmid: number): Promise<"running" | string> {
    const guest = this.guests.get(vmid)!;
    this.guestStarts.push({ vmid, at: Date.now() });
    if (guest.status === "running") return `VM ${vmid} already running`;
    await this.sleep(this.timing.guestStartMs);
    if (!this.node(guest.node)?.online) return `node '${guest.node}' is not online`;
    guest.status = "running";
    this.changed();
    return "running";
  }

  /** A hard stop: at once, unless the guest is frozen on I/O (D state) — then until it thaws. */
  async stopGuest(vmid: number): Promise<GuestOutcome> {
    const guest = this.guests.get(vmid)!;
    guest.busy = true;
    try {
      const outcome = await this.waitFor(() => (this.frozen(guest) ? null : "stopped"), []);
      if (outcome === "stopped" && guest.status === "running") this.markStopped(guest);
      return outcome ?? "hung";
    } finally {
      guest.busy = false;
    }
  }

  private markStopped(guest: ClusterGuest): void {
    guest.status = "stopped";
    // A shutdown of an HA-managed guest goes through HA: its request state becomes stopped.
    const res = this.ha.get(guest.vmid);
    if (res && this.haManages(guest.vmid)) res.state = "stopped";
    this.changed();
  }

  /**
   * `stopall`: the node's guests (HA-managed ones only when `vms` names them), `maxWorkers` at
   * a time, each shut down with `timeoutS` and killed after it when `forceStop`.
   */
  async stopAll(
    node: string,
    options: { vms?: number[]; timeoutS: number; forceStop: boolean; maxWorkers: number },
  ): Promise<Map<number, GuestOutcome>> {
    const targets = [...this.guests.values()].filter(
      (g) =>
        g.node === node &&
        g.status === "running" &&
        (options.vms ? options.vms.includes(g.vmid) : !this.haManages(g.vmid)),
    );
    return this.inParallel(targets, options);
  }

  async inParallel(
    targets: ClusterGuest[],
    options: { timeoutS: number; forceStop: boolean; maxWorkers: number },
  ): Promise<Map<number, GuestOutcome>> {
    const results = new Map<number, GuestOutcome>();
    const queue = [...targets];
    const worker = async () => {
      for (let g = queue.shift(); g; g = queue.shift()) {
        results.set(g.vmid, await this.shutdownGuest(g.vmid, options.timeoutS, options.forceStop));
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.maxWorkers) }, worker));
    return results;
  }

  // -------------------------------------------------------------------------------------------
  // Nodes

  /**
   * A node's orderly shutdown: after `sleep 2`, pve-guests stops its guests (stopall with its
   * defaults: 180 s, force-stop) and, while HA is armed under the `conditional` or `failover`
   * policy, HA's LRM stops the HA-managed ones to be recovered elsewhere; under `freeze` (and
   * `migrate`, not modelled further) or a `freeze`-mode disarm nobody stops them and they die
   * with the node. Then it powers off. A guest frozen on I/O keeps the node up — the hang the
   * power sequence must avoid.
   */
  async shutdownNode(node: string): Promise<void> {
    if (this.shuttingDown.has(node)) return;
    this.shuttingDown.add(node);
    await this.sleep(this.timing.nodeShutdownDelayMs);
    const lrmStops =
      this.haRecovers && this.haShutdownPolicy !== "freeze" && this.haShutdownPolicy !== "migrate";
    const own = [...this.guests.values()].filter(
      (g) => g.node === node && g.status === "running" && (!this.haManages(g.vmid) || lrmStops),
    );
    const recover = own.filter((g) => this.haManages(g.vmid) && lrmStops).map((g) => g.vmid);
    await this.inParallel(own, { timeoutS: 180, forceStop: true, maxWorkers: 4 });
    if (this.closed) return;
    // The LRM stopped them for the shutdown, not on request: HA still wants them started.
    for (const vmid of recover) this.ha.get(vmid)!.state = "started";
    this.powerOff(node, { recover: lrmStops });
  }

  /**
   * The node is gone (a power cut, or the end of its shutdown): its guests with it. After a cut
   * HA fences and recovers; after an orderly shutdown only where the LRM stopped them for that.
   */
  powerOff(node: string, options: { recover: boolean } = { recover: true }): void {
    const n = this.node(node);
    if (!n || !n.online) return;
    n.online = false;
    this.shuttingDown.delete(node);
    for (const g of this.guests.values()) if (g.node === node) g.status = "stopped";
    this.onNodeOff(node);
    this.changed();
    if (options.recover && this.haRecovers && this.quorate) void this.recoverFrom(node);
  }

  powerOn(node: string): void {
    const n = this.node(node);
    if (!n || n.online) return;
    n.online = true;
    this.changed();
  }

  /** HA's recovery: started resources of a lost node move to the online node with fewest guests. */
  private async recoverFrom(node: string): Promise<void> {
    await this.sleep(this.timing.haRecoveryMs);
    if (this.closed || !this.haRecovers || !this.quorate) return;
    for (const [vmid, res] of this.ha) {
      const guest = this.guests.get(vmid)!;
      if (guest.node !== node || res.state !== "started") continue;
      const online = this.nodes.filter((n) => n.online);
      if (online.length === 0) return;
      const load = (name: string) =>
        [...this.guests.values()].filter((g) => g.node === name).length;
      const target = online.reduce((a, b) => (load(b.name) < load(a.name) ? b : a));
      guest.node = target.name;
      guest.status = "running";
      this.onGuestMoved(guest, node);
    }
    this.changed();
  }

  // -------------------------------------------------------------------------------------------
  // Memory and migration

  /**
   * A node's memory as `GET /nodes/{node}/status` reports it: the host's own share, its running
   * guests', and that of a guest migrating onto it (its target process holds the memory while
   * the RAM is copied).
   */
  memoryOf(node: string): { total: number; used: number; free: number } {
    const n = this.node(node)!;
    const held = [...this.guests.values()].filter(
      (g) => (g.node === node && g.status === "running") || g.migratingTo === node,
    );
    const used = Math.min(
      n.memoryBytes,
      NODE_BASE_MEMORY_BYTES + held.reduce((sum, g) => sum + g.memoryBytes, 0),
    );
    return { total: n.memoryBytes, used, free: n.memoryBytes - used };
  }

  /**
   * The migration task's work (`qm migrate --online`, `pct migrate --restart`): the guest is
   * locked for its duration, a running VM keeps running while its RAM is copied, a running
   * container is stopped, moved and started again; at the end its config moves to the target's
   * folder in pmxcfs. As Proxmox does, a running VM with a disk on the node's local storage is
   * refused (`with-local-disks` is not modelled), and so is one the target has no memory left
   * for; a node that goes away aborts it. Stopped guests and containers on local storage move
   * offline, their volumes copied. Returns the task's exit status.
   */
  async migrateGuest(vmid: number, target: string): Promise<string> {
    const guest = this.guests.get(vmid)!;
    const from = guest.node;
    const started = Date.now();
    const aborted = (why: string) =>
      `migration aborted (duration 00:00:${String(Math.round((Date.now() - started) / 1000)).padStart(2, "0")}): ${why}`;
    const live = guest.status === "running";
    if (guest.type === "qemu" && live && guest.storage === "local") {
      await this.sleep(50);
      return aborted("can't live migrate attached local disks without with-local-disks option");
    }
    if (live && this.memoryOf(target).free < guest.memoryBytes) {
      await this.sleep(50);
      return aborted(`failed to start the guest on ${target}: Cannot allocate memory`);
    }
    if (this.faults.migrationFails.includes(vmid)) {
      await this.sleep(this.timing.migrateMs / 2);
      const ip = this.node(target)!.ip;
      return aborted(
        `command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=${target}' root@${ip} /bin/true' failed: exit code 255`,
      );
    }
    guest.migratingTo = target;
    this.changed();
    try {
      const restart = guest.type === "lxc" && live;
      if (restart) {
        await this.sleep(guest.shutdownMs);
        guest.status = "stopped";
        this.changed();
      }
      const copy = guest.storage === "local" ? this.timing.localVolumeCopyMs : 0;
      await this.sleep(this.timing.migrateMs + copy);
      if (!this.node(from)?.online) return aborted(`source node ${from} went away`);
      if (!this.node(target)?.online) return aborted(`target node ${target} went away`);
      guest.node = target;
      if (restart) guest.status = "running";
      this.onGuestMoved(guest, from);
      return "OK";
    } finally {
      guest.migratingTo = null;
      this.changed();
    }
  }

  disarm(mode: ResourceMode): void {
    this.resourceMode = mode;
    if (this.armedState === "disarmed") return;
    this.armedState = "disarming";
    this.changed();
    void this.sleep(this.timing.haDisarmMs).then(() => {
      if (this.armedState !== "disarming") return;
      this.armedState = "disarmed";
      this.changed();
    });
  }

  arm(): void {
    this.armedState = "armed";
    this.resourceMode = null;
    this.changed();
  }

  // -------------------------------------------------------------------------------------------
  // Time

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return;
      const t = setTimeout(
        () => {
          this.timers.delete(t);
          resolve();
        },
        Math.max(0, ms),
      );
      this.timers.add(t);
    });
  }

  /** Re-evaluates `check` on every state change and at the given instants; null = not yet. */
  private waitFor<T>(check: () => T | null, instants: number[]): Promise<T | null> {
    return new Promise((resolve) => {
      const timers = new Set<NodeJS.Timeout>();
      let done = false;
      const waiter = () => {
        if (done) return;
        const result = this.closed ? null : check();
        if (result === null && !this.closed) return;
        done = true;
        this.waiters.delete(waiter);
        for (const t of timers) {
          clearTimeout(t);
          this.timers.delete(t);
        }
        resolve(result);
      };
      // A timer may fire a millisecond before Date.now() reaches its instant: re-armed until then.
      const arm = (at: number) => {
        const t = setTimeout(
          () => {
            timers.delete(t);
            this.timers.delete(t);
            waiter();
            if (!done && Date.now() < at) arm(at);
          },
          Math.max(0, at - Date.now()) + 1,
        );
        timers.add(t);
        this.timers.add(t);
      };
      this.waiters.add(waiter);
      for (const at of instants) arm(at);
      waiter();
    });
  }

  /** State changed: waiting shutdowns and stops look again (a thaw, a forced stop). */
  changed(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.changed();
  }
}
