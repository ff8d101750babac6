#!/usr/bin/env bash
# Writes docs/robustness.md: every bad input that tests/app/cli_bad_*.sh (and cli_faults, cli_resume_semantics) tries, with the exit code and the
# message tinyformer printed, by running those tests against build/bin/tinyformer (build it first).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
table="$work/table.md"
{
  echo "# Bad input and what tinyformer says"
  echo
  echo "Made by \`bash scripts/error_table.sh\` from the CLI tests \`tests/app/cli_bad_*.sh\`, which check each"
  echo "line below: the exit code (1 for bad input, 2 for command-line usage, 0 for a warning), the message, and"
  echo "that nothing was lost: a refused \`train\` creates no run directory, a refused \`--resume\` leaves the run"
  echo "directory byte for byte as it was, no temporary file is left, and after a failed checkpoint save the"
  echo "previous checkpoint still loads. Paths are shown relative to the test's scratch directory."
  echo
  echo "| bad input | exit | message |"
  echo "|---|---|---|"
} > "$table"
for t in cli_bad_config cli_bad_values cli_bad_data cli_bad_checkpoint cli_bad_output cli_bad_resources cli_faults cli_resume_semantics; do
  TINYFORMER_ERROR_TABLE="$table" bash "$root/tests/app/$t.sh" "$root/build/bin/tinyformer" "$root" "$work/$t" \
    "$root/build/tests/bad_files" > "$work/$t.log" || { cat "$work/$t.log"; exit 1; }
done
cp "$table" "$root/docs/robustness.md"
echo "wrote docs/robustness.md ($(grep -c '^| [^-b]' "$table") cases)"
