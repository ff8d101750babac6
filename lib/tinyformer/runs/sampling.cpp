#include "tinyformer/runs/sampling.hpp"

#include <cmath>

#include <fmt/format.h>

#include "tinyformer/data/text_stream.hpp"
#include "tinyformer/infer/sample.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/errors.hpp"

namespace tf::runs {

namespace {

// A task's checkpoint completes the sequence (to the end of its answer) when the prompt has the task's shape, else
// writes one answer's worth; text and tokens (or data that cannot be rebuilt): 64.
std::size_t default_new_tokens(const LoadedGPT& model, const Prompt& prompt, std::vector<std::string>& warnings) {
  std::string note;
  const auto source = run_data_if_available(model, note);
  if (!source || !source->is_task()) return 64;
  const std::size_t full = source->seq_len() + 1;
  const std::string mismatch = source->prompt_mismatch(prompt.ids);
  if (mismatch.empty()) return full > prompt.ids.size() ? full - prompt.ids.size() : 0;
  warnings.push_back(fmt::format("{}; writing {} tokens (one answer's length)", mismatch, source->answer_length()));
  return source->answer_length();
}

// Why generation stops early: a stop request (not an error).
struct Cancelled {};

}  // namespace

void check_sample_request(const SampleRequest& request, const std::string& flag_prefix) {
  if (request.tokens && *request.tokens > kMaxNewTokens)
    throw Error(ErrorKind::value, fmt::format("{}tokens: must be at most {} (a bound on the time and memory of one "
                                              "sample), got {}",
                                              flag_prefix, kMaxNewTokens, *request.tokens));
  const double t = request.temperature;
  if (!std::isfinite(t) || t < 0 || t > 1e6 || (t > 0 && t < kMinTemperature))
    throw Error(ErrorKind::value,
                fmt::format("{}temperature: must be 0 (greedy) or a number from {:g} to 1e6, got {:g}{}", flag_prefix,
                            kMinTemperature, t,
                            t > 0 && t < kMinTemperature ? " (below it sampling is greedy in effect: give 0)" : ""));
}

Sample sample(LoadedGPT& model, const Prompt& prompt, const SampleRequest& request,
              const std::function<void(const std::string&)>& on_text, const std::atomic<bool>* cancel,
              const std::string& flag_prefix) {
  CallbackGuard guard;
  return at_boundary(guard, [&] {
    check_sample_request(request, flag_prefix);
    Sample out;
    infer::SampleOptions options;
    options.temperature = request.temperature;
    options.top_k = request.top_k;
    options.use_cache = request.use_cache;
    options.stop_id = stop_token(model.vocab);
    options.new_tokens = request.tokens ? *request.tokens : default_new_tokens(model, prompt, out.warnings);
    data::TextStream stream(model.vocab);  // the text as the tokens are made
    const auto emit = [&](const std::vector<Index>& ids, bool last) {
      const std::string text = stream.next(ids, last);
      out.text += text;
      if (on_text && !text.empty()) guard.call(on_text, text);
    };
    emit(prompt.ids, false);
    std::vector<Index> made = prompt.ids;  // what the callback saw last, for a cancelled sample
    options.on_token = [&](const std::vector<Index>& ids) {
      made = ids;
      emit(ids, false);
      if (cancel && cancel->load()) throw Cancelled{};
    };
    Rng rng(request.seed);
    try {
      out.ids = infer::generate(*model.model, prompt.ids, options, rng);
    } catch (const Cancelled&) {
      out.ids = made;
      out.cancelled = true;
    } catch (const infer::NonFiniteLogits& e) {
      throw Error(ErrorKind::value, fmt::format("{}: {}", model.path, e.what()));
    }
    model.model->eval();  // generate leaves it so, also when it was stopped
    emit(out.ids, true);
    return out;
  });
}

}  // namespace tf::runs
