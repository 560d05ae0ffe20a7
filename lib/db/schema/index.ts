export * from "./credentials";
export * from "./hosts";
export * from "./runs";
export * from "./step-visits";
export * from "./events";
export * from "./worker-heartbeats";
export * from "./run-log-chunks";
export * from "./catalog";
