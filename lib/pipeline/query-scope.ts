import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Whose database work a query is: the engine's bookkeeping of a tick, the step's own (its
 * visit, its services, its log lines), or the worker's upkeep (heartbeats, the recovery sweep,
 * waiters' wake-ups). Anything outside these is graphile-worker's own. Only the benchmarks read
 * it (bench/onboard.ts splits queries per tick by it); the cost is one AsyncLocalStorage.
 */
export type QueryScope = "engine" | "step" | "worker";

const scope = new AsyncLocalStorage<QueryScope>();

export function inQueryScope<T>(name: QueryScope, work: () => T): T {
  return scope.run(name, work);
}

export function currentQueryScope(): QueryScope | undefined {
  return scope.getStore();
}
