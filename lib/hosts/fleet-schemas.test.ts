import { describe, expect, it } from "vitest";
import {
  DEFAULT_FLEET_QUERY,
  effectiveDir,
  fleetParamsObject,
  fleetQueryToParams,
  ZFleetQuery,
} from "./fleet-schemas";

const parse = (search: string) => ZFleetQuery.parse(fleetParamsObject(new URLSearchParams(search)));

describe("fleet query parameters", () => {
  it("no parameters: every host by name, first page of 50", () => {
    expect(parse("")).toEqual(DEFAULT_FLEET_QUERY);
    expect(DEFAULT_FLEET_QUERY).toMatchObject({
      q: "",
      state: [],
      sort: "name",
      page: 1,
      limit: 50,
    });
    expect(fleetQueryToParams(DEFAULT_FLEET_QUERY).toString()).toBe("");
  });

  it("a view survives the round trip through the URL (a link or a reload shows the same hosts)", () => {
    const query = parse(
      "q=%20pve%20&state=failed&state=onboarding,failed&failedStep=InstallProxmoxVe&attention=1&cluster=lab-1&sort=updated&dir=asc&page=3&limit=100",
    );
    expect(query).toEqual({
      q: "pve",
      state: ["failed", "onboarding"],
      failedStep: "InstallProxmoxVe",
      attention: true,
      cluster: "lab-1",
      sort: "updated",
      dir: "asc",
      page: 3,
      limit: 100,
    });
    expect(parse(fleetQueryToParams(query).toString())).toEqual(query);
  });

  it("the default direction is newest first for last update, ascending otherwise", () => {
    expect(effectiveDir({ sort: "updated", dir: undefined })).toBe("desc");
    expect(effectiveDir({ sort: "state", dir: undefined })).toBe("asc");
    expect(effectiveDir({ sort: "updated", dir: "asc" })).toBe("asc");
  });
});
