import type { ApiTokenSummary } from "@/lib/auth/api-tokens";
import type { TokenRow } from "./api-tokens-panel";

/** Server-side tokens → what the token table shows (dates as ISO strings for the client). */
export function tokenRows(tokens: ApiTokenSummary[]): TokenRow[] {
  return tokens.map((token) => ({
    id: token.id,
    userName: token.userName,
    label: token.label,
    prefix: token.prefix,
    createdAt: token.createdAt.toISOString(),
    lastUsedAt: token.lastUsedAt?.toISOString() ?? null,
    revokedAt: token.revokedAt?.toISOString() ?? null,
  }));
}
