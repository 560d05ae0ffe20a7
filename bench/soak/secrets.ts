/**
 * Every secret the soak created or learned (SSH passwords, the private key, API tokens, account
 * passwords, the Proxmox API token secrets the console made on the nodes), and every place one
 * was found that must never hold it. Searched in the spellings a leak could take: as is,
 * JSON-escaped and URL-encoded (as e2e/secrets-leak.spec.ts does).
 */
export type SecretHit = { secret: string; where: string };

export class SecretWatch {
  private readonly needles = new Map<string, { name: string; spelling: string }>();
  private readonly found: SecretHit[] = [];
  private readonly foundKeys = new Set<string>();

  /** Remembers a secret; lines of a multi-line one (a private key) count one by one. */
  add(name: string, value: string): void {
    const parts = value.includes("\n")
      ? value.split("\n").filter((line) => line.length > 20 && !line.startsWith("-----"))
      : [value];
    for (const part of parts) {
      if (part.length < 8) continue; // too short to search for without false hits
      for (const spelling of new Set([
        part,
        JSON.stringify(part).slice(1, -1),
        encodeURIComponent(part),
      ])) {
        if (!this.needles.has(spelling)) this.needles.set(spelling, { name, spelling });
      }
    }
  }

  get count(): number {
    return this.needles.size;
  }

  /** Looks for every secret in `text`, noting each hit once per place. */
  scan(where: string, text: string): void {
    for (const { name, spelling } of this.needles.values()) {
      if (!text.includes(spelling)) continue;
      const key = `${name}\0${where}`;
      if (this.foundKeys.has(key)) continue;
      this.foundKeys.add(key);
      this.found.push({ secret: name, where });
    }
  }

  hits(): readonly SecretHit[] {
    return this.found;
  }
}
