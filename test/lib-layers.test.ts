import path from "node:path";

import { describe, expect, it } from "vitest";

import { END_WITH_SUPERVISOR_IMPORT } from "@/lib/supervisor/supervisor-pid";
import {
  folderCycles,
  folderEdges,
  isTestFile,
  readSources,
  sourceFiles,
  type FolderEdges,
  type Import,
} from "./import-graph";

type Layers = ReadonlyArray<{ name: string; folders: readonly string[] }>;

/**
 * lib/ in layers (docs/README.md, "Where things are"): each folder of lib/ belongs to one layer
 * and imports only from its own layer or the ones below; no two folders import each other, even
 * within a layer. Read from the real imports (TypeScript's own parser and module resolution over
 * the project's tsconfig), test files left out: a test may reach across layers to set things up.
 *
 * Lowest first. A new folder of lib/ fails this test until it is given its layer here and in
 * docs/README.md.
 */
const LAYERS: Layers = [
  {
    // Storage, transport and records every part uses; no workflow of the console's own.
    name: "foundation",
    folders: [
      "(root)",
      "config",
      "db",
      "audit",
      "secrets",
      "live",
      "ssh",
      "proxmox",
      "logs",
      "http",
    ],
  },
  {
    // What reaching one host takes: its login, the console's key, its API client, its row locked,
    // and its out-of-band power controller (BMC or Wake-on-LAN).
    name: "host access",
    folders: ["host-access", "power-controllers"],
  },
  {
    // Runs and their steps' contract, the tick, what a run notifies.
    name: "engine",
    folders: ["pipeline", "notify", "runs"],
  },
  {
    // The host pipelines and what their steps read.
    name: "pipelines",
    folders: ["steps", "console-key", "catalog"],
  },
  {
    // What the web calls: hosts, power (with its monitor and shutdown pipeline), accounts,
    // and the route helpers over them.
    name: "operations",
    folders: ["hosts", "power", "auth", "api"],
  },
  {
    // Where a process starts from: server actions (web), the registry of every pipeline
    // (worker, run views), npm start's supervisor.
    name: "entry points",
    folders: ["actions", "registry", "supervisor"],
  },
];

/**
 * lib/power in layers the same way (docs/README.md, "Where things are"): each sub-folder belongs
 * to one layer and imports only from its own or a lower one, no two sub-folders import each
 * other, and no module sits loose in lib/power itself. Lowest first. A new sub-folder of lib/power
 * fails this test until it is given its layer here and in docs/README.md.
 */
const POWER_LAYERS: Layers = [
  {
    // Talking to a UPS over NUT or SNMP, and what a reading is; nothing of the console's own.
    name: "UPS sources",
    folders: ["ups"],
  },
  {
    // The configuration: settings and their store, the forms' schemas, a UPS source's settings
    // and secret, the plan an admin confirmed when arming.
    name: "configuration",
    folders: ["config"],
  },
  {
    // What the decisions read and the records they append: the triggers and the monitor's
    // stored state, the targets and their shutdown call, power events and a run's actions.
    name: "facts and records",
    folders: ["triggers", "targets", "records"],
  },
  {
    // The shared cluster facts: discovery and the cluster groups, both cluster APIs, the
    // sequence's plan, the consolidation check.
    name: "clusters",
    folders: ["clusters"],
  },
  {
    // The steps of the power-shutdown pipeline: the standalone shutdown, the cluster sequence,
    // consolidation (which runs first and uses both); and of the power-back pipeline.
    name: "steps",
    folders: ["shutdown", "cluster-sequence", "consolidate", "power-back", "shed"],
  },
  {
    // Composition roots: the power-shutdown pipeline (its step order, plan, start, preview),
    // the power-back pipeline, and the cluster refresh task (discovery, then the consolidation
    // checks).
    name: "composition roots",
    folders: ["shutdown-pipeline", "power-back-pipeline", "shed-pipeline", "cluster-refresh"],
  },
  {
    // What starts runs: the UPS monitor, the self-test, drills.
    name: "processes",
    folders: ["monitor", "self-test", "drill"],
  },
  {
    // What the web calls: the operations and the power pages' queries.
    name: "web",
    folders: ["operations", "queries"],
  },
];

/**
 * lib/steps the same way: the onboarding steps above the remote-job machinery they use, which
 * asks only `RemoteHost` of a step's services and never imports a step.
 */
const STEPS_LAYERS: Layers = [
  {
    // A detached job on a host, the watch loop that waits for it, its log into the run log.
    name: "remote jobs",
    folders: ["remote-job"],
  },
  {
    // The host pipeline's steps, their services and failure advice, the step order.
    name: "onboarding steps",
    folders: ["onboarding"],
  },
];

/**
 * The one kind of upward import allowed: the database schema naming the JSON shape a jsonb
 * column holds, from the power module that owns the shape. `import type` only, so it is gone
 * after compilation and the schema still loads without lib/power.
 */
const TYPE_ONLY_UPWARD: ReadonlyArray<{ from: string; to: string }> = [
  { from: "lib/db/schema/", to: "lib/power/" },
];

/** Modules that must never reach a browser bundle: they hold or read secrets. */
const SERVER_ONLY = [
  "lib/db/client.ts",
  "lib/db/embedded-postgres-credentials.ts",
  "lib/secrets/key.ts",
  "lib/secrets/seal.ts",
  "lib/ssh/client.ts",
  "lib/host-access/host-credential.ts",
  "lib/host-access/console-key-store.ts",
  "lib/host-access/proxmox-client.ts",
  "lib/power-controllers/store.ts",
  "lib/auth/cli-database.ts",
];

/** Not product code: the product (and lib/ above all) never imports these. */
const NOT_PRODUCT = ["lab", "test", "e2e", "bench"];

const root = path.resolve(import.meta.dirname, "..");
const PRODUCT_FOLDERS = ["lib", "app", "components", "worker", "scripts"];
const ROOT_FILES = ["proxy.ts", "next.config.ts", "drizzle.config.ts"];

/** `lib/steps` for lib/steps/onboarding/index.ts, `lib/(root)` for lib/errors.ts, `app` for app/… */
function folderOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] !== "lib") return parts.length > 1 ? parts[0]! : "(repository root)";
  return parts.length > 2 ? `lib/${parts[1]}` : "lib/(root)";
}

const layerOf = layerIndex(LAYERS, "lib/");

function allowedUpward(edge: Import): boolean {
  return TYPE_ONLY_UPWARD.some(
    (rule) => edge.typeOnly && edge.from.startsWith(rule.from) && edge.to!.startsWith(rule.to),
  );
}

const describeEdge = (edge: Import) =>
  `${edge.from}:${edge.line} imports ${edge.to}${edge.typeOnly ? " (type only)" : ""}`;

/** Each folder, named from the repository root, to the index of its layer. */
function layerIndex(layers: Layers, prefix: string): Map<string, number> {
  return new Map(
    layers.flatMap((layer, index) =>
      layer.folders.map((folder) => [`${prefix}${folder}`, index] as const),
    ),
  );
}

/** Every folder edge that points into a higher layer, with the imports that make it. */
function upwardImports(layers: Layers, layerOf: Map<string, number>, edges: FolderEdges) {
  const upward: string[] = [];
  for (const [from, out] of edges) {
    for (const [to, imports] of out) {
      if (layerOf.get(to)! <= layerOf.get(from)!) continue;
      const names = `${layers[layerOf.get(from)!]!.name} -> ${layers[layerOf.get(to)!]!.name}`;
      upward.push(`${from} -> ${to} (${names}):\n    ${imports.map(describeEdge).join("\n    ")}`);
    }
  }
  return upward;
}

/** Every folder cycle, with the imports inside it. */
function describedCycles(folders: readonly string[], edges: FolderEdges) {
  return folderCycles(folders, edges).map((component) => {
    const inside = component.flatMap((from) =>
      [...(edges.get(from) ?? [])]
        .filter(([to]) => component.includes(to))
        .map(
          ([to, imports]) => `${from} -> ${to}:\n    ${imports.map(describeEdge).join("\n    ")}`,
        ),
    );
    return `cycle ${component.join(" ")}:\n  ${inside.join("\n  ")}`;
  });
}

const productFiles = [
  ...PRODUCT_FOLDERS.flatMap((folder) => sourceFiles(root, folder)),
  ...ROOT_FILES,
].filter((file) => !isTestFile(file));
const sources = readSources(root, productFiles);
const byFile = new Map(sources.map((source) => [source.file, source]));
const libSources = sources.filter((source) => source.file.startsWith("lib/"));
const libFolders = [...new Set(libSources.map((source) => folderOf(source.file)))].sort();
const edges = folderEdges(sources, "lib/", folderOf);
// Edges that count for layering: the allowed type-only ones carry no dependency of the code.
const layeringEdges = new Map(
  [...edges].map(([from, out]) => [
    from,
    new Map(
      [...out]
        .map(([to, imports]) => [to, imports.filter((edge) => !allowedUpward(edge))] as const)
        .filter(([, imports]) => imports.length > 0),
    ),
  ]),
);

describe("lib/ in layers", () => {
  it("reads the real import graph (not an empty or partial one)", () => {
    // Measured when the layers were drawn: 354 modules in 24 folders, 111 folder edges.
    expect(libSources.length).toBeGreaterThan(300);
    expect(libFolders.length).toBe(LAYERS.flatMap((layer) => layer.folders).length);
    const edgeCount = [...edges.values()].reduce((sum, out) => sum + out.size, 0);
    expect(edgeCount).toBeGreaterThan(90);
    // Known edges, one per layer boundary, resolved through the alias, index files and `./`.
    expect(edges.get("lib/steps")?.has("lib/pipeline")).toBe(true);
    expect(edges.get("lib/steps")?.has("lib/ssh")).toBe(true);
    expect(edges.get("lib/hosts")?.has("lib/host-access")).toBe(true);
    expect(edges.get("lib/actions")?.has("lib/power")).toBe(true);
    expect(edges.get("lib/registry")?.has("lib/steps")).toBe(true);
  });

  it("gives every folder of lib/ exactly one layer", () => {
    const listed: string[] = LAYERS.flatMap((layer) =>
      layer.folders.map((folder) => `lib/${folder}`),
    );
    expect(new Set(listed).size, "a folder listed in two layers").toBe(listed.length);
    expect(
      libFolders.filter((folder) => !layerOf.has(folder)),
      "folders without a layer",
    ).toEqual([]);
    expect(
      listed.filter((folder) => !libFolders.includes(folder)),
      "layers list a folder that is gone",
    ).toEqual([]);
  });

  it("imports only from the same layer or below", () => {
    expect(upwardImports(LAYERS, layerOf, layeringEdges), "imports from a higher layer").toEqual(
      [],
    );
  });

  it("has no import cycle between folders, within a layer either", () => {
    expect(describedCycles(libFolders, layeringEdges)).toEqual([]);
  });

  it("allows an upward type-only import only where the exception says, and only type-only", () => {
    const used = sources
      .flatMap((source) => source.imports)
      .filter((edge) => edge.to && allowedUpward(edge));
    expect(used.length, "the exception is unused: remove it").toBeGreaterThan(0);
    const valueImports = sources
      .flatMap((source) => source.imports)
      .filter(
        (edge) =>
          !edge.typeOnly &&
          TYPE_ONLY_UPWARD.some(
            (rule) => edge.from.startsWith(rule.from) && edge.to?.startsWith(rule.to),
          ),
      );
    expect(valueImports.map(describeEdge)).toEqual([]);
  });

  it("never imports the UI, the worker, the lab or the tests from lib/", () => {
    const outside = libSources
      .flatMap((source) => source.imports)
      .filter(
        (edge) => edge.to && !edge.to.startsWith("lib/") && !edge.to.startsWith("node_modules/"),
      )
      .map(describeEdge);
    expect(outside).toEqual([]);
  });

  it("never imports the lab, the tests, e2e or bench from the product", () => {
    const reached = sources
      .flatMap((source) => source.imports)
      .filter((edge) => edge.to && NOT_PRODUCT.includes(edge.to.split("/")[0]!))
      .map(describeEdge);
    expect(reached).toEqual([]);
  });

  it("holds no test-only module: everything in lib/ is reached from the product", () => {
    // Entry points of the product: the app, the UI, the worker, the scripts, the root configs,
    // and the one module a child process loads by path (`node --import`).
    const entries = sources.filter((source) => !source.file.startsWith("lib/")).map((s) => s.file);
    entries.push(path.posix.normalize(END_WITH_SUPERVISOR_IMPORT));
    expect(entries.length).toBeGreaterThan(100);
    const reached = new Set<string>();
    const stack = [...entries];
    while (stack.length > 0) {
      const file = stack.pop()!;
      if (reached.has(file)) continue;
      reached.add(file);
      for (const edge of byFile.get(file)?.imports ?? [])
        if (edge.to && byFile.has(edge.to)) stack.push(edge.to);
    }
    const unreached = libSources.map((source) => source.file).filter((file) => !reached.has(file));
    expect(unreached, "only tests use these: move them to test/ (or delete them)").toEqual([]);
  });
});

/** `lib/power/shutdown` for lib/power/shutdown/calls.ts, `lib/power/(root)` for a loose module. */
function powerFolderOf(file: string): string {
  const parts = file.split("/");
  return parts.length > 3 ? `lib/power/${parts[2]}` : "lib/power/(root)";
}

const powerLayerOf = layerIndex(POWER_LAYERS, "lib/power/");
const powerSources = sources.filter((source) => source.file.startsWith("lib/power/"));
const powerFolders = [...new Set(powerSources.map((source) => powerFolderOf(source.file)))].sort();
const powerEdges = folderEdges(sources, "lib/power/", powerFolderOf);

describe("lib/power in layers", () => {
  it("reads the real import graph of lib/power", () => {
    // Measured when the layers were drawn: 119 modules in 16 sub-folders, 68 sub-folder edges.
    expect(powerSources.length).toBeGreaterThan(100);
    const edgeCount = [...powerEdges.values()].reduce((sum, out) => sum + out.size, 0);
    expect(edgeCount).toBeGreaterThan(50);
    // Known edges, one per layer boundary.
    expect(powerEdges.get("lib/power/config")?.has("lib/power/ups")).toBe(true);
    expect(powerEdges.get("lib/power/records")?.has("lib/power/triggers")).toBe(true);
    expect(powerEdges.get("lib/power/clusters")?.has("lib/power/targets")).toBe(true);
    expect(powerEdges.get("lib/power/consolidate")?.has("lib/power/cluster-sequence")).toBe(true);
    expect(powerEdges.get("lib/power/shutdown-pipeline")?.has("lib/power/shutdown")).toBe(true);
    expect(powerEdges.get("lib/power/monitor")?.has("lib/power/shutdown-pipeline")).toBe(true);
    expect(powerEdges.get("lib/power/operations")?.has("lib/power/self-test")).toBe(true);
  });

  it("keeps no module loose in lib/power and gives every sub-folder exactly one layer", () => {
    const listed: string[] = POWER_LAYERS.flatMap((layer) =>
      layer.folders.map((folder) => `lib/power/${folder}`),
    );
    expect(
      powerSources
        .map((source) => source.file)
        .filter((file) => powerFolderOf(file) === "lib/power/(root)"),
      "modules loose in lib/power: give each its sub-folder",
    ).toEqual([]);
    expect(new Set(listed).size, "a sub-folder listed in two layers").toBe(listed.length);
    expect(
      powerFolders.filter((folder) => !powerLayerOf.has(folder)),
      "sub-folders without a layer",
    ).toEqual([]);
    expect(
      listed.filter((folder) => !powerFolders.includes(folder)),
      "layers list a sub-folder that is gone",
    ).toEqual([]);
  });

  it("imports only from the same layer or below", () => {
    expect(
      upwardImports(POWER_LAYERS, powerLayerOf, powerEdges),
      "imports from a higher layer",
    ).toEqual([]);
  });

  it("has no import cycle between sub-folders, within a layer either", () => {
    expect(describedCycles(powerFolders, powerEdges)).toEqual([]);
  });
});

/** `lib/steps/onboarding` for lib/steps/onboarding/index.ts. */
function stepsFolderOf(file: string): string {
  const parts = file.split("/");
  return parts.length > 3 ? `lib/steps/${parts[2]}` : "lib/steps/(root)";
}

const stepsLayerOf = layerIndex(STEPS_LAYERS, "lib/steps/");
const stepsSources = sources.filter((source) => source.file.startsWith("lib/steps/"));
const stepsFolders = [...new Set(stepsSources.map((source) => stepsFolderOf(source.file)))].sort();
const stepsEdges = folderEdges(sources, "lib/steps/", stepsFolderOf);

describe("lib/steps in layers", () => {
  it("reads the real import graph: the steps use the remote-job machinery", () => {
    expect(stepsEdges.get("lib/steps/onboarding")?.has("lib/steps/remote-job")).toBe(true);
  });

  it("gives every sub-folder its layer and keeps no module loose in lib/steps", () => {
    expect(stepsFolders.filter((folder) => !stepsLayerOf.has(folder))).toEqual([]);
  });

  it("never lets the machinery import a step", () => {
    expect(upwardImports(STEPS_LAYERS, stepsLayerOf, stepsEdges)).toEqual([]);
    expect(describedCycles(stepsFolders, stepsEdges)).toEqual([]);
  });
});

describe("client components", () => {
  it("mark the modules that hold secrets server-only", () => {
    const unmarked = SERVER_ONLY.filter((file) => !byFile.get(file)?.serverOnly);
    expect(unmarked, 'add import "server-only"').toEqual([]);
  });

  it("reach no server-only module through what they import (types aside)", () => {
    // What a "use client" module pulls into the browser bundle: its value imports, and theirs.
    // A "use server" module is where that stops: the client gets references to its actions.
    const clients = sources.filter((source) => source.useClient);
    expect(clients.length).toBeGreaterThan(50);
    const leaks: string[] = [];
    for (const client of clients) {
      const via = new Map<string, string>([[client.file, ""]]);
      const stack = [client.file];
      while (stack.length > 0) {
        const file = stack.pop()!;
        const source = byFile.get(file);
        if (!source || (file !== client.file && source.useServer)) continue;
        if (source.serverOnly) {
          const chain: string[] = [file];
          for (let at = via.get(file)!; at; at = via.get(at)!) chain.unshift(at);
          leaks.push(chain.join(" -> "));
          continue;
        }
        for (const edge of source.imports) {
          if (edge.typeOnly || !edge.to || via.has(edge.to)) continue;
          via.set(edge.to, file);
          stack.push(edge.to);
        }
      }
    }
    expect(leaks).toEqual([]);
  });
});
