import fs from "node:fs";
import path from "node:path";

import { hostPath } from "./lab-state";

/** The debconf database (`/var/cache/debconf/config.dat`, real stanza format), as far as the lab needs it. */

function configFile(root: string): string {
  return hostPath(root, "/var/cache/debconf/config.dat");
}

export function debconfValue(root: string, question: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(configFile(root), "utf8");
  } catch {
    return null;
  }
  for (const stanza of text.split(/\n\s*\n/)) {
    const name = /^Name: (.*)$/m.exec(stanza)?.[1];
    if (name === question) return /^Value: (.*)$/m.exec(stanza)?.[1] ?? "";
  }
  return null;
}

/** `debconf-set-selections` lines: `<owner> <question> <type> <value>`. */
export function setSelections(root: string, text: string): number {
  const file = configFile(root);
  let current = "";
  try {
    current = fs.readFileSync(file, "utf8");
  } catch {
    // first
  }
  const stanzas = current.split(/\n\s*\n/).filter((s) => s.trim() !== "");
  let errors = 0;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^(\S+)\s+(\S+)\s+(\S+)\s*(.*)$/.exec(line);
    if (!m) {
      process.stderr.write(`error: Cannot parse input line: ${raw}\n`);
      errors++;
      continue;
    }
    const [, owner, question, , value] = m;
    const index = stanzas.findIndex((s) => new RegExp(`^Name: ${escape(question!)}$`, "m").test(s));
    const stanza = `Name: ${question}\nTemplate: ${question}\nValue: ${value}\nOwners: ${owner}\nFlags: seen`;
    if (index >= 0) stanzas[index] = stanza;
    else stanzas.push(stanza);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${stanzas.join("\n\n")}\n`);
  return errors > 0 ? 1 : 0;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
