import { QueryClient, QueryObserver } from "@tanstack/react-query";
import { afterEach, describe, expect, it } from "vitest";
import { powerRefresher } from "./power-refresh";

const clients: QueryClient[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.clear();
});

/** A query whose every fetch takes `ms` and answers the server's value at the fetch's start. */
function slowQuery(ms: number) {
  const client = new QueryClient();
  clients.push(client);
  const server = { value: 0, fetches: 0, finished: 0 };
  const observer = new QueryObserver(client, {
    queryKey: ["power", "overview"],
    queryFn: async () => {
      server.fetches += 1;
      const value = server.value;
      await new Promise((resolve) => setTimeout(resolve, ms));
      server.finished += 1;
      return value;
    },
  });
  const unsubscribe = observer.subscribe(() => undefined);
  return { client, server, observer, unsubscribe };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("refreshing power queries from the live stream", () => {
  it("a message every 20 ms against a fetch of 100 ms still gets answers through, and the last one shows the latest state", async () => {
    const { client, server, observer, unsubscribe } = slowQuery(100);
    await sleep(150);
    const refresh = powerRefresher(client, () => false);
    for (let i = 1; i <= 25; i++) {
      server.value = i;
      refresh([["power", "overview"]]);
      await sleep(20);
    }
    // Answers arrived during the burst (no starvation) ...
    expect(server.finished).toBeGreaterThanOrEqual(3);
    // ... far fewer fetches than messages ...
    expect(server.fetches).toBeLessThan(12);
    await sleep(400);
    // ... and nothing announced is missed: the last fetch started after the last change.
    expect(observer.getCurrentResult().data).toBe(25);
    unsubscribe();
  });

  it("the default invalidation, for contrast, starves under the same messages: every fetch is cancelled by the next", async () => {
    const { client, server, observer, unsubscribe } = slowQuery(100);
    await sleep(150);
    for (let i = 1; i <= 25; i++) {
      server.value = i;
      void client.invalidateQueries({ queryKey: ["power", "overview"] });
      await sleep(20);
    }
    // Still the first answer after 25 changes and as many fetches started.
    expect(observer.getCurrentResult().data).toBe(0);
    expect(server.fetches - 1).toBeGreaterThanOrEqual(25);
    unsubscribe();
  });

  it("one message while a fetch from before the change is running: a fetch after it follows (the run panel's last tick)", async () => {
    const { client, server, observer, unsubscribe } = slowQuery(100);
    await sleep(150);
    // A fetch starts (another message's, or the fallback poll) ...
    void client.invalidateQueries({ queryKey: ["power", "overview"] });
    await sleep(20);
    // ... the run ends while it runs, and its one message comes.
    server.value = 1;
    powerRefresher(client, () => false)([["power", "overview"]]);
    await sleep(400);
    expect(observer.getCurrentResult().data).toBe(1);
    unsubscribe();
  });

  it("joining the running fetch instead, for contrast, keeps the state from before the change", async () => {
    const { client, server, observer, unsubscribe } = slowQuery(100);
    await sleep(150);
    void client.invalidateQueries({ queryKey: ["power", "overview"] });
    await sleep(20);
    server.value = 1;
    void client.invalidateQueries({ queryKey: ["power", "overview"] }, { cancelRefetch: false });
    await sleep(400);
    expect(observer.getCurrentResult().data).toBe(0);
    unsubscribe();
  });
});
