/**
 * The UPS output cycle's action: its label starts so, its lane is the UPS's name
 * (lib/power/shutdown/cycle-ups-output.ts). A module of its own so the page can tell the action
 * apart without importing the database layer.
 */
export const OUTPUT_CYCLE_LABEL = "cycle output ";
