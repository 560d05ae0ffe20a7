import path from "node:path";

/** Where the console keeps its local state (embedded Postgres, generated secret key). */
export function dataDir(): string {
  return path.resolve(
    /* turbopackIgnore: true */ process.env.CLUPILOT_DATA_DIR ?? path.join(process.cwd(), ".data"),
  );
}
