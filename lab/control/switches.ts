import { z } from "zod";

/**
 * The fault switches and actions of one lab node, from all its parts (SSH server, Proxmox API,
 * Debian tools, …). Each part registers descriptors; the control API and page list them, flip
 * them and run them without knowing any part. A new fault plugs in with one `register` call.
 *
 * Names are `<part>.<switch>` (`ssh.refuseConnections`, `api.vmListStatus`, …).
 */

/** How the control page renders the switch's input. */
export type SwitchInput =
  | { type: "boolean" }
  | { type: "number"; nullable: boolean; min?: number; max?: number; unit?: string }
  | { type: "choice"; options: readonly string[] }
  | { type: "json" };

export type FaultSwitch<T = unknown> = {
  name: string;
  description: string;
  input: SwitchInput;
  /** Validates a value before `set` sees it. */
  schema: z.ZodType<T>;
  get(): T;
  set(value: T): void | Promise<void>;
};

export type LabAction = {
  name: string;
  description: string;
  run(): void | Promise<void>;
};

export type SwitchState = {
  name: string;
  description: string;
  input: SwitchInput;
  value: unknown;
};

export type ApplyResult =
  { ok: true } | { ok: false; fieldErrors: Record<string, string[]>; formErrors: string[] };

const NAME = /^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)+$/;

export class SwitchRegistry {
  private readonly switches = new Map<string, FaultSwitch>();
  private readonly actions = new Map<string, LabAction>();

  register<T>(descriptor: FaultSwitch<T>): this {
    assertNewName(descriptor.name, this.switches);
    this.switches.set(descriptor.name, descriptor as unknown as FaultSwitch);
    return this;
  }

  registerAction(action: LabAction): this {
    assertNewName(action.name, this.actions);
    this.actions.set(action.name, action);
    return this;
  }

  list(): SwitchState[] {
    return [...this.switches.values()].map((s) => ({
      name: s.name,
      description: s.description,
      input: s.input,
      value: s.get(),
    }));
  }

  listActions(): Array<{ name: string; description: string }> {
    return [...this.actions.values()].map(({ name, description }) => ({ name, description }));
  }

  get(name: string): unknown {
    const descriptor = this.switches.get(name);
    if (descriptor === undefined) throw new Error(`lab: no fault switch ${name}`);
    return descriptor.get();
  }

  /**
   * Validates every change first and applies none when one is invalid (unknown name or bad
   * value); then sets them in the order given.
   */
  async apply(changes: Readonly<Record<string, unknown>>): Promise<ApplyResult> {
    const fieldErrors: Record<string, string[]> = {};
    const parsed: Array<[FaultSwitch, unknown]> = [];
    for (const [name, value] of Object.entries(changes)) {
      const descriptor = this.switches.get(name);
      if (descriptor === undefined) {
        fieldErrors[name] = [`unknown switch (known: ${[...this.switches.keys()].join(", ")})`];
        continue;
      }
      const result = descriptor.schema.safeParse(value);
      if (result.success) parsed.push([descriptor, result.data]);
      else fieldErrors[name] = result.error.issues.map((issue) => issue.message);
    }
    if (Object.keys(fieldErrors).length > 0) return { ok: false, fieldErrors, formErrors: [] };
    if (parsed.length === 0) {
      return { ok: false, fieldErrors, formErrors: ["no switches given"] };
    }
    for (const [descriptor, value] of parsed) await descriptor.set(value);
    return { ok: true };
  }

  hasAction(name: string): boolean {
    return this.actions.has(name);
  }

  async run(name: string): Promise<void> {
    const action = this.actions.get(name);
    if (action === undefined) throw new Error(`lab: no action ${name}`);
    await action.run();
  }
}

function assertNewName(name: string, map: Map<string, unknown>): void {
  if (!NAME.test(name)) throw new Error(`lab: switch names are <part>.<name>, got ${name}`);
  if (map.has(name)) throw new Error(`lab: ${name} is registered twice`);
}

/** An on/off switch over a property. */
export function booleanSwitch(init: {
  name: string;
  description: string;
  get(): boolean;
  set(value: boolean): void | Promise<void>;
}): FaultSwitch<boolean> {
  return { ...init, input: { type: "boolean" }, schema: z.boolean() };
}

/** A duration or count; `null` = off. */
export function optionalNumberSwitch(init: {
  name: string;
  description: string;
  min?: number;
  max?: number;
  unit?: string;
  get(): number | null;
  set(value: number | null): void | Promise<void>;
}): FaultSwitch<number | null> {
  let number = z.number().int();
  if (init.min !== undefined) number = number.min(init.min);
  if (init.max !== undefined) number = number.max(init.max);
  const { min, max, unit, ...rest } = init;
  return {
    ...rest,
    input: {
      type: "number",
      nullable: true,
      ...(min === undefined ? {} : { min }),
      ...(max === undefined ? {} : { max }),
      ...(unit === undefined ? {} : { unit }),
    },
    schema: number.nullable(),
  };
}

/** A choice among fixed values. */
export function choiceSwitch<T extends string>(init: {
  name: string;
  description: string;
  options: readonly [T, ...T[]];
  get(): T;
  set(value: T): void | Promise<void>;
}): FaultSwitch<T> {
  const { options, ...rest } = init;
  return { ...rest, input: { type: "choice", options }, schema: z.enum(options) };
}

/** The SSH server's switches and actions (lab/ssh-server.ts). */
export function registerSshSwitches(
  registry: SwitchRegistry,
  ssh: {
    faults: {
      refuseConnections: boolean;
      dropAfterMs: number | null;
      refusePasswords: boolean;
      refusePublicKeys: string[];
    };
    rotateHostKey(): Promise<unknown>;
    restart(): Promise<void>;
  },
): SwitchRegistry {
  return registry
    .register(
      booleanSwitch({
        name: "ssh.refuseConnections",
        description: "New SSH connections are reset at once (open sessions keep working).",
        get: () => ssh.faults.refuseConnections,
        set: (value) => {
          ssh.faults.refuseConnections = value;
        },
      }),
    )
    .register(
      optionalNumberSwitch({
        name: "ssh.dropAfterMs",
        description:
          "Every command's connection is cut (no SSH goodbye) this long after it starts; empty = off.",
        min: 0,
        max: 3_600_000,
        unit: "ms",
        get: () => ssh.faults.dropAfterMs,
        set: (value) => {
          ssh.faults.dropAfterMs = value;
        },
      }),
    )
    .register(
      booleanSwitch({
        name: "ssh.refusePasswords",
        description:
          "Password authentication is off (PasswordAuthentication no): only keys get in.",
        get: () => ssh.faults.refusePasswords,
        set: (value) => {
          ssh.faults.refusePasswords = value;
        },
      }),
    )
    .register({
      name: "ssh.refusePublicKeys",
      description:
        'Public keys refused even when in authorized_keys: a JSON list of fingerprints ["SHA256:…"].',
      input: { type: "json" },
      schema: z.array(z.string().regex(/^SHA256:[A-Za-z0-9+/]{43}$/, "a SHA256:… fingerprint")),
      get: () => ssh.faults.refusePublicKeys,
      set: (value) => {
        ssh.faults.refusePublicKeys = [...value];
      },
    })
    .registerAction({
      name: "ssh.rotateHostKey",
      description: "The host gets a new SSH host key (a reinstall, or an interception).",
      run: async () => {
        await ssh.rotateHostKey();
      },
    })
    .registerAction({
      name: "ssh.restart",
      description: "The SSH server stops (killing what the host runs) and listens again, same key.",
      run: () => ssh.restart(),
    });
}
