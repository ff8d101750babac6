# Sourced by the CLI tests: failure, expected errors, and checks that a refused command left nothing behind.
# The caller sets $work (a scratch dir). With TINYFORMER_ERROR_TABLE=FILE every expected error appends a
# Markdown row "| case | exit code | message |" to FILE (the table of docs/robustness.md).

fail() { echo "FAIL: $*"; exit 1; }

# Every message a refused command printed is kept and, when the script ends, checked by messages.py (one line, no
# internals, no control bytes, at most 1 KB); a message that breaks those rules fails the script.
support_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
messages_dir=$(mktemp -d)
messages_kept=0
check_messages() {
  local status=$?
  if [ "$status" -eq 0 ] && [ "$messages_kept" -gt 0 ]; then
    /usr/bin/python3 "$support_dir/messages.py" --files "$messages_dir"/* || status=1
  fi
  rm -rf "$messages_dir"
  exit "$status"
}
trap check_messages EXIT

# run_refused LABEL CODE NEEDLE CMD...: CMD exits with CODE and prints NEEDLE on stderr ($work/err.txt).
run_refused() {
  local label="$1" code="$2" needle="$3"; shift 3
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local got=$?
  messages_kept=$((messages_kept + 1))
  cp "$work/err.txt" "$messages_dir/$messages_kept.exit$got.txt"
  [ "$got" -eq "$code" ] || { cat "$work/err.txt"; fail "$label: '$*' exited $got, expected $code"; }
  grep -qF -- "$needle" "$work/err.txt" || { cat "$work/err.txt"; fail "$label: '$*' did not say '$needle'"; }
}

# expect_error LABEL CODE NEEDLE CMD...: run_refused, and the message is a single line.
expect_error() {
  run_refused "$@"
  [ "$(wc -l < "$work/err.txt")" -eq 1 ] || { cat "$work/err.txt"; fail "$1: more than one line"; }
  [ "$(wc -c < "$work/err.txt")" -le 400 ] || { cat "$work/err.txt"; fail "$1: a line of more than 400 characters"; }
  record_error "$1" "$2"
}

# expect_listing LABEL CODE NEEDLE CMD...: run_refused, and the message is one line that lists several problems
# (mismatching tensors, differing keys), "n problems: a; b; ...", at most 1 KB (cut with " [...]").
expect_listing() {
  run_refused "$@"
  [ "$(wc -l < "$work/err.txt")" -eq 1 ] || { cat "$work/err.txt"; fail "$1: more than one line"; }
  [ "$(wc -c < "$work/err.txt")" -le 1100 ] || { cat "$work/err.txt"; fail "$1: a line of more than 1 KB"; }
  record_error "$1" "$2"
}

record_error() {
  [ -n "${TINYFORMER_ERROR_TABLE:-}" ] || return 0
  local msg
  msg=$(sed -e 's/|/\\|/g' -e "s#$work/##g" -e "s#${src:-/nonexistent}/##g" "$work/err.txt" | paste -sd' ' -)
  echo "| $1 | $2 | \`$msg\` |" >> "$TINYFORMER_ERROR_TABLE"
}

# refused_train LABEL NEEDLE CONFIG [ARGS...]: `$bin train CONFIG --out $out ARGS` is refused (exit 1) with
# NEEDLE and creates no $out.
refused_train() {
  local label="$1" needle="$2" config="$3"; shift 3
  expect_error "$label" 1 "$needle" "$bin" train "$config" --out "$out" "$@"
  nothing_written "$out"
}

# nothing_written DIR: a refused command must not have created DIR.
nothing_written() {
  [ ! -e "$1" ] || { ls -la "$1"; fail "a refused command created $1"; }
}

# no_temporaries DIR: no "*.tmp.<pid>" file of an atomic write is left in DIR.
no_temporaries() {
  local left
  left=$(find "$1" -name '*.tmp.*' 2> /dev/null)
  [ -z "$left" ] || fail "temporary files left behind: $left"
}

# fingerprint DIR: one checksum over every file in DIR (names and contents), to show a refused command
# changed nothing.
fingerprint() {
  (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
