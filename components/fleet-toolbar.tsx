"use client";

import { forwardRef } from "react";
import { SEARCH_MAX_LENGTH } from "@/lib/hosts/fleet-schemas";
import styles from "./fleet.module.css";

/**
 * The search box (narrows as you type; `/` focuses it, ↓ moves into the rows, Escape clears it)
 * and the failed-step and cluster filters, with a way back to the whole fleet.
 */
export const FleetToolbar = forwardRef<
  HTMLInputElement,
  {
    search: string;
    onSearch: (text: string) => void;
    onSearchKeyDown: (event: React.KeyboardEvent<HTMLInputElement>) => void;
    failedStep: string;
    failedSteps: { step: string; count: number }[];
    onFailedStep: (step: string) => void;
    cluster: string;
    clusters: { name: string; count: number }[];
    onCluster: (cluster: string) => void;
    filtered: boolean;
    onClear: () => void;
    summary: string;
    loading: boolean;
  }
>(function FleetToolbar(props, searchRef) {
  const steps =
    props.failedSteps.some((f) => f.step === props.failedStep) || !props.failedStep
      ? props.failedSteps
      : [{ step: props.failedStep, count: 0 }, ...props.failedSteps];
  // A cluster named by a link that no host is in any more is still shown as the filter in force.
  const clusters =
    !props.cluster || props.clusters.some((c) => c.name === props.cluster)
      ? props.clusters
      : [{ name: props.cluster, count: 0 }, ...props.clusters];
  return (
    <div className={styles.toolbar}>
      <label className={styles.search}>
        <span className={styles.visuallyHidden}>Search hosts</span>
        <input
          ref={searchRef}
          type="search"
          className="control"
          value={props.search}
          maxLength={SEARCH_MAX_LENGTH}
          placeholder="Search name, address or node   ( / )"
          aria-keyshortcuts="/"
          aria-describedby="fleet-summary"
          autoComplete="off"
          spellCheck={false}
          onChange={(event) => props.onSearch(event.target.value)}
          onKeyDown={props.onSearchKeyDown}
          data-testid="fleet-search"
        />
      </label>
      <label className={styles.select}>
        <span>Failed at</span>
        <select
          className="control"
          value={props.failedStep}
          onChange={(event) => props.onFailedStep(event.target.value)}
          data-testid="fleet-failed-step"
        >
          <option value="">any step</option>
          {steps.map((f) => (
            <option key={f.step} value={f.step}>
              {f.step} ({f.count})
            </option>
          ))}
        </select>
      </label>
      {(props.clusters.length > 0 || props.cluster) && (
        <label className={styles.select}>
          <span>Cluster</span>
          <select
            className="control"
            value={props.cluster}
            onChange={(event) => props.onCluster(event.target.value)}
            data-testid="fleet-cluster"
          >
            <option value="">any</option>
            {clusters.map((c) => (
              <option key={c.name} value={c.name}>
                {c.name} ({c.count})
              </option>
            ))}
          </select>
        </label>
      )}
      {props.filtered && (
        <button type="button" className="button" onClick={props.onClear} data-testid="fleet-clear">
          Clear filters
        </button>
      )}
      <span
        id="fleet-summary"
        className={styles.summary}
        role="status"
        aria-live="polite"
        aria-busy={props.loading}
        data-testid="fleet-summary"
      >
        {props.summary}
        {props.loading && <span className={styles.loading}> · updating…</span>}
      </span>
    </div>
  );
});
