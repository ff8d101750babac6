// tf.Vocabulary: the library's token table (data::Vocabulary, data/vocabulary.hpp), which a checkpoint stores as
// "tinyformer.vocab" (docs/formats.md). Its methods have Hugging Face tokenizers' names: Vocabulary.from_str(text)
// and to_str() are the library's deserialize and serialize, token_to_id and id_to_token its id and token, encode and
// decode its own. Nothing of the text format is written here: each call is the library's, and its errors are the
// library's messages with the call and argument in front (ValueError through module.cpp's boundary).
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/data/vocabulary.hpp"

namespace tf::python {

namespace {

using data::Vocabulary;

// Runs f; a std::invalid_argument it throws comes out as "<call>: argument '<argument>': <why>", without the library's
// own "Vocabulary: " or "Vocabulary::deserialize: " in front of the why.
template <class F>
auto vocabulary_call(const char* call, const char* argument, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    std::string why = e.what();
    for (const std::string own : {"Vocabulary::deserialize: ", "Vocabulary: "})
      if (why.compare(0, own.size(), own) == 0) why.erase(0, own.size());
    throw std::invalid_argument(fmt::format("{}: argument '{}': {}", call, argument, why));
  }
}

// "joined" or "spaced" (the library's words for them) -> the layout; a ValueError naming both otherwise.
Vocabulary::Layout layout_named(const std::string& name) {
  for (const auto layout : {Vocabulary::Layout::joined, Vocabulary::Layout::spaced})
    if (name == data::layout_name(layout)) return layout;
  const bool sentencepiece = name == data::layout_name(Vocabulary::Layout::sentencepiece);
  throw std::invalid_argument(
      fmt::format("Vocabulary(): argument 'layout' must be 'joined' or 'spaced', got '{}'{}", data::display_token(name),
                  sentencepiece ? " (a sentencepiece vocabulary is read from its text: Vocabulary.from_str)" : ""));
}

// The token of `id`, an int of up to 64 bits: one outside [0, V) is refused as the library refuses it.
const std::string& token_of(const Vocabulary& v, long long id) {
  if (id < 0 || id > std::numeric_limits<Index>::max())
    throw std::invalid_argument(
        fmt::format("Vocabulary.id_to_token(): argument 'id': id {} is not in [0, {})", id, v.size()));
  return vocabulary_call("Vocabulary.id_to_token()", "id",
                         [&]() -> const std::string& { return v.token(static_cast<Index>(id)); });
}

void bind_vocabulary_text(py::class_<Vocabulary>& vocab) {
  vocab
      .def(py::init([](std::vector<std::string> tokens, const std::string& layout) {
             const Vocabulary::Layout l = layout_named(layout);
             return vocabulary_call("Vocabulary()", "tokens", [&] { return Vocabulary(std::move(tokens), l); });
           }),
           py::arg("tokens"), py::arg("layout") = "joined",
           "A vocabulary whose token i is tokens[i]: layout 'joined' (each token one character; text is the tokens "
           "one after another) or 'spaced' (tokens are words without whitespace; text is words separated by "
           "whitespace). Tokens are distinct and non-empty; a ValueError names the first that is not")
      .def_static(
          "from_str",
          [](const std::string& text) {
            return vocabulary_call("Vocabulary.from_str()", "text", [&] { return Vocabulary::deserialize(text); });
          },
          py::arg("text"),
          "The vocabulary of a text as to_str writes it (a checkpoint's 'tinyformer.vocab': joined, spaced or "
          "sentencepiece; docs/formats.md). A ValueError names the line of malformed text")
      .def(
          "to_str", [](const Vocabulary& v) { return utf8_str(v.serialize()); },
          "The vocabulary as text, as a checkpoint stores it ('tinyformer.vocab'; docs/formats.md)")
      .def(py::pickle([](const Vocabulary& v) { return py::bytes(v.serialize()); },
                      [](const py::bytes& text) { return Vocabulary::deserialize(text); }))
      .def(
          "__eq__", [](const Vocabulary& a, const Vocabulary& b) { return a == b; }, py::is_operator())
      .def("__repr__", [](const Vocabulary& v) {
        return fmt::format("tinyformer.Vocabulary({} tokens, layout '{}')", v.size(), data::layout_name(v.layout()));
      });
}

void bind_vocabulary_lookups(py::class_<Vocabulary>& vocab) {
  vocab
      .def_property_readonly(
          "tokens", [](const Vocabulary& v) { return utf8_list(v.tokens()); }, "The tokens, token i at index i")
      .def_property_readonly(
          "layout", [](const Vocabulary& v) { return data::layout_name(v.layout()); },
          "'joined', 'spaced' or 'sentencepiece'")
      .def("__len__", &Vocabulary::size)
      .def("__contains__",
           [](const Vocabulary& v, const py::object& token) {
             return py::isinstance<py::str>(token) && v.contains(token.cast<std::string>());
           })
      .def(
          "token_to_id",
          [](const Vocabulary& v, const std::string& token) {
            return vocabulary_call("Vocabulary.token_to_id()", "token", [&] { return v.id(token); });
          },
          py::arg("token"), "The id of token; a ValueError when it is not in the vocabulary")
      .def(
          "id_to_token", [](const Vocabulary& v, long long id) { return utf8_str(token_of(v, id)); }, py::arg("id"),
          "The token of id; a ValueError when id is not in [0, len(vocab))")
      .def(
          "encode",
          [](const Vocabulary& v, const std::string& text) {
            return vocabulary_call("Vocabulary.encode()", "text", [&] { return v.encode(text); });
          },
          py::arg("text"),
          "Text -> token ids (a list): joined, one per character; spaced, one per whitespace-separated word; "
          "sentencepiece, the model's pieces (no <s> added). A ValueError lists every unknown character or word")
      .def(
          "decode",
          [](const Vocabulary& v, const py::object& ids) {
            const IndexArray a = vocabulary_call("Vocabulary.decode()", "ids", [&] { return to_ids(ids); });
            return utf8_str(vocabulary_call("Vocabulary.decode()", "ids", [&] { return v.decode(a); }));
          },
          py::arg("ids"),
          "Token ids (a list, NumPy array or int64 tensor) -> text, the inverse of encode (spaced: words joined by "
          "one space). A ValueError names an id outside [0, len(vocab))");
}

}  // namespace

void bind_vocabulary(py::module_& m) {
  py::class_<Vocabulary> vocab(m, "Vocabulary",
                               "The library's vocabulary (tf::data::Vocabulary): ids <-> tokens, text <-> ids, and "
                               "the text a checkpoint stores (from_str, to_str)");
  bind_vocabulary_text(vocab);
  bind_vocabulary_lookups(vocab);
}

}  // namespace tf::python
