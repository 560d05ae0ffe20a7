import type { ExecOptions, ExecResult, SshSession, UploadOptions } from "./client";
import { SshChannelError, SshCommandTimeoutError, SshUploadError } from "./errors";

/**
 * SSH connections one worker process keeps across its ticks, one per scope and login: a tick's
 * commands and the waiter that watches the host between ticks (lib/pipeline/waits.ts) share
 * one authenticated connection instead of opening one each.
 *
 * Terminology:
 * - **scope**: whose connection it is (the host services use host and run: each run proves its
 *   own login). A new identity for a scope retires the old.
 * - **identity**: everything the connection was opened with that must still hold for reusing
 *   it — address, port, user, the pinned host key and the credential itself (a digest). A
 *   change in any of them is a new identity: the pinned key is checked on the next connect.
 * - **lease**: one user's hold on a kept connection; `close()` hands it back.
 *
 * Dropped on any doubt: a lost connection, a refused channel, a timed-out command (not one its
 * caller aborted) or a failed upload retire it, and so do age, idleness and `retire(scope)`; a
 * retired connection takes no new lease and is closed when its last lease is handed back.
 */
export type SshConnectionPool = {
  lease(key: PoolKey, open: () => Promise<SshSession>): Promise<SshSession>;
  /** No further lease of this scope's kept connection (e.g. a step must prove a fresh one). */
  retire(scope: string): void;
  /** Closes every connection; leases after this get a connection of their own, not kept. */
  close(): void;
  /** Connections opened and leases served by a kept one, since the pool was made. */
  readonly stats: { opened: number; reused: number };
};

export type PoolKey = { scope: string; identity: string };

export type PoolOptions = {
  /** A connection nobody holds is closed after this long. Default 60 s. */
  idleMs?: number;
  /** A connection older than this takes no new lease (authenticate again now and then). */
  maxAgeMs?: number;
};

type Entry = {
  key: PoolKey;
  opening: Promise<SshSession>;
  session: SshSession | null;
  openedAt: number;
  leases: number;
  retired: boolean;
  idle: NodeJS.Timeout | null;
};

export function createSshConnectionPool(options: PoolOptions = {}): SshConnectionPool {
  const idleMs = options.idleMs ?? 60_000;
  const maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  const kept = new Map<string, Entry>();
  const stats = { opened: 0, reused: 0 };
  let closed = false;
  const mapKey = (key: PoolKey) => `${key.scope}\u0000${key.identity}`;

  const closeSession = (entry: Entry) => {
    if (entry.idle) clearTimeout(entry.idle);
    entry.idle = null;
    void entry.opening.then(
      (session) => session.close(),
      () => {},
    );
  };

  const retireEntry = (entry: Entry) => {
    if (entry.retired) return;
    entry.retired = true;
    if (kept.get(mapKey(entry.key)) === entry) kept.delete(mapKey(entry.key));
    if (entry.leases === 0) closeSession(entry);
  };

  const usable = (entry: Entry) =>
    !entry.retired &&
    (entry.session === null || entry.session.alive) &&
    Date.now() - entry.openedAt < maxAgeMs;

  const release = (entry: Entry) => {
    entry.leases -= 1;
    if (entry.leases > 0) return;
    if (!usable(entry)) {
      entry.retired = true;
      if (kept.get(mapKey(entry.key)) === entry) kept.delete(mapKey(entry.key));
      closeSession(entry);
      return;
    }
    entry.idle = setTimeout(() => retireEntry(entry), idleMs);
    entry.idle.unref();
  };

  return {
    stats,
    async lease(key, open) {
      if (closed) {
        stats.opened += 1;
        return open();
      }
      for (const other of [...kept.values()])
        if (other.key.scope === key.scope && other.key.identity !== key.identity)
          retireEntry(other);
      let entry = kept.get(mapKey(key));
      if (entry && !usable(entry)) {
        retireEntry(entry);
        entry = undefined;
      }
      if (entry) {
        stats.reused += 1;
      } else {
        stats.opened += 1;
        const opening = open();
        const fresh: Entry = {
          key,
          opening,
          session: null,
          openedAt: Date.now(),
          leases: 0,
          retired: false,
          idle: null,
        };
        kept.set(mapKey(key), fresh);
        opening.then(
          (session) => {
            fresh.session = session;
            if (fresh.retired && fresh.leases === 0) session.close();
          },
          () => {
            fresh.retired = true;
            if (kept.get(mapKey(key)) === fresh) kept.delete(mapKey(key));
          },
        );
        entry = fresh;
      }
      if (entry.idle) clearTimeout(entry.idle);
      entry.idle = null;
      entry.leases += 1;
      let session: SshSession;
      try {
        session = await entry.opening;
      } catch (error) {
        entry.leases -= 1;
        throw error;
      }
      return new Lease(
        session,
        () => release(entry),
        () => retireEntry(entry),
      );
    },
    retire(scope) {
      for (const entry of [...kept.values()]) if (entry.key.scope === scope) retireEntry(entry);
    },
    close() {
      closed = true;
      for (const entry of [...kept.values()]) {
        retireEntry(entry);
        closeSession(entry);
      }
    },
  };
}

/** A failure that puts the connection itself in doubt (not the command's own exit status). */
function doubtful(error: unknown): boolean {
  if (error instanceof SshCommandTimeoutError) return !error.aborted;
  return error instanceof SshChannelError || error instanceof SshUploadError;
}

class Lease implements SshSession {
  private released = false;

  constructor(
    private readonly session: SshSession,
    private readonly onRelease: () => void,
    private readonly onDoubt: () => void,
  ) {}

  get hostKeySha256(): string {
    return this.session.hostKeySha256;
  }

  get alive(): boolean {
    return !this.released && this.session.alive;
  }

  async exec(command: string, options?: ExecOptions): Promise<ExecResult> {
    this.assertHeld();
    try {
      return await this.session.exec(command, options);
    } catch (error) {
      if (doubtful(error)) this.onDoubt();
      throw error;
    }
  }

  async upload(remotePath: string, bytes: Buffer | string, options?: UploadOptions) {
    this.assertHeld();
    try {
      await this.session.upload(remotePath, bytes, options);
    } catch (error) {
      if (doubtful(error)) this.onDoubt();
      throw error;
    }
  }

  close(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease();
  }

  private assertHeld() {
    if (this.released)
      throw new Error("this SSH lease was handed back; lease the connection again");
  }
}
