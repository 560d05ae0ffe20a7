/** Under the power keys: a power live message with neither UPS nor event refreshes them. */
export const notifyKeys = {
  cards: ["power", "notifications", "cards"] as const,
  failing: ["power", "notifications", "failing"] as const,
};
