import { describe, expect, it } from "vitest";
import { bootDiskVolume, configIsTemplate } from "./is-template";

describe("configIsTemplate", () => {
  it("a flagged VM with a base- disk on directory storage is a template", () => {
    expect(
      configIsTemplate({
        template: 1,
        boot: "order=scsi0",
        scsi0: "local:9000/base-9000-disk-0.raw,size=3G",
      }),
    ).toBe(true);
  });

  it("a flagged VM with a base- disk on LVM-thin is a template", () => {
    expect(
      configIsTemplate({
        template: 1,
        scsi0: "local-lvm:base-9000-disk-0,size=3G",
        ide2: "local-lvm:vm-9000-cloudinit,media=cdrom",
      }),
    ).toBe(true);
  });

  it("the flag alone is not enough: Proxmox writes it before converting the disk", () => {
    expect(
      configIsTemplate({
        template: 1,
        boot: "order=scsi0",
        scsi0: "local-lvm:vm-9000-disk-0,size=3G",
      }),
    ).toBe(false);
  });

  it("an ordinary VM with that number is not a template", () => {
    expect(configIsTemplate({ name: "customer-vm", scsi0: "local-lvm:vm-9000-disk-0" })).toBe(
      false,
    );
  });

  it("a flagged VM without any disk is not a template", () => {
    expect(configIsTemplate({ template: 1, ide2: "local:cloudinit,media=cdrom" })).toBe(false);
  });

  it("reads the boot disk from boot order, skipping CD-ROMs and cloud-init drives", () => {
    expect(
      bootDiskVolume({
        boot: "order=ide2;virtio0;net0",
        ide2: "local:iso/debian.iso,media=cdrom",
        virtio0: "local-zfs:base-9001-disk-0,size=8G",
      }),
    ).toBe("local-zfs:base-9001-disk-0");
  });
});
