"""Attention maps in notebooks (tinyformer.AttentionMap, tf.report): what _repr_html_ gives is one self-contained
iframe holding the library's report page; save_png and save_html write the CLI's files; and in headless Chromium,
offline, a page holding several views (a short map, one of 130 tokens and a run's report) renders each of them, the
head view of each answers the mouse as the report's data says, and a hover in one view changes nothing in the
others. The Chromium part drives the browser over the DevTools pipe as scripts/check_report_interactive.py does
(its Browser and expected_view are reused). About 10 s."""
import base64
import importlib.util
import json
import os
import re
import shutil
import struct
import zlib

import numpy as np
import pytest

import tinyformer as tf

SRC = os.environ.get("TINYFORMER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CHROMIUM = shutil.which(os.environ.get("CHROMIUM", "chromium"))


def _softmax_rows(rng, L, H, T):
    """Causal attention weights [L,H,T,T]: each row a softmax over its visible keys."""
    scores = rng.standard_normal((L, H, T, T)) * 2
    scores[..., np.triu(np.ones((T, T), bool), 1)] = -np.inf
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def _png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_an_attention_map_is_the_weights_and_tokens_pair_and_renders_the_librarys_report(rng, tmp_path):
    w = _softmax_rows(rng, 2, 3, 5)
    m = tf.AttentionMap(w, list("abcde"), ids=[1, 2, 3, 1, 2], title="five tokens")
    weights, tokens = m  # the pair model.attention always returned
    assert weights is m.weights and tokens == list("abcde") and m.shape == (2, 3, 5, 5)
    assert len(m.roles) == 2 and len(m.roles[0]) == 3  # heads --json's verdicts from the ids
    assert tf.AttentionMap(w[0]).shape == (1, 3, 5, 5) and tf.AttentionMap(w[0, 0]).tokens == list("01234")
    with pytest.raises(ValueError, match=r"\[L,H,T,T\]"):
        tf.AttentionMap(np.ones((2, 3, 4, 5)))
    with pytest.raises(ValueError, match="3 tokens for weights over T = 5"):
        tf.AttentionMap(w, ["a", "b", "c"])

    inline = m._repr_html_()
    assert inline.startswith("<iframe") and inline.endswith("</iframe>") and inline.count("<iframe") == 1
    for remote in ("http://", "https://", "require", "<script src", "<link"):
        assert remote not in inline, remote
    page = m.html()
    assert page.startswith("<!DOCTYPE html>") and 'id="head-view"' in page and 'id="head-scores"' in page
    assert 'srcdoc="' + page.replace("&", "&amp;").replace('"', "&quot;")[:200] in inline.replace("&#39;", "'") or \
        "&lt;!DOCTYPE html&gt;" in inline

    m.save_html(tmp_path / "map.html")
    assert (tmp_path / "map.html").read_text(encoding="utf-8") == page
    m.save_png(tmp_path / "map.png")
    png = (tmp_path / "map.png").read_bytes()
    assert png == m.png() and _png_size(png)[0] > 100


@pytest.fixture(scope="module")
def reverse_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("views") / "reverse"
    tf.train(os.path.join(SRC, "configs", "reverse.yaml"), out=str(out),
             overrides={"training.steps": 20, "training.batch_size": 8, "schedule.warmup_steps": 2,
                        "logging.attention_interval": 10, "training.eval_interval": 10, "logging.log_interval": 10})
    return out


def test_a_run_and_a_loaded_model_give_views_with_the_runs_files(reverse_run, tmp_path):
    r = tf.report(reverse_run)
    assert r.steps[-1] == 20 and 0 in r.steps  # logging.attention_schedule: log (step 0 first)
    assert r.html() == (reverse_run / "report.html").read_text(encoding="utf-8")  # the page train wrote
    last = r.attention_map()
    np.testing.assert_array_equal(last.weights, np.load(reverse_run / "attention" / "step_000020.npy"))
    side = json.loads((reverse_run / "attention" / "step_000020.json").read_text())
    assert last.tokens == side["tokens"] and last.expected == side["expected"] and last.scores == side["attention_score"]
    r.save_png(tmp_path / "last.png")
    assert (tmp_path / "last.png").read_bytes() == (reverse_run / "attention" / "step_000020.png").read_bytes()
    model = tf.load(reverse_run / "checkpoint.safetensors")
    amap = model.attention("3141|")
    assert isinstance(amap, tf.AttentionMap) and amap.roles and "step 20" in amap.title
    with pytest.raises(OSError, match="metrics.jsonl: no such file"):
        tf.report(tmp_path)


def _load_checker():
    spec = importlib.util.spec_from_file_location("check_report_interactive",
                                                  os.path.join(SRC, "scripts", "check_report_interactive.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


READ_FRAME = """((i) => {
  const frame = document.querySelectorAll("iframe")[i], doc = frame.contentDocument;
  const all = (s) => Array.from(doc.querySelectorAll(s));
  const root = doc.getElementById("head-view");
  const rows = all(".hv-query").map(d => d.getBoundingClientRect());
  return {
    query: root ? Number(root.dataset.query) : null, layer: root ? Number(root.dataset.layer) : null,
    maps: all("#attention canvas.map").length, queries: rows.length,
    lines: all("#hv-lines line.hv-line").map(l => [Number(l.dataset.head), Number(l.dataset.key)]),
    reads: all("#hv-readout .hv-read").map(d => [Number(d.dataset.head), Number(d.dataset.key),
                                                 Number(d.dataset.weight)]),
    keys: all(".hv-key").map(d => d.textContent),
    rowHeights: rows.map(r => r.height), rowTops: rows.map(r => r.top),
    frameHeight: frame.getBoundingClientRect().height, pageHeight: doc.body.scrollHeight,
    data: doc.getElementById("tf-data").textContent, scoreCells: all("#head-scores td").length,
  };
})"""

POINT_IN_FRAME = """((i, selector) => {
  const frame = document.querySelectorAll("iframe")[i], el = frame.contentDocument.querySelector(selector);
  if (!el) return null;
  el.scrollIntoView({block: "center"});
  const f = frame.getBoundingClientRect(), r = el.getBoundingClientRect();
  return [f.left + r.left + r.width / 2, f.top + r.top + r.height / 2];
})"""


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (scripts/install_deps.sh test)")
def test_several_views_on_one_page_render_and_answer_the_mouse_offline_in_chromium(rng, reverse_run, tmp_path):
    checker = _load_checker()
    short = tf.AttentionMap(_softmax_rows(rng, 2, 2, 6), list("The fox"[:6]), title="short")
    long_tokens = [f"w{i}" for i in range(130)]
    long = tf.AttentionMap(_softmax_rows(rng, 1, 2, 130), long_tokens, title="130 tokens")
    views = [short, long, tf.report(reverse_run)]
    # A notebook page: the cells' outputs one after the other, with ids of its own that a view must not touch.
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>notebook</title></head><body>"
            "<div id='attention'>the notebook's own #attention</div><div id='head-view'>and #head-view</div>"
            + "".join(f"<div class='output'>{v._repr_html_()}</div>" for v in views) + "</body></html>")
    path = tmp_path / "notebook.html"
    path.write_text(page, encoding="utf-8")
    url = path.resolve().as_uri()
    profile = tmp_path / "profile"
    profile.mkdir()
    with open(profile / "chromium.log", "wb") as log:
        browser = checker.Browser(CHROMIUM, str(profile), log)
        try:
            target = browser.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
            browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                           session=False)["sessionId"]
            for domain in ("Runtime", "Log", "Page", "Network"):
                browser.send(f"{domain}.enable")
            browser.send("Page.navigate", {"url": url})
            browser.wait_event("Page.loadEventFired")
            _check_views(browser, checker, views)
            browser.evaluate("0")
            problems = [p for p in checker.problems_in(browser.events, url) if "about:srcdoc" not in p]
            assert not problems, problems
        finally:
            browser.close()


def _read(browser, i):
    return browser.evaluate(f"{READ_FRAME}({i})")


def _check_views(browser, checker, views):
    states = [_read(browser, i) for i in range(len(views))]
    assert browser.evaluate("document.getElementById('attention').textContent") == "the notebook's own #attention"
    for i, (view, state) in enumerate(zip(views, states)):
        data = json.loads(state["data"])
        snap = data["snapshots"][-1]
        L, H, T = snap["shape"]
        assert state["maps"] == L * H and state["queries"] == T, (i, state["maps"], state["queries"])
        assert state["query"] == -1  # nothing hovered yet
        assert state["frameHeight"] >= state["pageHeight"], (i, state["frameHeight"], state["pageHeight"])  # sized
        assert min(state["rowHeights"]) >= 16  # one readable row per token, none overlapping
        assert all(b - a >= 16 for a, b in zip(state["rowTops"], state["rowTops"][1:]))
        labels = [checker.shown(t) for t in snap["tokens"]] if snap["tokens"] else [str(t) for t in range(T)]
        assert state["keys"] == labels
    assert states[2]["scoreCells"] > 0  # the run's score table
    # Hover a query in each view in turn; view 0's query is also clicked (pinned). The hovered view shows its query as
    # its data says; view 0 keeps its pinned query; the others show none: the mouse in one view reaches no other.
    pinned = None
    for i in range(len(views)):
        snap = json.loads(states[i]["data"])["snapshots"][-1]
        query = snap["shape"][2] - 3
        selector = json.dumps(f'.hv-query[data-index="{query}"]')
        x, y = browser.evaluate(f"{POINT_IN_FRAME}({i}, {selector})")
        browser.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        if i == 0:
            for kind in ("mousePressed", "mouseReleased"):
                browser.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                                          "clickCount": 1})
        now = [_read(browser, j) for j in range(len(views))]
        want = checker.expected_view(snap, 0, query, [True] * snap["shape"][1])
        assert now[i]["query"] == query and {tuple(l) for l in now[i]["lines"]} == want["lines"], i
        assert [tuple(r) for r in now[i]["reads"]] == want["reads"], i
        if i == 0:
            pinned = now[0]
        for j in range(len(views)):
            if j == i:
                continue
            if j == 0:
                assert now[0]["query"] == pinned["query"] and now[0]["lines"] == pinned["lines"], i
            else:
                assert now[j]["query"] == -1 and not now[j]["lines"], (i, j)
