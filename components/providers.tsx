"use client";

import "@/lib/zod-csp"; // before any schema parses in the browser
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { LiveProvider } from "./live-provider";

/** Client-side state for the whole console: one query cache, one live stream. */
export function Providers({ children }: { children: ReactNode }) {
  // One client per browser tab (useState, not a module constant: never shared across requests).
  const [queryClient] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            // Server-rendered data is fresh; the live stream invalidates what changes.
            staleTime: 5_000,
            retry: 1,
            refetchOnWindowFocus: true,
          },
        },
      }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <LiveProvider>{children}</LiveProvider>
    </QueryClientProvider>
  );
}
