import { describe, expect, it } from "vitest";

import { pveApiMethod } from "@/test/fixtures/proxmox/api-schema";
import { PROXMOX_REQUESTS } from "./client";

describe("the Proxmox client", () => {
  it("sends only requests that exist in Proxmox's published API schema", () => {
    for (const request of PROXMOX_REQUESTS) {
      const [method, template] = request.split(" ") as [string, string];
      expect(pveApiMethod(method, template), `${request} is not in the schema`).toBeDefined();
    }
  });

  it("sends only requests Proxmox lets an API token make", () => {
    for (const request of PROXMOX_REQUESTS) {
      const [method, template] = request.split(" ") as [string, string];
      expect(pveApiMethod(method, template)?.allowtoken, request).toBe(true);
    }
  });
});
