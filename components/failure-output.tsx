/** The raw output a failure reason quoted, one click away (it is in the build log too). */
export function FailureOutput({ lines }: { lines: readonly string[] }) {
  if (lines.length === 0) return null;
  return (
    <details className="failure-output" data-testid="failure-output">
      <summary>
        Show the output ({lines.length} {lines.length === 1 ? "line" : "lines"})
      </summary>
      <pre>{lines.join("\n")}</pre>
    </details>
  );
}
