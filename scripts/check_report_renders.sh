#!/usr/bin/env bash
# Renders an HTML report in headless Chromium and checks that the screenshot is not blank.
# Usage: check_report_renders.sh REPORT.html OUT.png
# Exit 0 when more than 1% of the screenshot's pixels are not white; non-zero (with a message) when Chromium is
# missing, fails, writes no screenshot, or the screenshot is (nearly) blank. Needs chromium and python3
# (standard library only: the PNG is decoded with zlib).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 REPORT.html OUT.png" >&2
  exit 2
fi
report="$1"
out="$2"
if [ ! -f "$report" ]; then
  echo "check_report_renders: no such report: $report" >&2
  exit 2
fi
chromium_bin="${CHROMIUM:-chromium}"
if ! command -v "$chromium_bin" >/dev/null 2>&1; then
  echo "check_report_renders: '$chromium_bin' not found; run scripts/install_deps.sh test" >&2
  exit 3
fi
report_abs="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
rm -f "$out"
# No network: the page must render from the file alone.
if ! timeout 120 "$chromium_bin" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --window-size=1400,1000 --screenshot="$out" "file://$report_abs" >"$profile/chromium.log" 2>&1; then
  echo "check_report_renders: chromium failed on $report_abs:" >&2
  tail -n 20 "$profile/chromium.log" >&2
  exit 4
fi
if [ ! -s "$out" ]; then
  echo "check_report_renders: chromium wrote no screenshot to $out:" >&2
  tail -n 20 "$profile/chromium.log" >&2
  exit 4
fi
/usr/bin/python3 - "$out" <<'PY'
import struct, sys, zlib

path = sys.argv[1]
with open(path, "rb") as f:
    data = f.read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"check_report_renders: {path} is not a PNG")
pos, idat = 8, []
width = height = depth = color = interlace = None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat.append(body)
    elif kind == b"IEND":
        break
    pos += 12 + length
if width is None:
    sys.exit(f"check_report_renders: {path} has no IHDR chunk")
if depth != 8 or color not in (2, 6) or interlace != 0:
    sys.exit(f"check_report_renders: {path}: unsupported PNG (bit depth {depth}, color type {color}, interlace {interlace})")
bpp = 3 if color == 2 else 4
raw = zlib.decompress(b"".join(idat))
stride = width * bpp
prev = bytearray(stride)
non_white = 0
for y in range(height):
    start = y * (stride + 1)
    kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
    for i in range(stride):  # undo the PNG row filter
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + a) & 255
        elif kind == 2:
            line[i] = (line[i] + b) & 255
        elif kind == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        if line[x] < 245 or line[x + 1] < 245 or line[x + 2] < 245:
            non_white += 1
    prev = line
fraction = non_white / float(width * height)
print(f"check_report_renders: {path}: {width}x{height}, {100 * fraction:.2f}% non-white pixels")
if fraction <= 0.01:
    sys.exit("check_report_renders: the screenshot is blank (at most 1% non-white pixels)")
PY
