#!/usr/bin/env bash
# `npm run check`: TypeScript, ESLint and Prettier side by side (each keeps one core busy for
# most of a minute; one after another they took two), then each one's output in that order, so
# their lines never interleave. Fails when any of them fails, naming which.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

checks=(typecheck lint format:check)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

pids=()
for i in "${!checks[@]}"; do
  npm run --silent "${checks[$i]}" >"$out/$i" 2>&1 &
  pids+=("$!")
done

failed=()
for i in "${!checks[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  echo "> npm run ${checks[$i]}"
  cat "$out/$i"
  if [ "$status" -ne 0 ]; then failed+=("${checks[$i]}"); fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "npm run check: failed: ${failed[*]}" >&2
  exit 1
fi
