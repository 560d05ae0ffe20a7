/**
 * What a page does when the server ends its live or log stream with `signed-out` (signed out
 * elsewhere, expired, disabled): reconnecting would only collect 401s, so go to the sign-in
 * page, which brings the person back here afterwards.
 */
export function leaveForSignIn(): void {
  const here = `${window.location.pathname}${window.location.search}`;
  // A full load on purpose, not router.push: it drops everything the ended session had cached.
  // eslint-disable-next-line @next/next/no-location-assign-relative-destination
  window.location.assign(`/login?next=${encodeURIComponent(here)}`);
}
