import { execFileSync } from "node:child_process";
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { labDir } from "../debian/lab-state";

/**
 * The node's self-signed HTTPS certificate, shaped like the one pve-cluster creates
 * (`/etc/pve/local/pve-ssl.pem`, RSA 2048). Node 20 cannot issue X.509 certificates itself, so
 * `openssl req -x509` makes it once; it is cached in the lab root's `.lab/` and survives restarts
 * (the console pins its fingerprint). Every node gets a certificate of its own (its own name and
 * serial, so its own fingerprint); the nodes one process starts share its RSA key, as making a
 * key took openssl up to a second and a half on a busy 2-core machine, and the tests start
 * hundreds of nodes. Once Proxmox VE is installed, `installNodeCert` puts the same bytes where
 * pve-cluster keeps them, so reading the certificate over SSH and the TLS handshake agree, as on
 * a real node.
 */

export type NodeCert = { key: string; cert: string; sha256: string };

let rsaKey: string | null = null;
const processKey = (): string =>
  (rsaKey ??= generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  }).privateKey);

export function loadOrCreateNodeCert(root: string, node: string): NodeCert {
  const dir = labDir(root);
  const keyFile = path.join(dir, "pve-ssl.key");
  const certFile = path.join(dir, "pve-ssl.pem");
  if (!fs.existsSync(keyFile) || !fs.existsSync(certFile)) {
    fs.mkdirSync(dir, { recursive: true });
    issueCert(
      keyFile,
      certFile,
      `/OU=PVE Cluster Node/O=Proxmox Virtual Environment/CN=${node}.lab.internal`,
      node,
    );
  }
  return readCert(keyFile, certFile);
}

/** A self-signed certificate for `node` over the process's RSA key, written atomically. */
function issueCert(keyFile: string, certFile: string, subject: string, node: string): void {
  const tmpKey = `${keyFile}.tmp.${process.pid}`;
  const tmpCert = `${certFile}.tmp.${process.pid}`;
  fs.writeFileSync(tmpKey, processKey(), { mode: 0o600 });
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-key",
      tmpKey,
      "-sha256",
      "-days",
      "3650",
      "-out",
      tmpCert,
      "-subj",
      subject,
      "-addext",
      `subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:${node},DNS:${node}.lab.internal`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  fs.chmodSync(tmpKey, 0o600);
  fs.renameSync(tmpKey, keyFile);
  fs.renameSync(tmpCert, certFile);
}

function readCert(keyFile: string, certFile: string): NodeCert {
  const key = fs.readFileSync(keyFile, "utf8");
  const cert = fs.readFileSync(certFile, "utf8");
  // `AB:CD:…` over the DER bytes, as `openssl x509 -fingerprint -sha256` and Proxmox show it.
  return { key, cert, sha256: new X509Certificate(cert).fingerprint256 };
}

/**
 * `/etc/pve/nodes/<node>/pve-ssl.pem` and `pve-ssl.key` (`/etc/pve/local` links to the node
 * folder), as pve-cluster creates them on a node's first start: the bytes the API serves.
 * Existing files are kept (a real node keeps its certificate until it is renewed); the
 * certificate returned is the one in `/etc/pve`, which is what pveproxy serves.
 */
export function installNodeCert(root: string, node: string): NodeCert {
  const cert = loadOrCreateNodeCert(root, node);
  const dir = path.join(root, "etc/pve/nodes", node);
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, text, mode] of [
    ["pve-ssl.pem", cert.cert, 0o640],
    ["pve-ssl.key", cert.key, 0o600],
  ] as const) {
    const file = path.join(dir, name);
    if (!fs.existsSync(file)) fs.writeFileSync(file, text, { mode });
  }
  // What pveproxy serves is what /etc/pve holds, even if the cache in .lab/ differs.
  const installed = fs.readFileSync(path.join(dir, "pve-ssl.pem"), "utf8");
  return {
    key: fs.readFileSync(path.join(dir, "pve-ssl.key"), "utf8"),
    cert: installed,
    sha256: new X509Certificate(installed).fingerprint256,
  };
}

const nodeFile = (root: string, node: string, name: string) =>
  path.join(root, "etc/pve/nodes", node, name);

/**
 * An operator's own certificate for the API (uploaded, or ACME's): `pveproxy-ssl.pem` and
 * `pveproxy-ssl.key` beside the node certificate in `/etc/pve/nodes/<node>`. pveproxy serves it
 * from its next start on (`servedCert`); until it is restarted it keeps serving the old one.
 */
export function installCustomCert(root: string, node: string): NodeCert {
  const keyFile = nodeFile(root, node, "pveproxy-ssl.key");
  const certFile = nodeFile(root, node, "pveproxy-ssl.pem");
  fs.mkdirSync(path.dirname(certFile), { recursive: true });
  issueCert(keyFile, certFile, `/CN=${node}.example.internal`, node);
  return readCert(keyFile, certFile);
}

/**
 * What pveproxy serves when it starts: `pveproxy-ssl.pem` where an operator installed one, else
 * the node certificate `pve-ssl.pem` (Proxmox's `get_node_fingerprint` reads the same pair).
 */
export function servedCert(root: string, node: string): NodeCert {
  const custom = nodeFile(root, node, "pveproxy-ssl.pem");
  if (fs.existsSync(custom)) return readCert(nodeFile(root, node, "pveproxy-ssl.key"), custom);
  return installNodeCert(root, node);
}
