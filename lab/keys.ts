import ssh2 from "ssh2";
import type { ParsedKey } from "ssh2";

const { utils } = ssh2;

/**
 * An ed25519 key pair in OpenSSH format. ssh2's generator emits an unparseable private key
 * now and then (about 1 in 300 in our runs: "Malformed OpenSSH private key"), which made
 * tests flaky; each pair is therefore parsed and sign/verify-checked, and regenerated if bad.
 */
export function generateEd25519KeyPair(comment: string): { private: string; public: string } {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const pair = utils.generateKeyPairSync("ed25519", { comment });
    const privateKey = firstKey(utils.parseKey(pair.private));
    const publicKey = firstKey(utils.parseKey(pair.public));
    if (privateKey === null || publicKey === null) continue;
    const probe = Buffer.from("clupilot-lab-key-check");
    if (!privateKey.getPublicSSH().equals(publicKey.getPublicSSH())) continue;
    if (publicKey.verify(probe, privateKey.sign(probe)) !== true) continue;
    return { private: pair.private, public: pair.public };
  }
  throw new Error("lab: could not generate a usable ed25519 key pair");
}

function firstKey(parsed: ParsedKey | ParsedKey[] | Error): ParsedKey | null {
  if (parsed instanceof Error) return null;
  return (Array.isArray(parsed) ? parsed[0] : parsed) ?? null;
}
