"""tinyformer's vocabulary text (a checkpoint's "tinyformer.vocab" metadata), read and written as
lib/tinyformer/data/vocabulary.cpp does; the grammar is in docs/formats.md.

    parse_vocabulary(text) -> (layout, tokens)     layout "joined", "spaced" or "sentencepiece"; tokens[i] = the
                                                   token of id i (sentencepiece: the model's piece of id i)
    serialize_vocabulary(tokens, layout) -> text   the exact text tinyformer writes (joined, spaced)
    sentencepiece_model(text) -> bytes             sentencepiece: the serialized model, checked against its checksum
                                                   (sentencepiece.SentencePieceProcessor(model_proto=...) loads it)
    serialize_sentencepiece(model) -> text         sentencepiece: the exact text tinyformer writes for these bytes

    tinyformer-vocabulary 1 joined 3      header: magic, version 1, layout, number of tokens
    a                                      then one line per token, id 0 first, each ending with "\\n";
    \\n                                     a backslash is written "\\\\", a newline "\\n", a carriage return "\\r"
    \\\\                                     (two characters each); nothing else is escaped

    tinyformer-vocabulary 1 sentencepiece 512 0123456789abcdef   a SentencePiece model (data.tokenizer bpe or
    CgoKBTx1bms+...==                                              unigram): header with the FNV-1a 64 of the
                                                                   model's bytes, then the model in base64

Lines end at "\\n" only: a token such as U+2028 or U+0085 is an ordinary character here (str.splitlines would
cut it). Every function raises ValueError naming the line on malformed input. The sentencepiece layout needs the
`sentencepiece` module (Debian's python3-sentencepiece), imported only for it.
"""

import base64
import binascii
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


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def _load_sentencepiece(model, count=None):
    """The pieces of a serialized SentencePiece model, checked as lib/tinyformer/data/vocabulary.cpp does."""
    import sentencepiece  # noqa: E402 (only the sentencepiece layout needs it)
    sp = sentencepiece.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(model)
    except RuntimeError as e:
        raise ValueError(f"vocabulary: line 2: the SentencePiece model ({len(model)} bytes) cannot be loaded: "
                         f"{str(e).strip()}") from None
    pieces = [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]
    if (len(pieces) < 259 or not sp.IsUnknown(0) or pieces[1:3] != ["<s>", "</s>"] or pieces[3] != "<0x00>"
            or pieces[258] != "<0xFF>"):
        raise ValueError(f"vocabulary: line 2: the SentencePiece model ({len(pieces)} pieces) does not have <unk>, "
                         "<s>, </s> at ids 0, 1, 2 and the byte pieces <0x00>..<0xFF> at ids 3..258")
    if len(set(pieces)) != len(pieces):
        raise ValueError("vocabulary: line 2: the SentencePiece model has a piece twice")
    if count is not None and len(pieces) != count:
        raise ValueError(f"vocabulary: header announces {count} tokens, the SentencePiece model has {len(pieces)}")
    return pieces


def _sentencepiece_parts(text):
    if not text.endswith("\n"):
        raise ValueError(f"vocabulary: line {text.count(chr(10)) + 1} does not end with a newline")
    lines = text[:-1].split("\n")
    header = lines[0].split()
    if (len(header) != 5 or header[:3] != [MAGIC, "1", "sentencepiece"] or not re.fullmatch("[0-9]+", header[3])
            or not re.fullmatch("[0-9a-f]{16}", header[4])):
        raise ValueError(f"vocabulary: line 1 is {lines[0]!r}, expected '{MAGIC} 1 sentencepiece <count> "
                         "<checksum: 16 hex digits>'")
    if len(lines) != 2:
        raise ValueError(f"vocabulary: a sentencepiece vocabulary is 2 lines (header, model in base64), "
                         f"found {len(lines)}")
    try:
        model = base64.b64decode(lines[1], validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"vocabulary: line 2 is not base64 ({e})") from None
    if f"{fnv1a64(model):016x}" != header[4]:
        raise ValueError(f"vocabulary: line 2: the model's checksum is {fnv1a64(model):016x}, line 1 says "
                         f"{header[4]!r}: the model is corrupt")
    return int(header[3]), model


def sentencepiece_model(text):
    """The serialized SentencePiece model of a sentencepiece vocabulary text (its bytes, checksum checked)."""
    count, model = _sentencepiece_parts(text)
    _load_sentencepiece(model, count)
    return model


def serialize_sentencepiece(model):
    """The vocabulary text tinyformer writes for a serialized SentencePiece model (bytes)."""
    model = bytes(model)
    count = len(_load_sentencepiece(model))
    return f"{MAGIC} 1 sentencepiece {count} {fnv1a64(model):016x}\n" + base64.b64encode(model).decode("ascii") + "\n"


def parse_vocabulary(text):
    if not text:
        raise ValueError("vocabulary: empty text, expected a header line")
    if text.split("\n", 1)[0].split()[2:3] == ["sentencepiece"]:
        count, model = _sentencepiece_parts(text)
        return "sentencepiece", _load_sentencepiece(model, count)
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
