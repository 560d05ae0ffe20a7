import Bowser from "bowser";

/**
 * "Chrome 142 on Linux" from a User-Agent, so a person can tell their sessions apart in the
 * account page's list (bowser: a maintained parser; User-Agent strings are not our domain).
 * A client it does not know (a script) shows the start of its own string; none shows null.
 */
export function describeBrowser(userAgent: string | null): string | null {
  if (!userAgent) return null;
  const { browser, os } = Bowser.parse(userAgent);
  const name = [browser.name, browser.version?.split(".")[0]].filter(Boolean).join(" ");
  const system = [os.name, os.versionName].filter(Boolean).join(" ");
  if (!name) return userAgent.slice(0, 60);
  return system ? `${name} on ${system}` : name;
}
