import fs from "node:fs";

/**
 * Makes the renames and new files in `dir` durable (fsync of the folder itself): after a crash
 * the folder lists what the last completed rename left, so a file written beside and renamed
 * into place is either the old one or the whole new one. The key files and the embedded
 * database's password file are written this way.
 */
export function syncFolder(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
