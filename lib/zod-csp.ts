import { z } from "zod";

/**
 * Zod compiles object parsers with `new Function` when it may, and probes for that with a
 * `Function("")` call. In the browser our Content-Security-Policy forbids eval (proxy.ts), so the
 * probe is blocked and reported as a violation on every page that parses. Parsing without the
 * JIT is what zod falls back to anyway; saying so up front keeps the console violation-free.
 */
z.config({ jitless: true });
