"use client";

import { PAGE_SIZE_MAX } from "@/lib/hosts/fleet-schemas";
import styles from "./fleet.module.css";

const SIZES = [50, 100, PAGE_SIZE_MAX];

/** Previous / next page and the page size; the page number lives in the URL like the rest. */
export function FleetPager({
  page,
  onPage,
  onSize,
}: {
  page: { number: number; size: number; totalPages: number };
  onPage: (page: number) => void;
  onSize: (size: number) => void;
}) {
  return (
    <nav className={styles.pager} aria-label="Pages">
      <button
        type="button"
        className="button"
        disabled={page.number <= 1}
        onClick={() => onPage(page.number - 1)}
        data-testid="fleet-prev"
      >
        ← Previous
      </button>
      <span data-testid="fleet-page">
        Page {page.number} of {page.totalPages}
      </span>
      <button
        type="button"
        className="button"
        disabled={page.number >= page.totalPages}
        onClick={() => onPage(page.number + 1)}
        data-testid="fleet-next"
      >
        Next →
      </button>
      <label className={styles.select}>
        <span>Per page</span>
        <select
          className="control"
          value={page.size}
          onChange={(event) => onSize(Number(event.target.value))}
        >
          {[...new Set([...SIZES, page.size])]
            .sort((a, b) => a - b)
            .map((size) => (
              <option key={size} value={size}>
                {size}
              </option>
            ))}
        </select>
      </label>
    </nav>
  );
}
