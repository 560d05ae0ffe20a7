/** The react-query keys the live stream invalidates; every live query uses one of these. */
export const liveKeys = {
  hosts: ["hosts"] as const,
  host: (hostId: string) => ["host", hostId] as const,
  run: (runId: string) => ["run", runId] as const,
  crashLoops: ["crash-loops"] as const,
};
