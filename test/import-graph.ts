import fs from "node:fs";
import path from "node:path";

import ts from "typescript";

/**
 * The repository's imports as TypeScript itself resolves them (the project's tsconfig: the `@/`
 * alias, `index` files, `.ts`/`.tsx`), read from the parsed source rather than by pattern, so a
 * string that only looks like an import is not one and a type-only import is known as such.
 */

export type Import = {
  /** Importing file, relative to the repository root (`lib/steps/onboarding/index.ts`). */
  from: string;
  /** Imported file, relative to the repository root; null for a package or an unresolved path. */
  to: string | null;
  specifier: string;
  /** Erased at compile time: `import type`, `export type`, or only `type` names imported. */
  typeOnly: boolean;
  line: number;
};

export type SourceFacts = {
  file: string;
  /** `"use client"` at the top: a client component module (bundled for the browser). */
  useClient: boolean;
  /** `"use server"` at the top: server actions (a client import gets references, not the code). */
  useServer: boolean;
  /** Carries `import "server-only"`: the build fails if a client module reaches it. */
  serverOnly: boolean;
  imports: Import[];
};

const TEST_FILE = /\.test\.tsx?$/;
const SOURCE_FILE = /\.tsx?$/;
const SKIPPED_FOLDERS = new Set(["node_modules", ".next", ".data", ".lab"]);

/** Every TypeScript file below `folder` (relative to `root`), test files included. */
export function sourceFiles(root: string, folder: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDERS.has(entry.name)) walk(rel);
      } else if (SOURCE_FILE.test(entry.name) && !entry.name.endsWith(".d.ts")) {
        out.push(rel);
      }
    }
  };
  if (fs.existsSync(path.join(root, folder))) walk(folder);
  return out.sort();
}

export function isTestFile(file: string): boolean {
  return TEST_FILE.test(file);
}

function compilerOptions(root: string): ts.CompilerOptions {
  const configFile = path.join(root, "tsconfig.json");
  const read = ts.readConfigFile(configFile, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"));
  return ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configFile).options;
}

function directive(source: ts.SourceFile, text: string): boolean {
  for (const statement of source.statements) {
    if (!ts.isExpressionStatement(statement) || !ts.isStringLiteral(statement.expression)) break;
    if (statement.expression.text === text) return true;
  }
  return false;
}

/** Whether an import/export declaration brings in nothing that survives compilation. */
function declarationIsTypeOnly(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) {
    if (node.isTypeOnly) return true;
    const clause = node.exportClause;
    return (
      !!clause &&
      ts.isNamedExports(clause) &&
      clause.elements.length > 0 &&
      clause.elements.every((element) => element.isTypeOnly)
    );
  }
  const clause = node.importClause;
  if (!clause) return false; // `import "x"`: run for its effect
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  return (
    !!bindings &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}

/** The imports of one file: static, `export … from`, `import()` and `typeof import()`. */
function importsOf(source: ts.SourceFile): Array<Omit<Import, "from" | "to">> {
  const found: Array<Omit<Import, "from" | "to">> = [];
  const add = (literal: ts.StringLiteralLike, typeOnly: boolean) => {
    const { line } = source.getLineAndCharacterOfPosition(literal.getStart(source));
    found.push({ specifier: literal.text, typeOnly, line: line + 1 });
  };
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteralLike(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier, declarationIsTypeOnly(node));
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteralLike(node.moduleReference.expression)
    ) {
      add(node.moduleReference.expression, node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0], false);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteralLike(node.argument.literal)
    ) {
      add(node.argument.literal, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Reads and resolves every import of `files` (paths relative to `root`). */
export function readSources(root: string, files: readonly string[]): SourceFacts[] {
  const options = compilerOptions(root);
  const host = ts.createCompilerHost(options);
  const cache = ts.createModuleResolutionCache(root, (name) => name, options);
  return files.map((file) => {
    const absolute = path.join(root, file);
    const text = fs.readFileSync(absolute, "utf8");
    const kind = file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
    const source = ts.createSourceFile(absolute, text, ts.ScriptTarget.Latest, true, kind);
    const imports = importsOf(source).map((found) => {
      const resolved = ts.resolveModuleName(
        found.specifier,
        absolute,
        options,
        host,
        cache,
      ).resolvedModule;
      const inside =
        resolved &&
        !resolved.isExternalLibraryImport &&
        !path.relative(root, resolved.resolvedFileName).startsWith("..");
      const to = inside
        ? path.relative(root, resolved.resolvedFileName).split(path.sep).join("/")
        : null;
      return { from: file, to, ...found };
    });
    return {
      file,
      useClient: directive(source, "use client"),
      useServer: directive(source, "use server"),
      serverOnly: imports.some((i) => i.specifier === "server-only"),
      imports,
    };
  });
}

/** Folder → folder → the imports that make the edge. */
export type FolderEdges = Map<string, Map<string, Import[]>>;

/**
 * The folder edges between the files under `prefix` (`lib/`, `lib/power/`), each with the
 * imports that make it; `folderOf` names a file's folder. Imports within one folder are no edge.
 */
export function folderEdges(
  sources: readonly SourceFacts[],
  prefix: string,
  folderOf: (file: string) => string,
): FolderEdges {
  const edges: FolderEdges = new Map();
  for (const source of sources) {
    if (!source.file.startsWith(prefix)) continue;
    for (const edge of source.imports) {
      if (!edge.to?.startsWith(prefix)) continue;
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

/** Strongly connected components with more than one folder (Tarjan): the folder cycles. */
export function folderCycles(nodes: readonly string[], edges: FolderEdges): string[][] {
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
