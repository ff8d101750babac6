"""Attention maps in notebooks: the library's HTML report (the bertviz-style head view, the heatmaps, the score
table) and its PNG grid, for a model's attention, a cache's patterns or a run dir.

    m = model.attention("31415926|62")       # an AttentionMap: in a notebook cell it shows inline
    m.save_png("attention.png"); m.save_html("attention.html")
    weights, tokens = m                      # still the (weights [L,H,T,T], tokens) pair it always was
    tf.report("runs/reverse")                # a run's report.html, inline

Inline, each view is one <iframe srcdoc> holding the whole page (io::html_iframe): nothing is fetched (no CDN, no
require.js), and its ids, styles and script stay inside its frame, so any number of views share a notebook. The
page is the one `tinyformer attention` and `tinyformer train` write (io::render_html_report), so long inputs get
the report's layout: thinned labels on the maps, one row per token in the head view.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _core

__all__ = ["AttentionMap", "RunReport", "report"]

PathLike = Union[str, "os.PathLike[str]"]


class _HtmlView:
    """An object that is a report page: html(), inline in a notebook, save_html()."""

    def html(self) -> str:
        """The whole page: self-contained HTML (inline style and script, no network)."""
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return _core._html_iframe(self.html())

    def save_html(self, path: PathLike) -> None:
        """Writes html() to `path` (a page that opens offline in any browser)."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.html())


class AttentionMap(tuple, _HtmlView):
    """Attention weights [L,H,T,T] (layers, heads, queries, keys) with a label per token: a (weights, tokens) pair
    that shows the report's head view, heatmaps and score table inline in a notebook, and saves them as PNG or
    HTML. [H,T,T] (one layer) and [T,T] (one head) are taken too; a tensor or anything np.asarray takes. Given the
    token ids, the score table names what each head does (previous token, induction, ...: analysis::score_heads);
    expected (one key per query, -1 for none) outlines the keys a task expects.

        m = tf.AttentionMap(cache["pattern", 0][0], model.to_str_tokens(prompt))
        m                                  # in a notebook: the head view
        m.save_png("layer0.png")
    """

    def __new__(cls, weights: Any, tokens: Optional[Sequence[Any]] = None, *, ids: Optional[Any] = None,
                title: str = "attention", expected: Optional[Sequence[int]] = None,
                scores: Optional[Sequence[Sequence[float]]] = None, roles: Optional[Sequence[Sequence[str]]] = None,
                expected_pattern: str = "", step: int = 0) -> "AttentionMap":
        w = np.asarray(weights).astype(np.float32)  # a tensor converts through __array__
        if w.ndim in (2, 3):
            w = w.reshape((1,) * (4 - w.ndim) + w.shape)
        if w.ndim != 4 or w.shape[-1] != w.shape[-2] or 0 in w.shape:
            raise ValueError(f"AttentionMap: weights of shape {list(np.shape(weights))}; valid are [L,H,T,T], "
                             f"[H,T,T] or [T,T] with T >= 1")
        T = w.shape[-1]
        labels = [str(i) for i in range(T)] if tokens is None else [str(t) for t in tokens]
        if len(labels) != T:
            raise ValueError(f"AttentionMap: {len(labels)} tokens for weights over T = {T} positions")
        self = super().__new__(cls, (w, labels))
        self.title = title
        self.expected = [int(k) for k in expected] if expected is not None else []
        self.scores = [list(map(float, row)) for row in scores] if scores is not None else []
        self.expected_pattern = expected_pattern
        self.step = int(step)
        self.ids = None if ids is None else np.asarray(ids).reshape(-1)
        self.roles = [list(row) for row in roles] if roles is not None else self._roles()
        return self

    def _roles(self) -> List[List[str]]:
        """Each head's verdict from its pattern scores on these ids (heads --json's), or none without ids."""
        if self.ids is None or len(self.ids) != self.weights.shape[-1] or len(self.ids) < 2:
            return []
        try:
            return json.loads(_core._score_heads(self.weights, self.ids, self.expected))["verdicts"]
        except ValueError:  # weights that are no softmax (a NaN row), or no pattern to score
            return []

    @property
    def weights(self) -> np.ndarray:
        """[L,H,T,T] float32."""
        return self[0]

    @property
    def tokens(self) -> List[str]:
        """One label per position."""
        return self[1]

    @property
    def shape(self) -> tuple:
        """(L, H, T, T)."""
        return self.weights.shape

    def html(self) -> str:
        """The report page of this map (io::render_html_report): score table, heatmaps, head view."""
        return _core._attention_report_html(self.weights, self.tokens, self.title, self.expected, self.scores,
                                            self.roles, self.expected_pattern, self.step)

    def png(self) -> bytes:
        """The heatmap grid as PNG bytes (as `tinyformer attention` writes attention.png)."""
        return _core._attention_png(self.weights, self.tokens, self.title, self.expected)

    def save_png(self, path: PathLike) -> None:
        """Writes png() to `path`."""
        data = self.png()
        with open(os.fspath(path), "wb") as f:
            f.write(data)

    def __getnewargs_ex__(self) -> Any:
        return (self.weights, self.tokens), {"title": self.title, "expected": self.expected, "scores": self.scores,
                                             "roles": self.roles, "expected_pattern": self.expected_pattern,
                                             "step": self.step}

    def __repr__(self) -> str:
        L, H, T, _ = self.shape
        shown = self.tokens if T <= 12 else self.tokens[:6] + ["..."] + self.tokens[-5:]
        return f"AttentionMap([L,H,T,T] = [{L}, {H}, {T}, {T}], tokens={shown})"


class RunReport(_HtmlView):
    """A run dir's report (what `tinyformer train` writes to report.html: curves, heads, maps over the steps, head
    view), read again from the run's files; inline in a notebook, saved as HTML, and its attention snapshots as
    AttentionMaps: those the page holds, at most 2^24 weights together (evenly spaced, the last always; `note` says
    what was left out; every snapshot is in the run's attention/step_NNNNNN.npy).

        r = tf.report("runs/reverse")
        r                                   # in a notebook: the whole report
        r.attention_map().save_png("last.png")
    """

    def __init__(self, out: PathLike) -> None:
        self.out = os.fspath(out)
        data: Dict[str, Any] = _core._run_report(self.out)
        self._page: str = data["html"]
        self.title: str = data["title"]
        self.expected_pattern: str = data["expected_pattern"]
        self.roles: List[List[str]] = data["roles"]
        self.snapshots: List[Dict[str, Any]] = data["snapshots"]
        self.note: str = data["note"]

    def html(self) -> str:
        return self._page

    @property
    def steps(self) -> List[int]:
        """The steps of the attention snapshots, in order."""
        return [s["step"] for s in self.snapshots]

    def attention_map(self, index: int = -1) -> AttentionMap:
        """Snapshot `index` (default the last) as an AttentionMap, with the run's expected keys and scores."""
        if not self.snapshots:
            raise ValueError(f"{self.out}: the run has no attention snapshot (logging.attention_interval: 0?)")
        s = self.snapshots[index]
        # the title the trainer gives its snapshots (train::write_attention_snapshot), so save_png writes their PNG
        return AttentionMap(s["weights"], s["tokens"] or None, title=f"attention at step {s['step']}",
                            expected=s["expected"] or None, scores=s["scores"] or None, roles=self.roles or None,
                            expected_pattern=self.expected_pattern, step=s["step"])

    def save_png(self, path: PathLike, index: int = -1) -> None:
        """Writes the heatmap grid of snapshot `index` (default the last) to `path`."""
        self.attention_map(index).save_png(path)

    def __repr__(self) -> str:
        return f"RunReport({self.out!r}, {len(self.snapshots)} attention snapshots)"


def report(out: PathLike) -> RunReport:
    """The report of the run dir `out` (tf.train's out, `tinyformer train --out`): see RunReport."""
    return RunReport(out)
