#!/usr/bin/env bash
# Drives the head view of an HTML report in headless Chromium (hover, click, head toggle, layer choice, map
# tooltip) and compares what the page shows with the report's embedded data; fails on any console error,
# uncaught exception or network request. The work is done by check_report_interactive.py (DevTools protocol over
# a pipe, Python standard library only); this wrapper finds Chromium and makes a throw-away profile.
# Usage: check_report_interactive.sh REPORT.html [--query Q] [--screenshot OUT.png]
# Exit 0 when everything matches; non-zero with a message otherwise (3: Chromium missing).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 REPORT.html [--query Q]" >&2
  exit 2
fi
report="$1"
shift
if [ ! -f "$report" ]; then
  echo "check_report_interactive: no such report: $report" >&2
  exit 2
fi
chromium_bin="${CHROMIUM:-chromium}"
if ! command -v "$chromium_bin" >/dev/null 2>&1; then
  echo "check_report_interactive: '$chromium_bin' not found; run scripts/install_deps.sh test" >&2
  exit 3
fi
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
if ! timeout 120 /usr/bin/python3 "$(dirname "$0")/check_report_interactive.py" --chromium "$(command -v "$chromium_bin")" \
    --profile "$profile" "$report" "$@"; then
  echo "check_report_interactive: failed on $report; the end of chromium's log:" >&2
  tail -n 20 "$profile/chromium.log" >&2 || true
  exit 1
fi
