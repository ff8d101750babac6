#!/usr/bin/env python3
"""Drives the head view of a tinyformer HTML report in headless Chromium and checks what the page shows.

Usage: check_report_interactive.py --chromium PATH --profile DIR REPORT.html [--query Q] [--screenshot OUT.png]

Chromium is controlled over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on its fd 3,
replies on fd 4, JSON messages ended by a NUL byte), so no port is opened. The script
  1. opens the report (file://), with console, log, exception and network events recorded;
  2. moves the mouse onto query token Q of the head view (real mouse events at the token's position) and reads
     the lines, the key tints, the expected-key outline and the readout from the DOM;
  3. clicks it (pinned), moves the mouse away, and checks that the query stays shown;
  4. clicks the checkbox of head 1 (hidden; skipped with one head) and reads again; picks the last layer in the
     selector and reads again;
  5. hovers the bottom-right cell of the first attention map and reads the tooltip.
Every reading is compared with what the JSON embedded in the report says, recomputed here independently of the
page's script: the lines of each shown head to every key with weight > 0, each head's strongest key (the first
one on ties) and its weight, the expected key, and the key labels with visible escapes. The check fails on any
difference, on any console error, uncaught exception or error log entry, and on any request that is not the
report file itself. Exit 0 when everything matches; 1 with a message otherwise. Standard library only.
"""
import argparse
import base64
import fcntl
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000", "--remote-debugging-pipe"]


class Failure(Exception):
    pass


class Browser:
    """Chromium with a DevTools pipe; events of the attached page are kept in self.events."""

    def __init__(self, chromium, profile, log):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # The child's ends move to fds >= 10, so that bash can put them on fds 3 (commands) and 4 (replies), where
        # Chromium expects them, without overwriting one with the other.
        child_r, child_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_r, from_w))
        os.close(to_r)
        os.close(from_w)
        script = f'exec "$0" "$@" 3<&{child_r} 4>&{child_w} {child_r}<&- {child_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", script, chromium, *FLAGS, f"--user-data-dir={profile}"],
                                     pass_fds=(child_r, child_w), stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        os.close(child_r)
        os.close(child_w)
        self.out, self.inp = to_w, from_r
        self.buffer, self.next_id, self.session, self.events = b"", 0, None, []

    def send(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self.receive(deadline, f"the reply to {method}")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failure(f"{method} failed: {reply['error']}")
                return reply.get("result", {})

    def receive(self, deadline, what):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.inp], [], [], left)[0]:
                raise Failure(f"timed out waiting for {what}")
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise Failure(f"chromium closed the DevTools pipe while waiting for {what}")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message = json.loads(raw)
        if "method" in message:
            self.events.append(message)
        return message

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        while not any(e["method"] == method for e in self.events):
            self.receive(deadline, method)

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise Failure(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def mouse(self, kind, x, y):
        params = {"type": kind, "x": x, "y": y}
        if kind != "mouseMoved":
            params.update(button="left", clickCount=1)
        self.send("Input.dispatchMouseEvent", params)

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=5)
        except Failure:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def shown(token):
    """The page's visible form of a token: space U+2423, \\n, \\t, other control characters \\xNN, cut at 10."""
    t = token.replace(" ", "\u2423").replace("\n", "\\n").replace("\t", "\\t")
    t = re.sub(r"[\x00-\x1f\x7f]", lambda m: "\\x%02X" % ord(m.group()), t)
    return t[:9] + "\u2026" if len(t) > 10 else t


def embedded_data(report):
    html = Path(report).read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="tf-data">(.*?)</script>', html, re.S)
    if not match:
        raise Failure("the report has no <script id=\"tf-data\"> JSON")
    return json.loads(match.group(1))


def expected_view(snap, layer, query, active):
    """What the head view must show for `query` in `layer` with the heads `active` shown."""
    L, H, T = snap["shape"]
    w = lambda h, k: snap["w"][((layer * H + h) * T + query) * T + k]
    lines, reads = set(), []
    for h in range(H):
        if not active[h]:
            continue
        lines |= {(h, k) for k in range(query + 1) if w(h, k) > 0}
        best = max(range(query + 1), key=lambda k: (w(h, k), -k))
        reads.append((h, best, round(w(h, best) / 1000, 3)))
    expected = snap.get("expected", [-1] * T)[query]
    return {"query": query, "layer": layer, "lines": lines, "reads": reads,
            "outlined": [expected] if expected >= 0 else []}


READ_STATE = """(() => {
  const root = document.getElementById("head-view");
  const all = (s) => Array.from(document.querySelectorAll(s));
  return {
    query: Number(root.dataset.query), layer: Number(root.dataset.layer),
    lines: all("#hv-lines line.hv-line").map(l => [Number(l.dataset.head), Number(l.dataset.key),
                                                   Number(l.getAttribute("stroke-opacity"))]),
    reads: all("#hv-readout .hv-read").map(d => [Number(d.dataset.head), Number(d.dataset.key), Number(d.dataset.weight)]),
    outlined: all(".hv-key.hv-expected").map(d => Number(d.dataset.index)),
    pinned: all(".hv-query.hv-pinned").map(d => Number(d.dataset.index)),
    keys: all(".hv-key").map(d => d.textContent),
    tinted: all(".hv-key").filter(d => d.style.background !== "").length,
  };
})()"""


def center_of(browser, selector):
    expression = f"""(() => {{
      const e = document.querySelector({json.dumps(selector)});
      if (!e) return null;
      e.scrollIntoView({{block: "center", inline: "center"}});
      const r = e.getBoundingClientRect();
      return [r.left + r.width / 2, r.top + r.height / 2];
    }})()"""
    point = browser.evaluate(expression)
    if point is None:
        raise Failure(f"no element matches {selector}")
    return point


def compare(state, want, step):
    lines = {(h, k) for h, k, _ in state["lines"]}
    problems = []
    if state["query"] != want["query"] or state["layer"] != want["layer"]:
        problems.append(f"shows query {state['query']} of layer {state['layer']}, want {want['query']} of {want['layer']}")
    if lines != want["lines"]:
        problems.append(f"lines to (head, key) {sorted(lines)}, want {sorted(want['lines'])}")
    if [tuple(r) for r in state["reads"]] != want["reads"]:
        problems.append(f"readout (head, key, weight) {state['reads']}, want {want['reads']}")
    if state["outlined"] != want["outlined"]:
        problems.append(f"outlined keys {state['outlined']}, want {want['outlined']}")
    if problems:
        raise Failure(f"{step}: " + "; ".join(problems))
    print(f"check_report_interactive: {step}: query {want['query']}, layer {want['layer']}: {len(lines)} lines, "
          f"readout {want['reads']}, expected key outlined {want['outlined']}")


def drive(browser, data, query):
    snap = data["snapshots"][-1]  # the slider starts at the last snapshot
    L, H, T = snap["shape"]
    if not 0 <= query < T:
        raise Failure(f"--query {query} is not a position of the last snapshot (T = {T})")
    active = [True] * H
    x, y = center_of(browser, f'.hv-query[data-index="{query}"]')
    browser.mouse("mouseMoved", x, y)
    state = browser.evaluate(READ_STATE)
    compare(state, expected_view(snap, 0, query, active), "hover")
    labels = [shown(t) for t in snap["tokens"]] if snap["tokens"] else [str(i) for i in range(T)]
    if state["keys"] != labels:
        raise Failure(f"key labels {state['keys']}, want {labels}")
    if state["tinted"] == 0:
        raise Failure("no key is tinted while a query is shown")

    browser.mouse("mousePressed", x, y)
    browser.mouse("mouseReleased", x, y)
    browser.mouse("mouseMoved", 2, 2)  # leave the tokens: the pinned query stays
    state = browser.evaluate(READ_STATE)
    compare(state, expected_view(snap, 0, query, active), "click, then mouse away")
    if state["pinned"] != [query]:
        raise Failure(f"pinned queries {state['pinned']}, want [{query}]")

    if H >= 2:  # a head toggle needs a second head to leave something shown
        x, y = center_of(browser, "#hv-head-1")
        browser.mouse("mousePressed", x, y)
        browser.mouse("mouseReleased", x, y)
        active[1] = False
        compare(browser.evaluate(READ_STATE), expected_view(snap, 0, query, active), "head 1 hidden")
    else:
        print("check_report_interactive: one head only: the head toggle is not tried")

    browser.evaluate(f'(() => {{ const s = document.getElementById("hv-layer"); s.value = "{L - 1}"; '
                     f's.dispatchEvent(new Event("change", {{bubbles: true}})); }})()')
    compare(browser.evaluate(READ_STATE), expected_view(snap, L - 1, query, active), f"layer {L - 1} selected")
    check_map_tooltip(browser, T)


def check_map_tooltip(browser, T):
    x, y = browser.evaluate("""(() => {
      const c = document.querySelector("#attention canvas.map");
      c.scrollIntoView({block: "center"});
      const r = c.getBoundingClientRect();
      return [r.right - 3, r.bottom - 3];
    })()""")
    browser.mouse("mouseMoved", x, y)
    tip = browser.evaluate('(() => { const t = document.getElementById("tip"); '
                           'return [t.style.display, t.textContent]; })()')
    if tip[0] != "block" or f"query {T - 1}" not in tip[1] or "weight" not in tip[1]:
        raise Failure(f"hovering the last cell of the first map shows tooltip {tip!r}, want query {T - 1} and a weight")
    print(f"check_report_interactive: map tooltip: {tip[1]!r}")


def save_screenshot(browser, path):
    browser.evaluate('document.getElementById("head-view").scrollIntoView({block: "center"})')
    png = browser.send("Page.captureScreenshot", {"format": "png"})["data"]
    Path(path).write_bytes(base64.b64decode(png))


def problems_in(events, url):
    found = []
    for e in events:
        method, p = e["method"], e.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(f"uncaught exception: {p['exceptionDetails'].get('exception', {}).get('description') or p['exceptionDetails'].get('text')}")
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            found.append(f"log error: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif method == "Network.requestWillBeSent" and p["request"]["url"] != url:
            found.append(f"request to {p['request']['url']}")
    return found


def run_checks(browser, url, data, query, screenshot):
    target = browser.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
    browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                   session=False)["sessionId"]
    for domain in ("Runtime", "Log", "Page", "Network"):
        browser.send(f"{domain}.enable")
    browser.send("Page.navigate", {"url": url})
    browser.wait_event("Page.loadEventFired")
    try:
        drive(browser, data, query)
        browser.evaluate("0")  # let pending events arrive before they are checked
    except Failure as failure:  # say what the page reported too: it often explains the difference
        found = problems_in(browser.events, url)
        raise Failure(str(failure) + "".join("\n  the page reported: " + f for f in found)) from None
    if screenshot:
        save_screenshot(browser, screenshot)
    found = problems_in(browser.events, url)
    if found:
        raise Failure("the page reported problems:\n  " + "\n  ".join(found))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--profile", required=True, help="an empty directory for Chromium's profile")
    parser.add_argument("--query", type=int, help="query position to hover (default: T // 2 of the last snapshot)")
    parser.add_argument("--screenshot", help="also save a PNG of the head view as left by the checks")
    args = parser.parse_args()
    url = Path(args.report).resolve().as_uri()
    data = embedded_data(args.report)
    if not data["snapshots"]:
        raise Failure("the report has no attention snapshot, so no head view")
    query = args.query if args.query is not None else data["snapshots"][-1]["shape"][2] // 2
    with open(Path(args.profile) / "chromium.log", "wb") as log:
        browser = Browser(args.chromium, args.profile, log)
        try:
            run_checks(browser, url, data, query, args.screenshot)
        finally:
            browser.close()
    print("check_report_interactive: OK")


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        sys.exit(f"check_report_interactive: {failure}")
