import { ApiError, dispatch, matchRoute } from "../routes";
import { CliExit, out, printFormatted, runTool, toolContext } from "./common";

/**
 * Simulated `pvesh` (pve-manager 9.1): `pvesh get <path> [--param value …] [--output-format
 * json|json-pretty|text]`, answered by the same route table as the lab's HTTPS API, as root@pam.
 */

const USAGE = "pvesh get <api_path> [OPTIONS] [FORMAT_OPTIONS]";

function main(): void {
  const ctx = toolContext("pvesh");
  const [command, apiPath, ...rest] = process.argv.slice(2);
  if (command === undefined || command === "help") {
    out(`USAGE: pvesh <COMMAND> [ARGS] [OPTIONS]\n\n${USAGE}\n`);
    return;
  }
  const method = { get: "GET", set: "PUT", create: "POST", delete: "DELETE", ls: "GET" }[command];
  if (method === undefined) throw new CliExit(255, `unknown command 'pvesh ${command}'\n`);
  if (apiPath === undefined) throw new CliExit(255, `400 not enough arguments\n${USAGE}\n`);
  const path = `/${apiPath.replace(/^\/+|\/+$/g, "")}`;
  const params: Record<string, string> = {};
  let format: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    const m = /^--?([a-zA-Z][\w-]*)(?:=(.*))?$/.exec(arg);
    if (!m) throw new CliExit(255, `400 unable to parse option\n${USAGE}\n`);
    const value = m[2] ?? rest[++i] ?? "";
    if (m[1] === "output-format") format = value;
    else if (m[1] === "noborder" || m[1] === "noheader" || m[1] === "human-readable") continue;
    else params[m[1]!] = value;
  }
  if (matchRoute(method, path) === null) {
    throw new CliExit(255, `No '${command}' handler defined for '${path}'\n`);
  }
  let data: unknown;
  try {
    data = dispatch({ root: ctx.root, node: ctx.node, authid: "root@pam" }, method, path, params);
  } catch (error) {
    if (error instanceof ApiError) {
      const details = Object.entries(error.errors ?? {})
        .map(([k, v]) => `${k}: ${v}\n`)
        .join("");
      throw new CliExit(
        255,
        `${error.status === 500 ? "" : `${error.status} `}${error.message}\n${details}`,
      );
    }
    throw error;
  }
  printFormatted(format ?? "text", data, () => renderText(data));
}

function renderText(data: unknown): string {
  if (Array.isArray(data)) {
    return data.map((row) => `${JSON.stringify(row)}\n`).join("");
  }
  if (data !== null && typeof data === "object") {
    return Object.entries(data as Record<string, unknown>)
      .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}\n`)
      .join("");
  }
  return data === null || data === undefined ? "" : `${String(data)}\n`;
}

runTool(main);
