import path from "node:path";

import { describe, expect, it } from "vitest";

import { END_WITH_SUPERVISOR_IMPORT } from "@/lib/supervisor/supervisor-pid";
import {
  isTestFile,
  readSources,
  sourceFiles,
  type Import,
  type SourceFacts,
} from "./import-graph";

/**
 * lib/ in layers (docs/README.md, "Where things are"): each folder of lib/ belongs to one layer
 * and imports only from its own layer or the ones below; no two folders import each other, even
 * within a layer. Read from the real imports (TypeScript's own parser and module resolution over
 * the project's tsconfig), test files left out: a test may reach across layers to set things up.
 *
 * Lowest first. A new folder of lib/ fails this test until it is given its layer here and in
 * docs/README.md.
 */
const LAYERS: ReadonlyArray<{ name: string; folders: readonly string[] }> = [
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
    // What reaching one host takes: its login, the console's key, its API client, its row locked.
    name: "host access",
    folders: ["host-access"],
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

const layerOf = new Map<string, number>(
  LAYERS.flatMap((layer, index) =>
    layer.folders.map((folder) => [`lib/${folder}`, index] as const),
  ),
);

function allowedUpward(edge: Import): boolean {
  return TYPE_ONLY_UPWARD.some(
    (rule) => edge.typeOnly && edge.from.startsWith(rule.from) && edge.to!.startsWith(rule.to),
  );
}

const describeEdge = (edge: Import) =>
  `${edge.from}:${edge.line} imports ${edge.to}${edge.typeOnly ? " (type only)" : ""}`;

/** Folder edges of lib/ (each with the imports that make it), from non-test files. */
function folderEdges(sources: readonly SourceFacts[]) {
  const edges = new Map<string, Map<string, Import[]>>();
  for (const source of sources) {
    if (!source.file.startsWith("lib/")) continue;
    for (const edge of source.imports) {
      if (!edge.to?.startsWith("lib/")) continue;
      const from = folderOf(edge.from);
      const to = folderOf(edge.to);
      if (from === to) continue;
      const out = edges.get(from) ?? new Map<string, Import[]>();
      edges.set(from, out);
      out.set(to, [...(out.get(to) ?? []), edge]);
    }
  }
  return edges;
}

/** Strongly connected components with more than one folder (Tarjan). */
function cycles(nodes: readonly string[], edges: Map<string, Map<string, Import[]>>) {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const target of edges.get(node)?.keys() ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return found;
}

const productFiles = [
  ...PRODUCT_FOLDERS.flatMap((folder) => sourceFiles(root, folder)),
  ...ROOT_FILES,
].filter((file) => !isTestFile(file));
const sources = readSources(root, productFiles);
const byFile = new Map(sources.map((source) => [source.file, source]));
const libSources = sources.filter((source) => source.file.startsWith("lib/"));
const libFolders = [...new Set(libSources.map((source) => folderOf(source.file)))].sort();
const edges = folderEdges(sources);
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
    const upward: string[] = [];
    for (const [from, out] of layeringEdges) {
      for (const [to, imports] of out) {
        if (layerOf.get(to)! <= layerOf.get(from)!) continue;
        const layers = `${LAYERS[layerOf.get(from)!]!.name} -> ${LAYERS[layerOf.get(to)!]!.name}`;
        upward.push(
          `${from} -> ${to} (${layers}):\n    ${imports.map(describeEdge).join("\n    ")}`,
        );
      }
    }
    expect(upward, "imports from a higher layer").toEqual([]);
  });

  it("has no import cycle between folders, within a layer either", () => {
    const found = cycles(libFolders, layeringEdges).map((component) => {
      const inside = component.flatMap((from) =>
        [...(layeringEdges.get(from) ?? [])]
          .filter(([to]) => component.includes(to))
          .map(
            ([to, imports]) => `${from} -> ${to}:\n    ${imports.map(describeEdge).join("\n    ")}`,
          ),
      );
      return `cycle ${component.join(" ")}:\n  ${inside.join("\n  ")}`;
    });
    expect(found).toEqual([]);
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
