import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { freePort } from "@/lib/db/embedded-postgres";
import { connectSsh } from "@/lib/ssh/client";
import { isAftermathOfLoss, isDatabaseUnreachable } from "./unreachable";

/** What a call to a database that is not there (nothing listens on the port) throws. */
async function refused<T>(call: (url: string) => Promise<T>): Promise<unknown> {
  const url = `postgres://nobody:nothing@127.0.0.1:${await freePort()}/none`;
  try {
    await call(url);
  } catch (error) {
    return error;
  }
  throw new Error("the call to a closed port succeeded");
}

/** A `pg` DatabaseError as the server sends it (SQLSTATE in `code`). */
const serverError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("isDatabaseUnreachable: the database is away", () => {
  it("for a refused connection, from pg, a pool, and drizzle", async () => {
    const fromClient = await refused(async (url) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
    });
    const fromDrizzle = await refused(async (url) => {
      const pool = new pg.Pool({ connectionString: url });
      try {
        await drizzle(pool).execute(sql`select 1`);
      } finally {
        await pool.end();
      }
    });
    expect((fromClient as { code?: string }).code).toBe("ECONNREFUSED");
    expect(isDatabaseUnreachable(fromClient)).toBe(true);
    expect(isDatabaseUnreachable(fromDrizzle)).toBe(true);
    expect(isDatabaseUnreachable(new AggregateError([fromClient], "shutdown failed"))).toBe(true);
  });

  it("for a server that is shutting down, crashed or starting, and a socket that closed", () => {
    for (const code of ["57P01", "57P02", "57P03", "08006", "08003"]) {
      expect(isDatabaseUnreachable(serverError(code, "terminating connection")), code).toBe(true);
    }
    expect(isDatabaseUnreachable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(
      isDatabaseUnreachable(
        new Error("Client has encountered a connection error and is not queryable"),
      ),
    ).toBe(true);
  });
});

describe("isDatabaseUnreachable: anything else", () => {
  it("not for a refused SSH login or HTTP request, which carry the same socket error inside", async () => {
    const port = await freePort();
    const ssh = await connectSsh({
      host: "127.0.0.1",
      port,
      username: "root",
      auth: { kind: "password", password: "unused" },
      pinnedHostKey: null,
    }).catch((error: unknown) => error);
    const http = await fetch(`http://127.0.0.1:${port}/`).catch((error: unknown) => error);
    expect(((ssh as Error).cause as { code?: string }).code).toBe("ECONNREFUSED");
    expect(isDatabaseUnreachable(ssh)).toBe(false);
    expect(isDatabaseUnreachable(http)).toBe(false);
  });

  it("not for the database refusing the query itself", () => {
    expect(isDatabaseUnreachable(serverError("23505", "duplicate key value"))).toBe(false);
    expect(isDatabaseUnreachable(serverError("42P01", 'relation "x" does not exist'))).toBe(false);
    expect(isDatabaseUnreachable(new Error("something else"))).toBe(false);
    expect(isDatabaseUnreachable(undefined)).toBe(false);
  });
});

describe("isAftermathOfLoss", () => {
  it("is a query on a client that broke earlier, not a new loss", () => {
    expect(
      isAftermathOfLoss(
        new Error("Client has encountered a connection error and is not queryable"),
      ),
    ).toBe(true);
    expect(isAftermathOfLoss(new Error("Connection terminated unexpectedly"))).toBe(false);
  });
});
