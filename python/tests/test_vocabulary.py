"""tf.Vocabulary, the library's data::Vocabulary bound (python/src/bind_vocab.cpp): the text of docs/formats.md
written and read back for any valid token list (Hypothesis), the awkward characters of that text by name, and every
invalid token list, layout or text refused with a ValueError that names the argument (and the line of a text)."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tinyformer as tf

# Characters the text escapes (backslash, newline, carriage return) or that other line splitters cut (U+2028, U+0085,
# vertical tab, form feed, U+001C), and characters beyond the BMP (four UTF-8 bytes).
AWKWARD = ["\\", "\n", "\r", "\u2028", "\x85", "\x0b", "\x0c", "\x1c", "\U0001F600", "\U00010348", "é", " ", "\t"]
WHITESPACE = " \t\n\r\v\f"  # C's isspace: what a spaced token may not contain
SETTINGS = settings(max_examples=200, deadline=None, derandomize=True)

characters = st.characters(blacklist_categories=("Cs",)) | st.sampled_from(AWKWARD)  # any code point but surrogates
joined_tokens = st.lists(characters, unique=True, max_size=40)
words = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=WHITESPACE) |
                st.sampled_from(["\\", "\u2028", "\x85", "\x1c", "\U0001F600"]), min_size=1, max_size=6)
spaced_tokens = st.lists(words, unique=True, max_size=30)


def escaped(token):
    """A token as docs/formats.md says a line holds it."""
    return token.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


@SETTINGS
@given(st.one_of(st.tuples(joined_tokens, st.just("joined")), st.tuples(spaced_tokens, st.just("spaced"))))
def test_any_valid_token_list_round_trips_through_its_text(case):
    tokens, layout = case
    vocab = tf.Vocabulary(tokens, layout)
    text = vocab.to_str()
    assert text == f"tinyformer-vocabulary 1 {layout} {len(tokens)}\n" + "".join(escaped(t) + "\n" for t in tokens)
    back = tf.Vocabulary.from_str(text)
    assert back == vocab and back.tokens == tokens and back.layout == layout and len(back) == len(tokens)
    assert pickle.loads(pickle.dumps(vocab)) == vocab
    ids = list(range(len(tokens)))[::-1]
    sequence = vocab.decode(ids)
    assert sequence == ("" if layout == "joined" else " ").join(tokens[i] for i in ids)
    assert vocab.encode(sequence) == ids
    assert [vocab.token_to_id(t) for t in tokens] == list(range(len(tokens)))
    assert [vocab.id_to_token(i) for i in range(len(tokens))] == tokens


def invalid_token_lists():
    """(tokens, layout, what the message says) for token lists the library refuses."""
    one_char = st.lists(characters, min_size=1, max_size=5, unique=True)
    return st.one_of(
        st.tuples(one_char.map(lambda t: t + [t[0]]), st.just("joined"), st.just("appears twice")),
        st.tuples(one_char.map(lambda t: t + [""]), st.just("joined"), st.just("is empty")),
        st.tuples(st.tuples(one_char, st.text(characters, min_size=2, max_size=4)).map(lambda p: p[0] + [p[1]]),
                  st.just("joined"), st.just("exactly one UTF-8 character")),
        st.tuples(st.tuples(st.lists(words, min_size=1, max_size=4, unique=True), words, st.sampled_from(WHITESPACE))
                  .map(lambda p: p[0] + [p[1] + p[2]]), st.just("spaced"), st.just("contains whitespace")),
        st.tuples(st.lists(words, min_size=1, max_size=4, unique=True).map(lambda t: t + [t[-1]]), st.just("spaced"),
                  st.just("appears twice")))


@SETTINGS
@given(invalid_token_lists())
def test_an_invalid_token_list_raises_a_value_error_naming_tokens(case):
    tokens, layout, why = case
    with pytest.raises(ValueError) as e:
        tf.Vocabulary(tokens, layout)
    message = str(e.value)
    assert message.startswith("Vocabulary(): argument 'tokens': ") and why in message and "\n" not in message


def test_the_awkward_characters_are_escaped_or_written_as_they_are():
    vocab = tf.Vocabulary(["a", "\\", "\n", "\r", "\u2028", "\x85", "\U0001F600"])
    assert vocab.to_str() == "tinyformer-vocabulary 1 joined 7\na\n\\\\\n\\n\n\\r\n\u2028\n\x85\n\U0001F600\n"
    assert vocab.encode("\U0001F600\n\u2028a") == [6, 2, 4, 0]
    spaced = tf.Vocabulary(["x\\y", "\u2028", "17"], "spaced")
    assert spaced.to_str() == "tinyformer-vocabulary 1 spaced 3\nx\\\\y\n\u2028\n17\n"
    assert spaced.encode("17  x\\y\n17") == [2, 0, 2] and spaced.decode(np.array([1, 2])) == "\u2028 17"


@pytest.mark.parametrize("text, line", [
    ("tinyformer-vocabulary 1 joined 2\na\n\\x\n", "line 3 has an invalid escape at column 1"),
    ("tinyformer-vocabulary 1 joined 2\na\nb", "line 3 does not end with a newline"),
    ("tinyformer-vocabulary 1 joined 3\na\nb\n", "announces 3 tokens, found 2"),
    ("tinyformer-vocabulary 2 joined 1\na\n", "line 1 is"),
    ("tinyformer-vocabulary 1 columns 1\na\n", "line 1 is"),
    ("tinyformer-vocabulary 1 joined 2\na\nab\n", "token 1 ('ab') must be exactly one UTF-8 character"),
    ("tinyformer-vocabulary 1 spaced 2\na\na\n", "token 'a' appears twice"),
    ("tinyformer-vocabulary 1 sentencepiece 3 0000000000000000\nQUJD\n", "line 2: the model's checksum"),
    ("", "empty text"),
])
def test_malformed_text_raises_a_value_error_naming_the_line(text, line):
    with pytest.raises(ValueError) as e:
        tf.Vocabulary.from_str(text)
    assert str(e.value).startswith("Vocabulary.from_str(): argument 'text': ") and line in str(e.value)


def test_wrong_types_and_unknown_layouts_and_lookups_name_their_argument():
    cases = [(TypeError, lambda: tf.Vocabulary("abc"), "argument 'tokens' must be a list of string"),
             (TypeError, lambda: tf.Vocabulary([1, 2]), "argument 'tokens' must be a list of string"),
             (TypeError, lambda: tf.Vocabulary(["a"], 3), "argument 'layout' must be a string"),
             (TypeError, lambda: tf.Vocabulary.from_str(3), "argument 'text' must be a string"),
             (ValueError, lambda: tf.Vocabulary(["a"], "columns"), "argument 'layout' must be 'joined' or 'spaced'"),
             (ValueError, lambda: tf.Vocabulary(["a"], "sentencepiece"), "Vocabulary.from_str"),
             (ValueError, lambda: tf.Vocabulary(["a"]).encode("ab"), "'b' at position 1"),
             (ValueError, lambda: tf.Vocabulary(["a"]).decode([1]), "argument 'ids': id 1 is not in [0, 1)"),
             (ValueError, lambda: tf.Vocabulary(["a"]).id_to_token(2**40), "argument 'id': id 1099511627776"),
             (ValueError, lambda: tf.Vocabulary(["a"]).token_to_id("b"), "argument 'token': token 'b' is not")]
    for kind, call, says in cases:
        with pytest.raises(kind) as e:
            call()
        assert says in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert "a" in tf.Vocabulary(["a"]) and 1 not in tf.Vocabulary(["a"]) and tf.Vocabulary(["a"]) != ["a"]
