import { createHash } from "node:crypto";
import http from "node:http";
import type net from "node:net";

import { LAB_PROXMOX_KEYRING } from "../debian/apt-sources";
import { debianCloudImage, encodeLabImage } from "./format";

/**
 * A loopback HTTP server shaped like cloud.debian.org: the lab's Debian 13 genericcloud image
 * at `/images/cloud/trixie/latest/debian-13-genericcloud-amd64.qcow2` and its `SHA512SUMS`
 * (`<hex>  <name>` lines, several images listed so `sha512sum -c --ignore-missing` matters).
 * Also serves the lab's Proxmox archive keyring at `/debian/proxmox-archive-keyring-trixie.gpg`
 * (the path it has on enterprise.proxmox.com) for the InstallProxmoxRepository step.
 */

export const IMAGE_NAME = "debian-13-genericcloud-amd64.qcow2";
export const IMAGE_PATH = `/images/cloud/trixie/latest/${IMAGE_NAME}`;
export const SUMS_PATH = "/images/cloud/trixie/latest/SHA512SUMS";
export const KEYRING_PATH = "/debian/proxmox-archive-keyring-trixie.gpg";

export type ImageServerFaults = {
  /** SHA512SUMS lists a checksum that the served image does not have. */
  checksumMismatch: boolean;
  /** The image response promises the full length but the connection is cut after this many bytes. */
  cutOffAfterBytes: number | null;
  /** Throttles the image body to this many bytes per second. */
  bytesPerSecond: number | null;
};

export type ImageServerOptions = {
  /** Size of the image file in bytes (the filler makes it that large). Default 8 MiB. */
  imageSizeBytes?: number;
  /** Default 0 = random free port on 127.0.0.1. */
  port?: number;
  faults?: Partial<ImageServerFaults>;
};

export type ImageServer = {
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  imageUrl: string;
  sumsUrl: string;
  keyringUrl: string;
  /** SHA-512 (hex) of the served image. */
  sha512: string;
  imageBytes: Buffer;
  faults: ImageServerFaults;
  /** Every request, in order (`GET /images/…`). */
  readonly requests: readonly { method: string; path: string; at: Date }[];
  stop(): Promise<void>;
};

export async function startImageServer(options: ImageServerOptions = {}): Promise<ImageServer> {
  const imageBytes = encodeLabImage(debianCloudImage(options.imageSizeBytes ?? 8 * 1024 * 1024));
  const sha512 = createHash("sha512").update(imageBytes).digest("hex");
  const faults: ImageServerFaults = {
    checksumMismatch: false,
    cutOffAfterBytes: null,
    bytesPerSecond: null,
    ...options.faults,
  };
  const requests: { method: string; path: string; at: Date }[] = [];
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const sums = () => {
    const listed = faults.checksumMismatch
      ? createHash("sha512")
          .update(Buffer.concat([imageBytes, Buffer.from("x")]))
          .digest("hex")
      : sha512;
    const other = (n: string) => createHash("sha512").update(n).digest("hex");
    return (
      `${other("json")}  debian-13-genericcloud-amd64.json\n` +
      `${listed}  ${IMAGE_NAME}\n` +
      `${other("raw")}  debian-13-genericcloud-amd64.raw\n` +
      `${other("tar")}  debian-13-genericcloud-amd64.tar.xz\n`
    );
  };

  const sendImage = (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(200, {
      "Content-Type": "application/octet-stream",
      "Content-Length": imageBytes.length,
      "Last-Modified": "Mon, 17 Nov 2025 09:12:00 GMT",
      "Accept-Ranges": "none",
    });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    const limit = faults.cutOffAfterBytes ?? imageBytes.length;
    const rate = faults.bytesPerSecond;
    const chunk = rate === null ? 256 * 1024 : Math.max(1, Math.floor(rate / 20));
    let offset = 0;
    const pump = () => {
      while (offset < limit) {
        const end = Math.min(offset + chunk, limit);
        const ok = res.write(imageBytes.subarray(offset, end));
        offset = end;
        if (rate !== null) {
          const timer = setTimeout(() => {
            timers.delete(timer);
            pump();
          }, 50);
          timers.add(timer);
          return;
        }
        if (!ok) {
          res.once("drain", pump);
          return;
        }
      }
      if (limit < imageBytes.length) {
        // Cut off mid-body: the client was promised more bytes than it gets.
        res.socket?.destroy();
        return;
      }
      res.end();
    };
    pump();
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    requests.push({ method: req.method ?? "GET", path: url.pathname, at: new Date() });
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405).end();
      return;
    }
    if (url.pathname === IMAGE_PATH) return sendImage(req, res);
    if (url.pathname === SUMS_PATH) {
      const body = sums();
      res.writeHead(200, {
        "Content-Type": "text/plain",
        "Content-Length": Buffer.byteLength(body),
      });
      res.end(req.method === "HEAD" ? undefined : body);
      return;
    }
    if (url.pathname === KEYRING_PATH) {
      res.writeHead(200, {
        "Content-Type": "application/octet-stream",
        "Content-Length": LAB_PROXMOX_KEYRING.length,
      });
      res.end(req.method === "HEAD" ? undefined : LAB_PROXMOX_KEYRING);
      return;
    }
    const body =
      "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n";
    res.writeHead(404, { "Content-Type": "text/html", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("image server: no address");
  const baseUrl = `http://127.0.0.1:${address.port}`;
  return {
    baseUrl,
    imageUrl: `${baseUrl}${IMAGE_PATH}`,
    sumsUrl: `${baseUrl}${SUMS_PATH}`,
    keyringUrl: `${baseUrl}${KEYRING_PATH}`,
    sha512,
    imageBytes,
    faults,
    requests,
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
