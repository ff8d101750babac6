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
  cat "$root/docs/robustness_rules.md"
  echo
  echo "## The generative tester"
  echo
  echo "\`tests/app/generative.py\` (in CTest and CI) draws cases instead of listing them; its catalogue and invariants"
  echo "are in its docstring. Its first run of 500 cases found 6 failures: 3 in its own fixture (a text config"
  echo "whose warmup exceeded its steps), and 3 in tinyformer, now fixed and kept as regressions: \`gradcheck\` with a"
  echo "huge \`model.vocab_size\` died with a bare out of memory (it now checks the memory estimate first, as \`train\`"
  echo "does), and a newline in an \`--out\` name or a \`--set\` value split the error into two lines (newlines are now"
  echo "escaped unless an indented listing follows). The run that made this page (\`generative.py build/bin/tinyformer . WORK --cases 500\`):"
  echo
  echo '```'
  /usr/bin/python3 "$root/tests/app/generative.py" "$root/build/bin/tinyformer" "$root" "$work/generative" --cases 500 \
    | grep -E '^(seeds|[0-9]+ cases)'
  echo '```'
  echo
  echo "## The listed cases"
  echo
  echo "| bad input | exit | message |"
  echo "|---|---|---|"
} > "$table"
for t in cli_bad_config cli_bad_values cli_bad_data cli_bad_checkpoint cli_bad_output cli_bad_resources cli_faults cli_resume_semantics \
  cli_file_gate; do
  TINYFORMER_ERROR_TABLE="$table" bash "$root/tests/app/$t.sh" "$root/build/bin/tinyformer" "$root" "$work/$t" \
    "$root/build/tests/bad_files" > "$work/$t.log" || { cat "$work/$t.log"; exit 1; }
done
cp "$table" "$root/docs/robustness.md"
echo "wrote docs/robustness.md ($(grep -c '^| [^-b]' "$table") cases)"
