"""The joined and spaced vocabulary texts (a checkpoint's "tinyformer.vocab" metadata) in Python, for the nanoGPT
tools: meta.pkl's itos and stoi map to and from a joined vocabulary. The grammar is in docs/formats.md; the library
(data/vocabulary.hpp) reads and writes every layout, and a test compares the two on every checkpoint it makes
(tests/nanogpt/check_formats.py). A SentencePiece vocabulary (bpe, unigram) is the library's alone: its pieces come
from the Python module, tf.load(checkpoint).vocab.

    layout_of(text) -> layout                      "joined", "spaced" or "sentencepiece", from the header line
    parse_vocabulary(text) -> (layout, tokens)     joined or spaced; tokens[i] = the token of id i
    serialize_vocabulary(tokens, layout) -> text   the exact text tinyformer writes

    tinyformer-vocabulary 1 joined 3      header: magic, version 1, layout, number of tokens
    a                                      then one line per token, id 0 first, each ending with "\\n";
    \\n                                     a backslash is written "\\\\", a newline "\\n", a carriage return "\\r"
    \\\\                                     (two characters each); nothing else is escaped

Lines end at "\\n" only: a token such as U+2028 or U+0085 is an ordinary character here (str.splitlines would
cut it). Every function raises ValueError naming the line on malformed input.
"""

import re

MAGIC = "tinyformer-vocabulary"
LAYOUTS = ("joined", "spaced")
WHITESPACE = " \t\n\r\v\f"  # C's isspace in the "C" locale: what a spaced token may not contain


def _unescape(line, number):
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = line[i + 1] if i + 1 < len(line) else ""
        if nxt not in ("\\", "n", "r"):
            raise ValueError(f"vocabulary: line {number} has an invalid escape at column {i + 1} "
                             "(valid: \\\\, \\n, \\r)")
        out.append({"\\": "\\", "n": "\n", "r": "\r"}[nxt])
        i += 2
    return "".join(out)


def _escape(token):
    return token.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def check_tokens(tokens, layout):
    """The rules of tinyformer's Vocabulary: non-empty, distinct, joined = one character each, spaced = no
    whitespace."""
    if layout not in LAYOUTS:
        raise ValueError(f"vocabulary: layout must be joined or spaced, got {layout!r}")
    seen = {}
    for i, t in enumerate(tokens):
        if not isinstance(t, str) or not t:
            raise ValueError(f"vocabulary: token {i} is empty or not a string ({t!r})")
        if layout == "joined" and len(t) != 1:
            raise ValueError(f"vocabulary: token {i} ({t!r}) must be exactly one character in a joined vocabulary")
        if layout == "spaced" and any(c in WHITESPACE for c in t):
            raise ValueError(f"vocabulary: token {i} ({t!r}) contains whitespace, not allowed in a spaced vocabulary")
        if t in seen:
            raise ValueError(f"vocabulary: token {t!r} appears twice (ids {seen[t]} and {i})")
        seen[t] = i


def layout_of(text):
    """The layout named by the header line: joined, spaced or sentencepiece (not checked further)."""
    fields = text.split("\n", 1)[0].split()
    if len(fields) < 3 or fields[0] != MAGIC:
        raise ValueError(f"vocabulary: line 1 does not start with '{MAGIC} 1 <layout>'")
    return fields[2]


def parse_vocabulary(text):
    if not text:
        raise ValueError("vocabulary: empty text, expected a header line")
    if text.split("\n", 1)[0].split()[2:3] == ["sentencepiece"]:
        raise ValueError("vocabulary: a sentencepiece vocabulary: read its pieces with tinyformer's Python module, "
                         "tf.load(checkpoint).vocab")
    if not text.endswith("\n"):
        raise ValueError(f"vocabulary: line {text.count(chr(10)) + 1} does not end with a newline")
    lines = text[:-1].split("\n")
    header = lines[0].split()  # istream >> in C++: any run of whitespace separates the fields
    if (len(header) != 4 or header[0] != MAGIC or header[1] != "1" or header[2] not in LAYOUTS
            or not re.fullmatch("[0-9]+", header[3])):
        raise ValueError(f"vocabulary: line 1 is {lines[0]!r}, expected '{MAGIC} 1 <joined|spaced> <count>'")
    layout, count = header[2], int(header[3])
    if len(lines) - 1 != count:
        raise ValueError(f"vocabulary: header announces {count} tokens, found {len(lines) - 1} lines")
    tokens = [_unescape(line, n) for n, line in enumerate(lines[1:], start=2)]
    check_tokens(tokens, layout)
    return layout, tokens


def serialize_vocabulary(tokens, layout="joined"):
    check_tokens(tokens, layout)
    return f"{MAGIC} 1 {layout} {len(tokens)}\n" + "".join(_escape(t) + "\n" for t in tokens)
