import fs from "node:fs";
import path from "node:path";

import {
  identifyRepo,
  keyPresent,
  listFile,
  listsDir,
  LAB_PROXMOX_KEY_FINGERPRINT,
  readSources,
  type AptSource,
} from "../apt-sources";
import { enterpriseAccess } from "../../pve/subscription";
import { CATALOG, catalogPackage, type CatalogPackage, type RepoId } from "../catalog";
import { debconfValue } from "../debconf";
import { markInstalled, markRemoved, readInstalled } from "../dpkg-status";
import {
  hostPath,
  readDebianFaults,
  readKernel,
  scaled,
  sleep,
  writeNextKernel,
  type DebianFaults,
} from "../lab-state";

/**
 * Simulated `apt-get` / `apt`: update, install, remove/purge, upgrade, over the lab host's
 * sources, keys, package lists and dpkg status. Messages and exit codes follow apt 3.0
 * (Debian 13): 100 for errors, 0 for success; `update` only warns (exit 0) about mirrors it
 * cannot reach, unless `--error-on=any`.
 */

const out = (line = "") => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

type Options = {
  yes: boolean;
  noRecommends: boolean;
  errorOnAny: boolean;
  quiet: number;
  purge: boolean;
  /** `-o DPkg::Lock::Timeout=N`: seconds to wait for the dpkg lock (0 = fail at once). */
  lockTimeoutSeconds: number;
};

/** `-o Name=Value` / `-oName=Value` / `--option Name=Value` (apt's option names ignore case). */
function configOption(argv: string[], i: number): { name: string; value: string; next: number } {
  const arg = argv[i]!;
  const inline = arg.startsWith("--option=")
    ? arg.slice("--option=".length)
    : arg.startsWith("-o") && arg.length > 2
      ? arg.slice(2)
      : null;
  const text = inline ?? argv[i + 1] ?? "";
  const eq = text.indexOf("=");
  return {
    name: (eq > 0 ? text.slice(0, eq) : text).toLowerCase(),
    value: eq > 0 ? text.slice(eq + 1) : "",
    next: inline === null ? i + 1 : i,
  };
}

export async function aptGet(
  tool: "apt-get" | "apt",
  root: string,
  argv: string[],
): Promise<number> {
  const options: Options = {
    yes: false,
    noRecommends: false,
    errorOnAny: false,
    quiet: 0,
    purge: false,
    lockTimeoutSeconds: 0,
  };
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-y" || arg === "--yes" || arg === "--assume-yes") options.yes = true;
    else if (arg === "--no-install-recommends") options.noRecommends = true;
    else if (arg === "--error-on=any") options.errorOnAny = true;
    else if (arg === "--purge") options.purge = true;
    else if (arg === "-q" || arg === "--quiet") options.quiet++;
    else if (arg === "-qq") options.quiet += 2;
    else if (arg === "-c") i++;
    else if (arg.startsWith("-o") || arg.startsWith("--option")) {
      const option = configOption(argv, i);
      i = option.next;
      if (option.name === "dpkg::lock::timeout")
        options.lockTimeoutSeconds = Math.max(0, Number.parseInt(option.value, 10) || 0);
    } else if (/^-[a-z]+$/.test(arg) && arg.includes("y")) options.yes = true;
    else if (arg.startsWith("-"))
      continue; // --fix-broken, --allow-downgrades, …: accepted, no effect
    else words.push(arg);
  }
  if (tool === "apt" && !process.stdout.isTTY) {
    err("\nWARNING: apt does not have a stable CLI interface. Use with caution in scripts.\n");
  }
  const [command, ...packages] = words;
  // Read once the lock is taken: a fault switched while apt waited applies to this run.
  const faults = () => readDebianFaults(root);
  switch (command) {
    case undefined:
      out(`${tool} 3.0.3 (amd64)\nUsage: ${tool} [options] command`);
      return 1;
    case "update":
      return withLock(root, options, () => update(root, faults(), options));
    case "install":
      return withLock(root, options, () => install(root, faults(), options, packages));
    case "remove":
    case "purge":
      return withLock(root, options, () =>
        remove(root, options, packages, command === "purge" || options.purge),
      );
    case "upgrade":
    case "full-upgrade":
    case "dist-upgrade":
      return withLock(root, options, async () => {
        readingLists();
        if (command !== "upgrade") out("Calculating upgrade...");
        out("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.");
        return 0;
      });
    case "autoremove":
    case "clean":
    case "autoclean":
      return withLock(root, options, async () => {
        readingLists();
        if (command === "autoremove")
          out("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.");
        return 0;
      });
    default:
      err(`E: Invalid operation ${command}`);
      return 100;
  }
}

function readingLists(): void {
  out("Reading package lists...");
  out("Building dependency tree...");
  out("Reading state information...");
}

const FRONTEND_LOCK = "/var/lib/dpkg/lock-frontend";

/**
 * Who holds the dpkg frontend lock, or null: another lab apt (its PID in the lock file, alive),
 * or — with the `aptLocked` fault on — the apt-daily run of a fresh machine (PID 1873).
 */
function lockHolder(root: string): { pid: number; name: string } | null {
  if (readDebianFaults(root).aptLocked) return { pid: 1873, name: "apt-get" };
  try {
    const pid = Number(fs.readFileSync(hostPath(root, FRONTEND_LOCK), "utf8").trim());
    if (pid > 0 && pid !== process.pid) {
      process.kill(pid, 0);
      // As apt names it: the holder's comm (at most 15 characters, e.g. "unattended-upgr").
      const name = fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() || "unknown";
      return { pid, name };
    }
  } catch {
    // free
  }
  return null;
}

/**
 * apt's frontend lock (apt-pkg/deb/debsystem.cc, apt-pkg/contrib/fileutl.cc): held by
 * another process → with `DPkg::Lock::Timeout=N` wait up to N s (lab-scaled), printing
 * "Waiting for cache lock: …" as apt's progress does; still held → apt's two E: lines, exit 100.
 */
async function withLock(
  root: string,
  options: Options,
  body: () => Promise<number>,
): Promise<number> {
  const lock = hostPath(root, FRONTEND_LOCK);
  const started = Date.now();
  const waitMs = scaled(root, options.lockTimeoutSeconds * 1000);
  const stepMs = Math.max(10, scaled(root, 1000));
  let shownAt = -Infinity;
  for (let holder = lockHolder(root); holder !== null; holder = lockHolder(root)) {
    const message = `Could not get lock ${FRONTEND_LOCK}. It is held by process ${holder.pid} (${holder.name})`;
    const elapsedMs = Date.now() - started;
    if (elapsedMs >= waitMs) {
      err(`E: ${message}`);
      err("N: Be aware that removing the lock file is not a solution and may break your system.");
      err(
        `E: Unable to acquire the dpkg frontend lock (${FRONTEND_LOCK}), is another process using it?`,
      );
      return 100;
    }
    // One progress line per five (lab) seconds of waiting, with the seconds waited.
    if (elapsedMs - shownAt >= 5 * stepMs) {
      shownAt = elapsedMs;
      out(`Waiting for cache lock: ${message}... ${Math.round(elapsedMs / stepMs)}s`);
    }
    await sleep(stepMs);
  }
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  fs.writeFileSync(lock, `${process.pid}\n`);
  try {
    return await body();
  } finally {
    try {
      if (fs.readFileSync(lock, "utf8").trim() === String(process.pid)) fs.writeFileSync(lock, "");
    } catch {
      // gone
    }
  }
}

function hostOf(uri: string): string {
  return uri.replace(/^[a-z+]+:\/\/+/, "").split("/")[0] ?? uri;
}

function fetchUrl(source: AptSource): string {
  return `${source.uri.replace(/\/+$/, "")}/dists/${source.suite}/InRelease`;
}

function label(source: AptSource): string {
  return `${source.uri.replace(/\/+$/, "")} ${source.suite}`;
}

async function update(root: string, faults: DebianFaults, options: Options): Promise<number> {
  const sources = readSources(root);
  const errors: string[] = [];
  const warnings: string[] = [];
  const notes: string[] = [];
  let fetchedKb = 0;
  const keep = new Set<string>();
  let n = 0;
  for (const source of sources) {
    n++;
    const repo = identifyRepo(source);
    const file = listFile(root, source);
    await sleep(scaled(root, 400));
    if (faults.aptNetworkDown) {
      out(`Ign:${n} ${label(source)} InRelease`);
      out(`Err:${n} ${label(source)} InRelease`);
      out(`  Temporary failure resolving '${hostOf(source.uri)}'`);
      (options.errorOnAny ? errors : warnings).push(
        `Failed to fetch ${fetchUrl(source)}  Temporary failure resolving '${hostOf(source.uri)}'`,
      );
      if (fs.existsSync(file)) keep.add(file);
      continue;
    }
    if (repo === null) {
      out(`Ign:${n} ${label(source)} InRelease`);
      out(`Err:${n} ${label(source)} Release`);
      out("  404  Not Found [IP: 203.0.113.10 80]");
      errors.push(`The repository '${label(source)} Release' does not have a Release file.`);
      notes.push(
        "Updating from such a repository can't be done securely, and is therefore disabled by default.",
        "See apt-secure(8) manpage for repository creation and user configuration details.",
      );
      continue;
    }
    // enterprise.proxmox.com lets in only a host with an active subscription (lab/pve/subscription.ts).
    if (
      repo.enterprise &&
      (faults.enterpriseRepositoryRefuses ||
        !(repo.id === "pve-enterprise" && enterpriseAccess(root)))
    ) {
      out(`Err:${n} ${label(source)} InRelease`);
      out("  401  Unauthorized [IP: 144.217.225.162 443]");
      errors.push(
        `Failed to fetch ${fetchUrl(source)}  401  Unauthorized [IP: 144.217.225.162 443]`,
        `The repository '${label(source)} InRelease' is not signed.`,
      );
      notes.push(
        "Updating from such a repository can't be done securely, and is therefore disabled by default.",
        "See apt-secure(8) manpage for repository creation and user configuration details.",
      );
      continue;
    }
    if (!keyPresent(root, source, repo)) {
      const message =
        `Sub-process /usr/bin/sqv returned an error code (1), error message is: Missing key ` +
        `${repo.keyring === "proxmox" ? LAB_PROXMOX_KEY_FINGERPRINT : "4D64FEC119C2029067D6E791F8D2585B8783D481"}, which is needed to verify signature.`;
      out(`Get:${n} ${label(source)} InRelease [2,771 B]`);
      out(`Err:${n} ${label(source)} InRelease`);
      out(`  ${message}`);
      warnings.push(`GPG error: ${label(source)} InRelease: ${message}`);
      errors.push(`The repository '${label(source)} InRelease' is not signed.`);
      notes.push(
        "Updating from such a repository can't be done securely, and is therefore disabled by default.",
        "See apt-secure(8) manpage for repository creation and user configuration details.",
      );
      continue;
    }
    if (fs.existsSync(file)) {
      out(`Hit:${n} ${label(source)} InRelease`);
    } else {
      const kb = repo.id === "pve" ? 412 : repo.id === "debian" ? 9870 : 145;
      out(`Get:${n} ${label(source)} InRelease [${repo.id === "debian" ? "140" : "2,771"} B]`);
      for (const comp of source.components)
        out(
          `Get:${n} ${source.uri.replace(/\/+$/, "")} ${source.suite}/${comp} amd64 Packages [${kb} kB]`,
        );
      fetchedKb += kb;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, `Origin: lab\nSuite: ${source.suite}\nLab-Repo: ${repo.id}\n`);
    }
    keep.add(file);
  }
  // Lists of sources no longer configured (or now failing) are dropped, as apt does.
  try {
    for (const name of fs.readdirSync(listsDir(root))) {
      const file = path.join(listsDir(root), name);
      if (name.endsWith("_InRelease") && !keep.has(file)) fs.rmSync(file, { force: true });
    }
  } catch {
    // no lists yet
  }
  if (fetchedKb > 0)
    out(
      `Fetched ${fetchedKb.toLocaleString("en-US")} kB in 1s (${fetchedKb.toLocaleString("en-US")} kB/s)`,
    );
  out("Reading package lists...");
  for (const w of warnings) err(`W: ${w}`);
  if (faults.aptNetworkDown && !options.errorOnAny)
    err(
      "W: Some index files failed to download. They have been ignored, or old ones used instead.",
    );
  for (const e of errors) err(`E: ${e}`);
  for (const note of [...new Set(notes)]) err(`N: ${note}`);
  return errors.length > 0 ? 100 : 0;
}

/** Repositories whose package lists are present (what `apt-get update` fetched). */
export function availableRepos(root: string): Set<RepoId> {
  const repos = new Set<RepoId>();
  try {
    for (const name of fs.readdirSync(listsDir(root))) {
      const text = fs.readFileSync(path.join(listsDir(root), name), "utf8");
      const m = /^Lab-Repo: (\S+)$/m.exec(text);
      // The enterprise repository carries the same Proxmox VE packages as no-subscription.
      if (m) repos.add(m[1] === "pve-enterprise" ? "pve" : (m[1] as RepoId));
    }
  } catch {
    // none
  }
  return repos;
}

function repoLine(p: CatalogPackage, repo: RepoId): string {
  switch (repo) {
    case "pve":
      return `http://download.proxmox.com/debian/pve trixie/pve-no-subscription`;
    case "ceph":
      return `http://download.proxmox.com/debian/ceph-squid trixie/no-subscription`;
    case "debian-security":
      return "http://security.debian.org/debian-security trixie-security/main";
    default:
      return `http://deb.debian.org/debian trixie/main${p.architecture === "all" ? "" : ""}`;
  }
}

function kb(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)} MB` : `${n} kB`;
}

async function install(
  root: string,
  faults: DebianFaults,
  options: Options,
  requested: string[],
): Promise<number> {
  readingLists();
  if (requested.length === 0) {
    out("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.");
    return 0;
  }
  const repos = availableRepos(root);
  const installed = readInstalled(root);
  const resolve = (name: string): { pkg: CatalogPackage; repo: RepoId } | null => {
    const p = catalogPackage(name);
    const repo = p?.repos.find((r) => repos.has(r));
    return p && repo ? { pkg: p, repo } : null;
  };
  for (const name of requested) {
    const bare = name.replace(/=.*$/, "").replace(/:amd64$/, "");
    if (resolve(bare) === null) {
      err(`E: Unable to locate package ${bare}`);
      return 100;
    }
  }
  // Dependency closure, depth first so dependencies are set up before their dependents.
  const order: { pkg: CatalogPackage; repo: RepoId }[] = [];
  const seen = new Set<string>();
  const visit = (name: string): boolean => {
    if (seen.has(name)) return true;
    seen.add(name);
    const found = resolve(name);
    if (found === null) {
      err("E: Unable to correct problems, you have held broken packages.");
      return false;
    }
    for (const dep of found.pkg.depends ?? []) if (!visit(dep)) return false;
    const current = installed.get(name);
    if (!current || current.version !== found.pkg.version) order.push(found);
    return true;
  };
  const bareRequested = requested.map((n) => n.replace(/=.*$/, "").replace(/:amd64$/, ""));
  for (const name of bareRequested) if (!visit(name)) return 100;
  for (const name of bareRequested) {
    const current = installed.get(name);
    if (current && !order.some((o) => o.pkg.name === name))
      out(`${name} is already the newest version (${current.version}).`);
  }
  const removals = [
    ...new Set(order.flatMap((o) => (o.pkg.conflicts ?? []).filter((c) => installed.has(c)))),
  ];
  if (order.length === 0) {
    out("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.");
    return 0;
  }
  const additional = order.filter((o) => !bareRequested.includes(o.pkg.name));
  if (additional.length > 0) {
    out("The following additional packages will be installed:");
    out(wrap(additional.map((o) => o.pkg.name)));
  }
  if (removals.length > 0) {
    out("The following packages will be REMOVED:");
    out(wrap(removals));
  }
  out("The following NEW packages will be installed:");
  out(wrap(order.map((o) => o.pkg.name)));
  const totalKb = order.reduce((s, o) => s + o.pkg.sizeKb, 0);
  out(
    `0 upgraded, ${order.length} newly installed, ${removals.length} to remove and 0 not upgraded.`,
  );
  out(`Need to get ${kb(totalKb)} of archives.`);
  out(`After this operation, ${kb(totalKb * 4)} of additional disk space will be used.`);
  if ((additional.length > 0 || removals.length > 0) && !options.yes) {
    out("Do you want to continue? [Y/n] Abort.");
    return 1;
  }
  if (faults.aptNetworkDown) {
    const first = order[0]!;
    err(
      `E: Failed to fetch ${repoLine(first.pkg, first.repo).split(" ")[0]}/pool/main/${first.pkg.name[0]}/${first.pkg.name}/${first.pkg.name}_${first.pkg.version.replace(/^\d+:/, "")}_${first.pkg.architecture ?? "amd64"}.deb  Temporary failure resolving '${hostOf(repoLine(first.pkg, first.repo))}'`,
    );
    err("E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?");
    return 100;
  }
  let n = 0;
  for (const { pkg, repo } of order) {
    n++;
    out(
      `Get:${n} ${repoLine(pkg, repo)} amd64 ${pkg.name} ${pkg.architecture ?? "amd64"} ${pkg.version} [${pkg.sizeKb.toLocaleString("en-US")} kB]`,
    );
    await sleep(scaled(root, Math.max(50, pkg.sizeKb / 20)));
  }
  out(`Fetched ${kb(totalKb)} in 3s (${kb(Math.round(totalKb / 3))}/s)`);
  const frontend = process.env.DEBIAN_FRONTEND ?? "";
  if (order.some((o) => o.pkg.name === "postfix")) {
    const preseeded = debconfValue(root, "postfix/main_mailer_type");
    if (preseeded === null && frontend !== "noninteractive") {
      out("Preconfiguring packages ...");
      err("debconf: unable to initialize frontend: Dialog");
      err("debconf: (TERM is not set, so the dialog frontend is not usable.)");
      err("debconf: falling back to frontend: Readline");
      out("Postfix Configuration");
      out("-------------------");
      out("");
      out("Please select the mail server configuration type that best meets your needs.");
      out("");
      out(
        "  1. No configuration  2. Internet Site  3. Internet with smarthost  4. Satellite system  5. Local only",
      );
      process.stdout.write("General mail configuration type: ");
      // The answer never comes over a non-interactive SSH channel: apt waits here for good.
      const answer = await readAnswer();
      if (answer === null) await new Promise<never>(() => setInterval(() => {}, 1 << 30));
    }
  }
  for (const removal of removals) {
    out(`(Reading database ... 48213 files and directories currently installed.)`);
    out(`Removing ${removal} (${installed.get(removal)?.version ?? ""}) ...`);
    markRemoved(root, [removal]);
  }
  for (const { pkg } of order) {
    out(`Selecting previously unselected package ${pkg.name}.`);
    out(
      `Preparing to unpack .../${pkg.name}_${pkg.version.replace(/^\d+:/, "")}_${pkg.architecture ?? "amd64"}.deb ...`,
    );
    out(`Unpacking ${pkg.name} (${pkg.version}) ...`);
  }
  for (const { pkg } of order) {
    out(`Setting up ${pkg.name} (${pkg.version}) ...`);
    await sleep(scaled(root, pkg.setupSeconds * 1000));
    if (pkg.name === "postfix") configurePostfix(root, frontend);
    if (pkg.name === "pve-manager") {
      // pmxcfs' /etc/pve, storage.cfg (`local` without images, as on Debian installs), user.cfg.
      const { installProxmoxVe } = await import("../../pve/seed");
      const node = fs.readFileSync(hostPath(root, "/etc/hostname"), "utf8").trim().split(".")[0]!;
      installProxmoxVe(root, { node, storage: "dir-no-images" });
    }
    markInstalled(root, [
      { name: pkg.name, version: pkg.version, architecture: pkg.architecture ?? "amd64" },
    ]);
    if (pkg.kernel) {
      writeNextKernel(root, pkg.kernel);
      out(`update-initramfs: Generating /boot/initrd.img-${pkg.kernel.release}`);
      out("Generating grub configuration file ...");
      out(`Found linux image: /boot/vmlinuz-${pkg.kernel.release}`);
      out("done");
    }
  }
  out("Processing triggers for man-db (2.13.1-1) ...");
  return 0;
}

function readAnswer(): Promise<string | null> {
  return new Promise((resolve) => {
    let data = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk: string) => {
      data += chunk;
      if (data.includes("\n")) resolve(data.split("\n")[0]!);
    });
    process.stdin.on("end", () => resolve(data ? data : null));
    process.stdin.on("error", () => resolve(null));
  });
}

function configurePostfix(root: string, frontend: string): void {
  const type =
    debconfValue(root, "postfix/main_mailer_type") ??
    (frontend === "noninteractive" ? "Internet Site" : "Local only");
  const hostname = (() => {
    try {
      return fs.readFileSync(hostPath(root, "/etc/hostname"), "utf8").trim();
    } catch {
      return "localhost";
    }
  })();
  fs.mkdirSync(hostPath(root, "/etc/postfix"), { recursive: true });
  fs.writeFileSync(hostPath(root, "/etc/mailname"), `${hostname}\n`);
  fs.writeFileSync(
    hostPath(root, "/etc/postfix/main.cf"),
    `# written by the lab's postfix postinst (${type})\nmyhostname = ${hostname}\n` +
      `inet_interfaces = ${type === "Local only" ? "loopback-only" : "all"}\n` +
      `default_transport = ${type === "Local only" ? "error" : "smtp"}\n`,
  );
}

function wrap(names: string[]): string {
  const lines: string[] = [];
  let line = " ";
  for (const name of names) {
    if (line.length + name.length + 1 > 78) {
      lines.push(line);
      line = " ";
    }
    line += ` ${name}`;
  }
  lines.push(line);
  return lines.join("\n");
}

function globToRegExp(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
  );
}

async function remove(
  root: string,
  options: Options,
  patterns: string[],
  purge: boolean,
): Promise<number> {
  readingLists();
  const installed = readInstalled(root);
  const names: string[] = [];
  for (const pattern of patterns) {
    if (/[*?]/.test(pattern)) {
      const re = globToRegExp(pattern);
      const matches = [...installed.keys()].filter((n) => re.test(n));
      if (matches.length === 0) {
        err(`E: Unable to locate package ${pattern}`);
        return 100;
      }
      names.push(...matches);
    } else if (installed.has(pattern)) {
      names.push(pattern);
    } else if (
      catalogPackage(pattern) ||
      CATALOG.some((p) => p.name === pattern) ||
      /^linux-image/.test(pattern)
    ) {
      out(`Package '${pattern}' is not installed, so not removed`);
    } else {
      err(`E: Unable to locate package ${pattern}`);
      return 100;
    }
  }
  const unique = [...new Set(names)];
  if (unique.length === 0) {
    out("0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.");
    return 0;
  }
  out("The following packages will be REMOVED:");
  out(wrap(unique.map((n) => (purge ? `${n}*` : n))));
  out(`0 upgraded, 0 newly installed, ${unique.length} to remove and 0 not upgraded.`);
  out("After this operation, 412 MB disk space will be freed.");
  if (!options.yes && unique.length > patterns.length) {
    out("Do you want to continue? [Y/n] Abort.");
    return 1;
  }
  out("(Reading database ... 52718 files and directories currently installed.)");
  const running = readKernel(root, "running");
  for (const name of unique) {
    out(`Removing ${name} (${installed.get(name)?.version ?? ""}) ...`);
    await sleep(scaled(root, 1000));
    if (running !== null && name === `linux-image-${running.release}`) {
      // linux-image prerm: removing the running kernel asks "Abort kernel removal?" (default
      // yes); without a terminal the default stands and dpkg fails the removal.
      out(`W: Removing the running kernel ${running.release} is not allowed; aborting.`);
      err(`dpkg: error processing package ${name} (--remove):`);
      err(
        " installed linux-image package pre-removal script subprocess returned error exit status 1",
      );
      err("Errors were encountered while processing:");
      err(` ${name}`);
      err("E: Sub-process /usr/bin/dpkg returned an error code (1)");
      return 100;
    }
    markRemoved(root, [name]);
    if (purge)
      out(`Purging configuration files for ${name} (${installed.get(name)?.version ?? ""}) ...`);
  }
  if (unique.some((n) => n.startsWith("linux-image"))) {
    out("Generating grub configuration file ...");
    out("done");
  }
  return 0;
}
