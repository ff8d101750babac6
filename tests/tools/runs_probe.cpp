// runs_probe SPEC.json: one call of the library's runs API (lib/tinyformer/runs/), described by a JSON object, as the
// generative tester (tests/app/generative.py --front cpp) draws it. The C++ front end of the tester: whatever the call
// throws must be runs::Error (or dist::CollectiveError, an error every process of a job has), one clean line.
//   {"op": "train", "config": PATH | "config_text": TEXT, "config_name": NAME, "overrides": ["k=v", ...], "out": DIR,
//    "resume": bool, "overwrite": bool, "init_from": PATH}
//   {"op": "sample", "checkpoint": PATH, "prompt": TEXT, "tokens": N | null, "temperature": X, "top_k": N, "seed": N}
//   {"op": "attention", "checkpoint": PATH, "prompt": TEXT, "out": DIR}
//   {"op": "heads", "checkpoint": PATH, "prompt": TEXT | null, "batches": N, "batch_size": N}
//   {"op": "ablate", "checkpoint": PATH, "batches": N, "batch_size": N, "mode": "zero" | "mean"}
//   {"op": "export", "checkpoint": PATH, "format": "llama2c", "out": DIR}
//   {"op": "config", "config": PATH, "overrides": [...]}
// A number may be given as a string: "nan", "inf", "-inf", or digits beyond JSON's integers ("18446744073709551615");
// a string that is not UTF-8 as {"hex": "<its bytes>"}.
// Exit 0: the call returned; 1: runs::Error, printed "runs_probe: error: <kind>: <message>"; 2: the spec cannot be
// passed to the C++ API (a negative count for a size_t: not the library's to refuse); 3: another exception left the
// API (a bug), printed "runs_probe: LEAK: <what>".
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinyformer/dist/dist.hpp"
#include "tinyformer/io/safetensors.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/errors.hpp"
#include "tinyformer/runs/inspect.hpp"
#include "tinyformer/runs/sampling.hpp"
#include "tinyformer/runs/training.hpp"
#include "tinyformer/tensor/files.hpp"
#include "tools/test_tools.hpp"

namespace tf::test_tools {

namespace {

using nlohmann::json;

// The spec cannot be expressed in the C++ API's types.
struct NotPassable {
  std::string what;
};

// A string, or {"hex": "..."} for bytes that are not UTF-8 (JSON text is UTF-8).
std::string text_of(const json& spec, const char* key, const std::string& fallback = "") {
  if (!spec.contains(key) || spec[key].is_null()) return fallback;
  const json& v = spec[key];
  if (v.is_object() && v.contains("hex") && v["hex"].is_string()) {
    const std::string hex = v["hex"].get<std::string>();
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return bytes;
  }
  if (!v.is_string()) throw NotPassable{fmt::format("{} is not a string", key)};
  return v.get<std::string>();
}

std::size_t count_of(const json& spec, const char* key, std::size_t fallback) {
  if (!spec.contains(key) || spec[key].is_null()) return fallback;
  const json& v = spec[key];
  if (v.is_number_unsigned()) return v.get<std::size_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() <= 20) {
      errno = 0;
      const unsigned long long n = std::strtoull(s.c_str(), nullptr, 10);
      if (errno == 0) return n;
    }
  }
  throw NotPassable{fmt::format("{} = {} is not a std::size_t", key, v.dump())};
}

double real_of(const json& spec, const char* key, double fallback) {
  if (!spec.contains(key) || spec[key].is_null()) return fallback;
  const json& v = spec[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return d;
  }
  throw NotPassable{fmt::format("{} = {} is not a double", key, v.dump())};
}

std::vector<std::string> strings_of(const json& spec, const char* key) {
  std::vector<std::string> out;
  if (!spec.contains(key)) return out;
  for (const auto& v : spec[key]) {
    if (!v.is_string()) throw NotPassable{fmt::format("{} holds a value that is not a string", key)};
    out.push_back(v.get<std::string>());
  }
  return out;
}

void run_spec(const json& spec) {
  const std::string op = text_of(spec, "op");
  if (op == "train" || op == "config") {
    runs::TrainOptions o;
    o.config_path =
        spec.contains("config_text") ? text_of(spec, "config_name", "<config text>") : text_of(spec, "config");
    o.config_text = text_of(spec, "config_text");
    o.overrides = strings_of(spec, "overrides");
    if (spec.contains("out") && !spec["out"].is_null()) o.out_dir = text_of(spec, "out");
    o.resume = spec.value("resume", false);
    o.overwrite = spec.value("overwrite", false);
    o.init_from = text_of(spec, "init_from");
    o.progress = false;
    o.on_warning = [](const std::string& w) { std::fprintf(stderr, "runs_probe: warning: %s\n", w.c_str()); };
    if (op == "config") {
      (void)runs::resolved_config(o);
    } else {
      (void)runs::train(o);
    }
    return;
  }
  if (op == "export") {
    runs::export_checkpoint(text_of(spec, "checkpoint"), text_of(spec, "format", "llama2c"), text_of(spec, "out"));
    return;
  }
  if (op == "attention") runs::check_attention_outputs(text_of(spec, "out"));
  LoadedGPT model = runs::open_checkpoint(text_of(spec, "checkpoint"));
  if (op == "sample") {
    runs::SampleRequest r;
    if (spec.contains("tokens") && !spec["tokens"].is_null()) r.tokens = count_of(spec, "tokens", 0);
    r.temperature = real_of(spec, "temperature", 1.0);
    r.top_k = count_of(spec, "top_k", 0);
    r.seed = count_of(spec, "seed", 1337);
    (void)runs::sample(model, runs::encode_prompt(model, text_of(spec, "prompt")), r);
  } else if (op == "attention") {
    const runs::PromptAttention a = runs::attention_of(model, runs::encode_prompt(model, text_of(spec, "prompt")));
    runs::write_attention_outputs(text_of(spec, "out"), model, a, text_of(spec, "prompt"));
  } else if (op == "heads") {
    runs::HeadsRequest r;
    if (spec.contains("prompt") && !spec["prompt"].is_null())
      r.prompt = runs::encode_prompt(model, text_of(spec, "prompt"));
    r.batches = count_of(spec, "batches", 8);
    r.batch_size = count_of(spec, "batch_size", 64);
    (void)runs::head_scores(model, r);
  } else if (op == "ablate") {
    (void)runs::ablate(model, count_of(spec, "batches", 8), count_of(spec, "batch_size", 64),
                       text_of(spec, "mode", "zero"));
  } else {
    throw NotPassable{fmt::format("unknown op '{}'", op)};
  }
}

}  // namespace

int runs_probe(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: runs_probe SPEC.json\n");
    return 2;
  }
  json spec;
  try {
    spec = json::parse(read_regular_file(argv[1]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runs_probe: cannot read the spec %s: %s\n", argv[1], e.what());
    return 2;
  }
  try {
    run_spec(spec);
    return 0;
  } catch (const NotPassable& e) {
    std::fprintf(stderr, "runs_probe: not passable: %s\n", e.what.c_str());
    return 2;
  } catch (const runs::Error& e) {
    std::fprintf(stderr, "runs_probe: error: %d: %s\n", static_cast<int>(e.kind()), e.what());
    return 1;
  } catch (const dist::CollectiveError& e) {
    std::fprintf(stderr, "runs_probe: error: collective: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runs_probe: LEAK: %s\n", printable_message(e.what()).c_str());
    return 3;
  }
}

}  // namespace tf::test_tools
