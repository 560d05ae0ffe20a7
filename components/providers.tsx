"use client";

import "@/lib/zod-csp"; // before any schema parses in the browser
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { RenderClockProvider } from "./use-now";

/**
 * Client-side state for every page: one query cache. The live stream is opened by the console
 * layout only, once a session exists (issue 19: opened on /setup it answered 401 and the header
 * read "Reconnecting… (polling)" right after the first sign-in).
 */
export function Providers({ children, renderedAt }: { children: ReactNode; renderedAt: number }) {
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
      <RenderClockProvider at={renderedAt}>{children}</RenderClockProvider>
    </QueryClientProvider>
  );
}
