/**
 * The `--load` onboardings in a process of their own (started by startOnboardingLoad): their lab
 * nodes' SSH and API servers and simulated tools would otherwise run on the bench's event loop
 * and delay the very moments it timestamps (upsd's first report, the committed event).
 */
import { createDb } from "@/lib/db/client";
import { keepOnboarding } from "./onboarding-load";

export type LoadRequest = { inFlight: true } | { stop: true };

async function main() {
  const { url, count } = JSON.parse(process.env.BENCH_POWER_LOAD!) as {
    url: string;
    count: number;
  };
  const { db } = createDb(url, 4);
  const load = await keepOnboarding(db, count);
  process.send!({ ready: true });
  process.on("message", (request: LoadRequest) => {
    if ("inFlight" in request) {
      void load.inFlight().then((inFlight) => process.send!({ inFlight }));
      return;
    }
    void load
      .stop()
      .then(() =>
        process.send!({ finished: load.finished(), failed: load.failed() }, () => process.exit(0)),
      );
  });
}

main().catch((error: Error) => {
  console.error(error);
  process.exit(1);
});
