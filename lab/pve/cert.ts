import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * The node's self-signed HTTPS certificate, shaped like the one pve-cluster creates
 * (`/etc/pve/local/pve-ssl.pem`, RSA 2048). Node 20 cannot issue X.509 certificates itself, so
 * `openssl req -x509` makes it once; it is cached in the lab root's `.lab/` and survives restarts
 * (the console pins its fingerprint).
 */

export type NodeCert = { key: string; cert: string; sha256: string };

export function loadOrCreateNodeCert(root: string, node: string): NodeCert {
  const dir = path.join(root, ".lab");
  const keyFile = path.join(dir, "pve-ssl.key");
  const certFile = path.join(dir, "pve-ssl.pem");
  if (!fs.existsSync(keyFile) || !fs.existsSync(certFile)) {
    fs.mkdirSync(dir, { recursive: true });
    const tmpKey = `${keyFile}.tmp.${process.pid}`;
    const tmpCert = `${certFile}.tmp.${process.pid}`;
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-days",
        "3650",
        "-keyout",
        tmpKey,
        "-out",
        tmpCert,
        "-subj",
        `/OU=PVE Cluster Node/O=Proxmox Virtual Environment/CN=${node}.lab.internal`,
        "-addext",
        `subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:${node},DNS:${node}.lab.internal`,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    fs.chmodSync(tmpKey, 0o600);
    fs.renameSync(tmpKey, keyFile);
    fs.renameSync(tmpCert, certFile);
  }
  const key = fs.readFileSync(keyFile, "utf8");
  const cert = fs.readFileSync(certFile, "utf8");
  // `AB:CD:…` over the DER bytes, as `openssl x509 -fingerprint -sha256` and Proxmox show it.
  return { key, cert, sha256: new X509Certificate(cert).fingerprint256 };
}
