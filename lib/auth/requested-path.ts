/**
 * The path (with query) a page request asked for, set by proxy.ts on every page request, so the
 * console layout's sign-in redirect can come back to it (a layout does not know its page's
 * path). Only ever used through safeNextPath on the sign-in page: a client can send this header
 * itself on the requests proxy.ts skips (prefetches).
 */
export const REQUESTED_PATH_HEADER = "x-clupilot-requested-path";
