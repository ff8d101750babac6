#!/usr/bin/env bash
# Writes the fortunes corpus that configs/tinyllama.yaml and configs/fortunes_*.yaml read: every text file of
# Debian's `fortunes` package (/usr/share/games/fortunes, 2.6 MB of English quotations and verse; not the .dat
# indexes or the .u8 links) concatenated in name order. Entries are separated by lines "%" (data.documents: "%").
# Usage: configs/data/fortunes_corpus.sh [OUT]   (default: configs/data/fortunes.txt, ignored by git)
set -euo pipefail
src=/usr/share/games/fortunes
out="${1:-$(dirname "$0")/fortunes.txt}"
if [ ! -d "$src" ]; then
  echo "fortunes_corpus.sh: $src is missing: install Debian's fortunes package (scripts/install_deps.sh does)" >&2
  exit 1
fi
tmp="$out.tmp.$$"
: >"$tmp"
for f in "$src"/*; do
  case "$f" in *.dat | *.u8) continue ;; esac
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  cat "$f" >>"$tmp"
  # a file that does not end its last entry with "%" gets one, so entries never run together
  [ "$(tail -n 1 "$f")" = "%" ] || printf '%%\n' >>"$tmp"
done
mv "$tmp" "$out"
echo "fortunes_corpus.sh: wrote $out ($(wc -c <"$out") bytes, $(grep -c '^%$' "$out") entries)"
