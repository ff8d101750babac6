// Runs from Python, each a call of the library's runs layer (lib/tinyformer/runs/): tf.train (runs::train, the
// trainer behind `tinyformer train`, with the Python callback called by the trainer after each step), a checkpoint
// opened with every check (runs::open_checkpoint), prompts encoded as the CLI encodes them, bounded streaming
// sampling, attention maps, head scores and ablation. The GIL is released while they work; it is taken again for
// each callback, which also gives Ctrl-C its chance: a KeyboardInterrupt (or any exception of the callback) ends
// training after the step, with the checkpoint written, and is then raised as it was.
#include <atomic>
#include <memory>
#include <optional>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/infer/head_scores.hpp"
#include "tinyformer/runs/checkpoints.hpp"
#include "tinyformer/runs/inspect.hpp"
#include "tinyformer/runs/sampling.hpp"
#include "tinyformer/runs/training.hpp"

namespace tf::python {

namespace {

// Runs a pending Python signal handler (Ctrl-C: KeyboardInterrupt); its exception is thrown as error_already_set.
void check_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

py::dict eval_dict(const infer::EvalResult& e) {
  py::dict d;
  d["loss"] = e.loss;
  d["accuracy"] = e.accuracy ? py::cast(*e.accuracy) : py::none();
  return d;
}

py::dict result_dict(const runs::TrainResult& r) {
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
  d["last_val_bpb"] = r.last_val_bpb ? py::cast(*r.last_val_bpb) : py::none();
  d["last_accuracy"] = r.last_accuracy ? py::cast(*r.last_accuracy) : py::none();
  d["train_losses"] = r.train_losses;
  d["warnings"] = utf8_list(r.warnings);
  return d;
}

runs::Overflow overflow_of(bool crop) { return crop ? runs::Overflow::keep_last : runs::Overflow::refuse; }

// A prompt from Python: text (encoded with <s> first where the vocabulary has it) or token ids (taken as they are).
runs::Prompt prompt_of(const LoadedGPT& m, const py::object& prompt, bool crop) {
  if (py::isinstance<py::str>(prompt))
    return runs::encode_prompt(m, prompt.cast<std::string>(), "prompt", overflow_of(crop));
  const IndexArray ids = to_ids(prompt);
  return runs::prompt_of_ids(m.vocab, m.model->context(), std::vector<Index>(ids.data(), ids.data() + ids.size()),
                             "prompt", overflow_of(crop));
}

py::tuple prompt_tuple(const runs::Prompt& p) {
  return py::make_tuple(p.ids, p.warning.empty() ? py::object(py::none()) : py::object(utf8_str(p.warning)));
}

}  // namespace

// tinyformer.load's model, below (bind_runs is split for clang-tidy's 80 lines a function).
void bind_trained_model(py::module_& m);
void bind_sampling(py::class_<LoadedGPT>& model);
void bind_inspection(py::class_<LoadedGPT>& model);

void bind_runs(py::module_& m) {
  py::class_<std::atomic<bool>>(m, "_StopFlag")
      .def(py::init([] { return std::make_unique<std::atomic<bool>>(false); }))
      .def("set", [](std::atomic<bool>& f) { f.store(true); })
      .def("clear", [](std::atomic<bool>& f) { f.store(false); })
      .def("is_set", [](const std::atomic<bool>& f) { return f.load(); });

  m.def(
      "_train",
      [](const std::string& config_name, const std::string& config_text, const std::vector<std::string>& overrides,
         std::optional<std::string> out, bool resume, bool overwrite, bool allow_changes, const std::string& init_from,
         bool progress, const std::atomic<bool>* stop, const py::function& on_step, const py::function& on_warning) {
        runs::TrainOptions o;
        o.config_path = config_name;
        o.config_text = config_text;
        o.overrides = overrides;
        o.out_dir = std::move(out);
        o.resume = resume;
        o.overwrite = overwrite;
        o.allow_changes = allow_changes;
        o.init_from = init_from;
        o.progress = progress;
        o.stop = stop;
        o.on_step = [&on_step](const runs::StepInfo& s) {
          py::gil_scoped_acquire gil;
          check_signals();
          on_step(s.step, s.total, s.skipped, s.row.empty() ? py::object(py::none()) : py::object(utf8_str(s.row)));
        };
        o.on_warning = [&on_warning](const std::string& w) {
          py::gil_scoped_acquire gil;
          on_warning(utf8_str(w));
        };
        runs::TrainResult r;
        {
          py::gil_scoped_release release;
          r = runs::train(o);
        }
        return result_dict(r);
      },
      py::arg("config_name"), py::arg("config_text"), py::arg("overrides"), py::arg("out"), py::arg("resume"),
      py::arg("overwrite"), py::arg("allow_changes"), py::arg("init_from"), py::arg("progress"), py::arg("stop"),
      py::arg("on_step"), py::arg("on_warning"));

  m.def(
      "_config_yaml",
      [](const std::string& config_name, const std::string& config_text, const std::vector<std::string>& overrides) {
        runs::TrainOptions o;
        o.config_path = config_name;
        o.config_text = config_text;
        o.overrides = overrides;
        return runs::resolved_config(o);
      },
      "The resolved config of a file (or of config text) and its overrides, as `tinyformer config` prints it");

  bind_trained_model(m);
}

void bind_trained_model(py::module_& m) {
  py::class_<LoadedGPT> model(m, "_TrainedModel");
  model
      .def(py::init([](const std::string& path) {
             py::gil_scoped_release release;
             return std::make_unique<LoadedGPT>(runs::open_checkpoint(path));
           }),
           py::arg("checkpoint"))
      .def_readonly("path", &LoadedGPT::path)
      .def_readonly("step", &LoadedGPT::step)
      .def_readonly("config_yaml", &LoadedGPT::config_yaml)
      .def(
          "model", [](LoadedGPT& l) -> nn::GPT<float>& { return *l.model; },
          py::return_value_policy::reference_internal)
      .def_property_readonly(
          "vocabulary", [](const LoadedGPT& l) -> const data::Vocabulary& { return l.vocab; },
          py::return_value_policy::reference_internal)
      .def_property_readonly("bos", [](const LoadedGPT& l) { return l.vocab.bos(); })
      .def(
          "encode_prompt",
          [](const LoadedGPT& l, const py::object& prompt, bool crop) {
            return prompt_tuple(prompt_of(l, prompt, crop));
          },
          py::arg("prompt"), py::arg("crop"))
      .def("decode",
           [](const LoadedGPT& l, const py::object& ids) {
             const IndexArray a = to_ids(ids);
             if (a.size() == 0) return utf8_str("");
             const runs::Prompt p =
                 runs::prompt_of_ids(l.vocab, a.size(), std::vector<Index>(a.data(), a.data() + a.size()), "ids");
             return utf8_str(l.vocab.decode(p.ids));
           })
      .def("labels", [](const LoadedGPT& l, const py::object& prompt) {
        const runs::Prompt p = prompt_of(l, prompt, false);
        IndexArray x = IndexArray::from_shape({p.ids.size()});
        std::copy(p.ids.begin(), p.ids.end(), x.data());
        return infer::token_labels(l.vocab, x);
      });
  bind_sampling(model);
  bind_inspection(model);
}

void bind_sampling(py::class_<LoadedGPT>& model) {
  model.def(
      "sample",
      [](LoadedGPT& l, const py::object& prompt, std::optional<std::size_t> tokens, double temperature,
         std::size_t top_k, std::uint64_t seed, bool use_cache, const std::optional<py::function>& stream,
         const std::atomic<bool>* stop) {
        runs::SampleRequest request;
        request.tokens = tokens;
        request.temperature = temperature;
        request.top_k = top_k;
        request.seed = seed;
        request.use_cache = use_cache;
        runs::check_sample_request(request);
        const runs::Prompt p = prompt_of(l, prompt, true);
        const auto on_text = [&stream](const std::string& text) {
          py::gil_scoped_acquire gil;
          check_signals();
          if (stream) (*stream)(utf8_str(text));
        };
        runs::Sample s;
        {
          py::gil_scoped_release release;
          s = runs::sample(l, p, request, on_text, stop);
        }
        py::dict d;
        d["ids"] = s.ids;
        d["text"] = utf8_str(s.text);
        d["cancelled"] = s.cancelled;
        std::vector<std::string> warnings;
        if (!p.warning.empty()) warnings.push_back(p.warning);
        warnings.insert(warnings.end(), s.warnings.begin(), s.warnings.end());
        d["warnings"] = utf8_list(warnings);
        return d;
      },
      py::arg("prompt"), py::arg("tokens"), py::arg("temperature"), py::arg("top_k"), py::arg("seed"),
      py::arg("use_cache"), py::arg("stream"), py::arg("stop"));
}

void bind_inspection(py::class_<LoadedGPT>& model) {
  model
      .def(
          "attention",
          [](LoadedGPT& l, const py::object& prompt) {
            const runs::Prompt p = prompt_of(l, prompt, false);
            runs::PromptAttention a;
            {
              py::gil_scoped_release release;
              a = runs::attention_of(l, p);
            }
            return py::make_tuple(to_numpy_copy(a.map.weights), utf8_list(a.map.labels), utf8_list(a.warnings), p.ids);
          },
          py::arg("prompt"))
      .def(
          "heads_json",
          [](LoadedGPT& l, const std::optional<py::object>& prompt, std::size_t batches, std::size_t batch_size) {
            runs::HeadsRequest request;
            request.batches = batches;
            request.batch_size = batch_size;
            if (prompt && !prompt->is_none()) request.prompt = prompt_of(l, *prompt, false);
            analysis::HeadScores scores;
            {
              py::gil_scoped_release release;
              scores = runs::head_scores(l, request);
            }
            return infer::heads_json(scores);
          },
          py::arg("prompt"), py::arg("batches"), py::arg("batch_size"))
      .def(
          "ablate",
          [](LoadedGPT& l, std::size_t batches, std::size_t batch_size, const std::string& mode) {
            infer::AblationReport r;
            {
              py::gil_scoped_release release;
              r = runs::ablate(l, batches, batch_size, mode);
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
