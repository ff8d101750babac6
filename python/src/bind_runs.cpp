// Runs: the trainer behind `tinyformer train`, a checkpoint loaded back (its model, config and vocabulary),
// sampling, attention maps, head scores and ablation, each the library function the CLI calls. The GIL is released
// while they work.
#include <atomic>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/checkpoint/checkpoint.hpp"
#include "tinyformer/data/data.hpp"
#include "tinyformer/infer/ablation.hpp"
#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/infer/sample.hpp"
#include "tinyformer/train/trainer.hpp"

namespace tf::python {

namespace {

// A checkpoint read back: the model (eval mode), its vocabulary and the run's resolved config.
struct Loaded {
  std::string path;
  std::unique_ptr<nn::GPT<float>> model;
  data::Vocabulary vocab;
  std::int64_t step = 0;
  std::string config_yaml;

  explicit Loaded(const std::string& checkpoint) : path(checkpoint) {
    const auto file = io::SafetensorsFile::load(checkpoint);
    model = std::make_unique<nn::GPT<float>>(checkpoint::read_model_config(file), 0);  // weights loaded next
    checkpoint::load_model_weights(file, *model);
    model->eval();
    const checkpoint::TrainingState state = checkpoint::read_training_state(file);
    vocab = checkpoint::read_vocabulary(state.vocab, checkpoint);
    step = state.step;
    config_yaml = state.config_yaml;
  }

  // The data the model was trained on, rebuilt from its config (the CLI's heads and attention do the same).
  std::unique_ptr<data::DataSource> data() const {
    try {
      return data::make_data_source(config::load_config_text(config_yaml, path + " (its config)"));
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}: the data it was trained on cannot be rebuilt: {}", path, e.what()));
    }
  }

  IndexArray ids_of(const std::vector<Index>& ids) const {
    if (ids.empty()) throw std::invalid_argument("the prompt has no tokens; give at least one");
    if (ids.size() > model->context()) {
      throw std::invalid_argument(
          fmt::format("the prompt has {} tokens, more than the model's context of {}", ids.size(), model->context()));
    }
    IndexArray x = IndexArray::from_shape({ids.size()});
    std::copy(ids.begin(), ids.end(), x.data());
    return x;
  }
};

py::dict eval_dict(const infer::EvalResult& e) {
  py::dict d;
  d["loss"] = e.loss;
  d["accuracy"] = e.accuracy ? py::cast(*e.accuracy) : py::none();
  return d;
}

}  // namespace

void bind_runs(py::module_& m) {
  py::class_<std::atomic<bool>>(m, "_StopFlag")
      .def(py::init([] { return std::make_unique<std::atomic<bool>>(false); }))
      .def("set", [](std::atomic<bool>& f) { f.store(true); })
      .def("is_set", [](const std::atomic<bool>& f) { return f.load(); });

  m.def(
      "_train",
      [](const std::string& config_path, const std::vector<std::string>& overrides, std::optional<std::string> out,
         bool resume, bool overwrite, bool allow_changes, const std::string& init_from, bool progress,
         const std::atomic<bool>* stop) {
        train::TrainOptions o;
        o.config_path = config_path;
        o.overrides = overrides;
        o.out_dir = std::move(out);
        o.resume = resume;
        o.overwrite = overwrite;
        o.allow_changes = allow_changes;
        o.init_from = init_from;
        o.progress = progress;
        o.stop = stop;
        train::TrainResult r;
        {
          py::gil_scoped_release release;
          r = train::train(o);
        }
        py::dict d;
        d["out_dir"] = r.out_dir;
        d["interrupted"] = r.interrupted;
        d["out_of_time"] = r.out_of_time;
        d["nothing_to_do"] = r.nothing_to_do;
        d["start_step"] = r.start_step;
        d["total_steps"] = r.total_steps;
        d["steps_done"] = r.steps_done;
        d["steps_skipped"] = r.steps_skipped;
        d["wall_seconds"] = r.wall_seconds;
        d["last_train_loss"] = r.last_train_loss;
        d["last_val_loss"] = r.last_val_loss ? py::cast(*r.last_val_loss) : py::none();
        d["last_accuracy"] = r.last_accuracy ? py::cast(*r.last_accuracy) : py::none();
        d["train_losses"] = r.train_losses;
        return d;
      },
      py::arg("config_path"), py::arg("overrides"), py::arg("out"), py::arg("resume"), py::arg("overwrite"),
      py::arg("allow_changes"), py::arg("init_from"), py::arg("progress"), py::arg("stop"));

  m.def(
      "_config_yaml",
      [](const std::string& path, const std::vector<std::string>& overrides) {
        return config::to_yaml(config::load_config(path, overrides));
      },
      "The resolved config of a file and its overrides (every key), as `tinyformer config` prints it");

  py::class_<Loaded>(m, "_Loaded")
      .def(py::init<const std::string&>(), py::call_guard<py::gil_scoped_release>())
      .def_readonly("path", &Loaded::path)
      .def_readonly("step", &Loaded::step)
      .def_readonly("config_yaml", &Loaded::config_yaml)
      .def(
          "model", [](Loaded& l) -> nn::GPT<float>& { return *l.model; }, py::return_value_policy::reference_internal)
      .def("vocab_tokens", [](const Loaded& l) { return l.vocab.tokens(); })
      .def("encode", [](const Loaded& l, const std::string& text) { return l.vocab.encode(text); })
      // A prompt encoded as the CLI encodes it (apps/tinyformer/model_loading.cpp, encode_prompt; issue 49's runs
      // layer is to hold it once): the vocabulary's ids, <s> first where the vocabulary has one (bos false: never).
      .def(
          "encode_prompt",
          [](const Loaded& l, const std::string& text, bool bos) {
            std::vector<Index> ids = l.vocab.encode(text);
            if (bos && l.vocab.bos() >= 0) ids.insert(ids.begin(), l.vocab.bos());
            return ids;
          },
          py::arg("text"), py::arg("bos") = true)
      .def_property_readonly("bos", [](const Loaded& l) { return l.vocab.bos(); })
      .def("decode", [](const Loaded& l, const std::vector<Index>& ids) { return l.vocab.decode(ids); })
      .def("labels",
           [](const Loaded& l, const std::vector<Index>& ids) { return infer::token_labels(l.vocab, l.ids_of(ids)); })
      .def(
          "generate",
          [](Loaded& l, const std::vector<Index>& prompt, std::size_t tokens, double temperature, std::size_t top_k,
             std::uint64_t seed, bool use_cache) {
            if (prompt.empty()) throw std::invalid_argument("the prompt has no tokens; give at least one");
            infer::SampleOptions o;
            o.new_tokens = tokens;
            o.temperature = temperature;
            o.top_k = top_k;
            o.use_cache = use_cache;
            if (!(temperature >= 0))
              throw std::invalid_argument(fmt::format("temperature {} must be >= 0", temperature));
            Rng rng(seed);
            py::gil_scoped_release release;
            return infer::generate(*l.model, prompt, o, rng);
          },
          py::arg("prompt"), py::arg("tokens"), py::arg("temperature"), py::arg("top_k"), py::arg("seed"),
          py::arg("use_cache"))
      .def("attention",
           [](Loaded& l, const std::vector<Index>& ids) {
             IndexArray x = l.ids_of(ids);
             Array<float> w;
             {
               py::gil_scoped_release release;
               w = infer::probe_attention(*l.model, x);
             }
             return to_numpy_copy(w);
           })
      .def(
          "heads_json",
          [](Loaded& l, std::optional<std::vector<Index>> ids, std::size_t batches, std::size_t batch_size) {
            std::optional<analysis::HeadScores> scores;
            if (ids) {
              IndexArray x = l.ids_of(*ids);
              py::gil_scoped_release release;
              scores = analysis::score_heads(infer::probe_attention(*l.model, x), x);
            } else {
              auto source = l.data();
              py::gil_scoped_release release;
              scores = infer::score_heads_on_data(*l.model, *source, batch_size, batches);
            }
            if (!scores) throw std::runtime_error(fmt::format("{}: no sequence has finite attention to score", l.path));
            return infer::heads_json(*scores);
          },
          py::arg("ids"), py::arg("batches"), py::arg("batch_size"))
      .def(
          "ablate",
          [](Loaded& l, std::size_t batches, std::size_t batch_size, const std::string& mode) {
            if (mode != "zero" && mode != "mean")
              throw std::invalid_argument(fmt::format("ablate mode '{}': valid are zero, mean", mode));
            auto source = l.data();
            infer::AblationReport r;
            {
              py::gil_scoped_release release;
              r = infer::ablate_heads(*l.model, *source, batch_size, batches,
                                      mode == "mean" ? infer::Ablation::mean : infer::Ablation::zero);
            }
            py::dict d;
            d["intact"] = eval_dict(r.intact);
            py::list heads;
            for (const auto& h : r.heads) {
              py::dict e = eval_dict(h.result);
              e["layer"] = h.layer;
              e["head"] = h.head;
              heads.append(e);
            }
            d["heads"] = heads;
            return d;
          },
          py::arg("batches"), py::arg("batch_size"), py::arg("mode"));
}

}  // namespace tf::python
