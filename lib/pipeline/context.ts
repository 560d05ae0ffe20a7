/**
 * The run context as a step sees it during one visit. Writes are buffered and committed with
 * the visit's outcome in one transaction, so a crash mid-visit leaves the last committed
 * context intact and a thrown visit leaves no half-written keys.
 */
export class RunContext {
  private readonly values: Record<string, unknown>;
  private changed = false;

  constructor(initial: Record<string, unknown>) {
    this.values = structuredClone(initial);
  }

  get<T = unknown>(key: string): T | undefined {
    return this.values[key] as T | undefined;
  }

  has(key: string): boolean {
    return Object.hasOwn(this.values, key);
  }

  set(key: string, value: unknown): void {
    if (value === undefined) return this.delete(key);
    this.values[key] = structuredClone(value);
    this.changed = true;
  }

  delete(key: string): void {
    if (!Object.hasOwn(this.values, key)) return;
    delete this.values[key];
    this.changed = true;
  }

  get dirty(): boolean {
    return this.changed;
  }

  toJSON(): Record<string, unknown> {
    return structuredClone(this.values);
  }
}
