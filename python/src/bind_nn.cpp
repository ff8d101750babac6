// The library's modules, in float32 (training) and float64 (gradient checks), and its optimizers (float32, as the
// library trains): tf.nn.Linear, LayerNorm, CausalSelfAttention and GPT hold an nn:: module of the library;
// tinyformer/nn.py wraps them in tf.nn.Module.
// A module's configuration arrives as the model section's JSON (config::model_from_json: the YAML names and checks).
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/infer/sample.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/ops/ops.hpp"
#include "tinyformer/optim/adam.hpp"
#include "tinyformer/optim/clip.hpp"
#include "tinyformer/optim/schedule.hpp"
#include "tinyformer/optim/sgd.hpp"

namespace tf::python {

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// The attention's generators live as long as it does (it keeps a reference to the dropout generator): a base
// initialised before the module.
struct AttentionGenerators {
  Rng init;
};
template <class S>
struct OwnedAttention : private AttentionGenerators, public nn::CausalSelfAttention<S> {
  OwnedAttention(const config::ModelConfig& cfg, std::uint64_t seed)
      : AttentionGenerators{Rng(seed)},
        nn::CausalSelfAttention<S>(cfg, AttentionGenerators::init, std::make_shared<Rng>(Rng(seed).split())) {}
};

template <class S>
py::list named_tensors(const nn::NamedParams<S>& params) {
  py::list out;
  for (const auto& [name, v] : params) out.append(py::make_tuple(name, Tensor(v)));
  return out;
}

// A Python hook as the library's: fn(activation, name) gets a copy of the activation (a tensor outside the graph, as
// TransformerLens' hooks get one) and returns a replacement (a tensor or anything np.asarray takes), or None to go on
// with its copy, as fn left it (TransformerLens' `z[:, :, h] = 0` writes in place). What holds the activation's own
// bits is the activation itself: its gradient kept, and the modules' fused paths (a norm's scale that was only read).
// The GIL is taken again inside: the forward runs without it.
template <class S>
typename nn::Hooks<S>::Fn python_hook(py::function fn) {
  return [fn = std::move(fn)](const Var<S>& activation, const std::string& name) {
    py::gil_scoped_acquire gil;
    const py::object copy = py::cast(Tensor(Var<S>(activation.value())));
    const py::object out = fn(copy, name);
    Array<S> result = hook_answer<S>(
        out, copy, fmt::format("the hook at '{}' must return a tensor of its activation's shape, or None", name));
    const Array<S>& value = activation.value();
    const bool same =
        result.shape() == value.shape() && std::memcmp(result.data(), value.data(), value.size() * sizeof(S)) == 0;
    return same ? activation : Var<S>(std::move(result));
  };
}

// A Python hook on the gradient at a hook point (TransformerLens' dir="bwd"): fn(grad, name) in a later backward(),
// answering as call_grad_hook's. It stays with the forward's graph, past run_hooked.
template <class S>
typename nn::Hooks<S>::GradFn python_grad_hook(py::function fn) {
  auto held = std::make_shared<const HeldFunction>(std::move(fn));
  return [held](Array<S>& grad, const std::string& name) {
    call_grad_hook(*held, grad, fmt::format("the backward hook at '{}'", name), name);
  };
}

using NamedFunctions = std::vector<std::pair<std::string, py::function>>;

// (logits [B,T,V], the activations by hook name, each a tensor outside the graph) of the forward with Python hooks
// [(name, fn)] (python_hook) and hooks on the gradients at hook points `bwd` (python_grad_hook), then a cache: of every
// activation (`cache_all`), of those in `names`, or none (nn::Hooks::cache_into). A cache records what the hooks left;
// a forward whose names stay outside attention's and the MLP's insides keeps the fused kernels (TransformerLens'
// names_filter).
template <class S>
py::tuple run_hooked(nn::GPT<S>& g, const py::object& ids, const NamedFunctions& fns, const NamedFunctions& bwd,
                     const std::vector<std::string>& names, bool cache_all) {
  const IndexArray x = to_ids(ids);
  nn::Hooks<S> hooks;
  for (const auto& [name, fn] : fns) hooks.add(name, python_hook<S>(fn));
  for (const auto& [name, fn] : bwd) hooks.add_backward(name, python_grad_hook<S>(fn));
  nn::ActivationCache<S> cache;
  if (cache_all)
    hooks.cache_into(cache);
  else if (!names.empty())
    hooks.cache_into(cache, names);
  Var<S> logits;
  {
    py::gil_scoped_release release;
    logits = g.forward(x, hooks);
  }
  py::dict out;
  for (const auto& name : g.hook_names())
    if (auto it = cache.find(name); it != cache.end()) out[py::str(name)] = Tensor(Var<S>(std::move(it->second)));
  return py::make_tuple(Tensor(logits), out);
}

optim::NamedVars<float> to_named_vars(const std::vector<std::pair<std::string, Tensor>>& params) {
  optim::NamedVars<float> out;
  for (const auto& [name, t] : params) out.emplace_back(name, t.as<float>());
  return out;
}

// Parameter groups from Python: (named parameters, weight_decay) each (torch's param_groups; one lr for all).
using PyGroups = std::vector<std::pair<std::vector<std::pair<std::string, Tensor>>, double>>;
std::vector<optim::ParamGroup<float>> to_groups(const PyGroups& groups) {
  std::vector<optim::ParamGroup<float>> out;
  for (const auto& [params, weight_decay] : groups) out.push_back({to_named_vars(params), weight_decay});
  return out;
}

// The library's modules in S (float32, or float64 with the suffix "64": _Linear64, ...), each under its Python name.
// (name, module) of each direct sub-module, each as its most derived bound class (_Linear, _Norm, _Block, ...; a
// module of a class not bound here, such as GPT's transformer and h, is a _Module); each keeps `self` alive.
template <class S>
py::list named_children(const py::object& self) {
  py::list out;
  for (const auto& [name, child] : self.cast<const nn::Module<S>&>().named_children()) {
    py::object wrapped = py::cast(child, py::return_value_policy::reference);
    py::detail::keep_alive_impl(wrapped, self);
    out.append(py::make_tuple(name, wrapped));
  }
  return out;
}

// The GPT's class of bind_modules (split for clang-tidy's 80 lines a function).
template <class S>
void bind_gpt(py::module_& m, const std::string& suffix) {
  using Module = nn::Module<S>;
  py::class_<nn::GPT<S>, Module> gpt(m, (std::string("_GPT") + suffix).c_str());
  gpt.def(py::init([](const std::string& model_json, std::uint64_t seed) {
            return std::make_unique<nn::GPT<S>>(config::model_from_json(model_json), seed);
          }),
          py::arg("model_json"), py::arg("seed"))
      .def("forward",
           [](nn::GPT<S>& g, const py::object& ids) {
             IndexArray x = to_ids(ids);
             py::gil_scoped_release release;
             return Tensor(g.forward(x));
           })
      .def("loss",
           [](nn::GPT<S>& g, const py::object& ids, const py::object& targets) {
             IndexArray x = to_ids(ids), y = to_ids(targets);
             py::gil_scoped_release release;
             return Tensor(g.loss(x, y));
           })
      .def("run_hooked", &run_hooked<S>, py::arg("ids"), py::arg("hooks"), py::arg("bwd_hooks"), py::arg("names"),
           py::arg("cache_all"))
      .def("hook_names", &nn::GPT<S>::hook_names)
      .def("config_json", [](const nn::GPT<S>& g) { return config::model_json(g.config()); })
      .def_property_readonly("n_layer", &nn::GPT<S>::n_layer)
      .def_property_readonly("vocab_size", &nn::GPT<S>::vocab_size)
      .def_property_readonly("context", &nn::GPT<S>::context);
  if constexpr (std::is_same_v<S, float>) {  // the library samples from float32 models
    gpt.def(
        "generate",
        [](nn::GPT<float>& g, const std::vector<Index>& prompt, std::size_t tokens, double temperature,
           std::size_t top_k, std::uint64_t seed, bool use_cache, Index stop_id) {
          if (prompt.empty()) throw std::invalid_argument("the prompt has no tokens; give at least one");
          if (!(temperature >= 0)) throw std::invalid_argument(fmt::format("temperature {} must be >= 0", temperature));
          infer::SampleOptions o;
          o.new_tokens = tokens;
          o.temperature = temperature;
          o.top_k = top_k;
          o.use_cache = use_cache;
          o.stop_id = stop_id;
          Rng rng(seed);
          py::gil_scoped_release release;
          return infer::generate(g, prompt, o, rng);
        },
        py::arg("prompt"), py::arg("tokens"), py::arg("temperature"), py::arg("top_k"), py::arg("seed"),
        py::arg("use_cache"), py::arg("stop_id") = -1,
        "prompt + `tokens` ids drawn as `tinyformer sample` draws them (infer::generate)");
  }
}

template <class S>
void bind_modules(py::module_& m, const std::string& suffix) {
  using Module = nn::Module<S>;
  const auto name = [&](const char* base) { return std::string(base) + suffix; };
  py::class_<Module>(m, name("_Module").c_str())
      .def("named_parameters", [](const Module& mod) { return named_tensors(mod.named_parameters()); })
      .def("named_children", &named_children<S>)
      .def(
          "set_parameter",
          [](Module& mod, const std::string& pname, const Tensor& value) { mod.set_parameter(pname, value.as<S>()); },
          py::arg("name"), py::arg("value"), "Module::set_parameter: this module then shares `value` (tying)")
      .def("num_parameters", &Module::num_parameters)
      .def("zero_grad", &Module::zero_grad)
      .def("train", &Module::train, py::arg("mode") = true)
      .def_property_readonly("training", &Module::training);

  py::class_<nn::Linear<S>, Module>(m, name("_Linear").c_str())
      .def(py::init([](std::size_t in, std::size_t out, bool bias, const std::string& model_json, std::uint64_t seed) {
             const config::ModelConfig cfg = config::model_from_json(model_json);
             return std::make_unique<nn::Linear<S>>(in, out, bias, cfg.init, seed);
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("bias"), py::arg("model_json"), py::arg("seed"))
      .def(
          "forward", [](const nn::Linear<S>& l, const Tensor& x) { return Tensor(l.forward(x.as<S>())); }, Release());

  py::class_<nn::Norm<S>, Module>(m, name("_Norm").c_str())
      .def(py::init([](const std::string& model_json) {
        const config::ModelConfig cfg = config::model_from_json(model_json);
        config::validate_model(cfg);
        return std::make_unique<nn::Norm<S>>(cfg);
      }))
      .def(
          "forward", [](const nn::Norm<S>& n, const Tensor& x) { return Tensor(n.forward(x.as<S>())); }, Release());

  py::class_<nn::Embedding<S>, Module>(m, name("_Embedding").c_str())
      .def(py::init([](std::size_t num, std::size_t dim, std::uint64_t seed) {
             Rng rng(seed);
             return std::make_unique<nn::Embedding<S>>(num, dim, rng);
           }),
           py::arg("num_embeddings"), py::arg("embedding_dim"), py::arg("seed"))
      .def("forward", [](const nn::Embedding<S>& e, const py::object& ids) {
        const IndexArray x = to_ids(ids);
        py::gil_scoped_release release;
        return Tensor(e.forward(x));
      });

  using Attention = nn::CausalSelfAttention<S>;
  py::class_<Attention, Module>(m, name("_Attention").c_str())
      .def(
          "forward", [](Attention& a, const Tensor& x) { return Tensor(a.forward(x.as<S>())); }, Release())
      .def("record_weights", &Attention::record_weights)
      .def("last_weights", [](const Attention& a) { return to_numpy_copy(a.last_weights()); });
  py::class_<OwnedAttention<S>, Attention>(m, name("_CausalSelfAttention").c_str())
      .def(py::init([](const std::string& model_json, std::uint64_t seed) {
        const config::ModelConfig cfg = config::model_from_json(model_json);
        config::validate_model(cfg);
        return std::make_unique<OwnedAttention<S>>(cfg, seed);
      }));

  py::class_<nn::MLP<S>, Module>(m, name("_MLP").c_str())
      .def(
          "forward", [](nn::MLP<S>& mlp, const Tensor& x) { return Tensor(mlp.forward(x.as<S>())); }, Release());
  py::class_<nn::Block<S>, Module>(m, name("_Block").c_str())
      .def(
          "forward", [](nn::Block<S>& b, const Tensor& x) { return Tensor(b.forward(x.as<S>())); }, Release());

  bind_gpt<S>(m, suffix);
}

// torch.nn.utils.clip_grad_norm_ over the library's (optim/clip.hpp).
void bind_clipping(py::module_& m) {
  m.def(
      "_clip_grad_norm",
      [](const std::vector<Tensor>& params, double max_norm) {
        std::vector<Var<float>> f32;
        std::vector<Var<double>> f64;
        for (const Tensor& p : params) {
          if (p.kind == DType::float32)
            f32.push_back(p.as<float>());
          else if (p.kind == DType::float64)
            f64.push_back(p.as<double>());
        }
        if (!f32.empty() && !f64.empty())
          throw std::invalid_argument(
              "clip_grad_norm_: the parameters mix float32 and float64; clip each dtype on its own");
        py::gil_scoped_release release;
        return f64.empty() ? optim::clip_grad_norm(f32, max_norm) : optim::clip_grad_norm(f64, max_norm);
      },
      py::arg("parameters"), py::arg("max_norm"),
      "optim::clip_grad_norm: scales every gradient so that their total 2-norm is at most max_norm; the total before");
}

// The library's optimizers (float32) under the names tinyformer/optim.py wraps.
void bind_optimizers(py::module_& m) {
  using Optimizer = optim::Optimizer<float>;
  py::class_<Optimizer>(m, "_Optimizer")
      .def("step", &Optimizer::step, Release())
      .def("zero_grad", &Optimizer::zero_grad)
      .def_property("lr", &Optimizer::lr, &Optimizer::set_lr)
      .def_property_readonly("step_count", &Optimizer::step_count)
      .def_property_readonly("name", &Optimizer::name)
      .def("state_tensors",
           [](const Optimizer& o) {
             py::dict out;
             for (const auto& [name, a] : o.state_tensors()) out[py::str(name)] = to_numpy_copy(a);
             return out;
           })
      .def(
          "load_state",
          [](Optimizer& o, const py::dict& tensors, std::int64_t step_count) {
            optim::NamedArrays<float> state;
            for (const auto& [name, a] : tensors) state.emplace_back(py::cast<std::string>(name), to_array<float>(a));
            o.load_state(state, step_count);
          },
          py::arg("tensors"), py::arg("step_count"),
          "optim::Optimizer::load_state: the state tensors state_tensors() gave, and the step count (checked)");
  py::class_<optim::SGD<float>, Optimizer>(m, "_SGD").def(
      py::init([](const PyGroups& groups, double lr, double momentum, double dampening, bool nesterov) {
        optim::SgdOptions o;
        o.momentum = momentum;
        o.dampening = dampening;
        o.nesterov = nesterov;
        return std::make_unique<optim::SGD<float>>(to_groups(groups), lr, o);
      }),
      py::arg("groups"), py::arg("lr"), py::arg("momentum"), py::arg("dampening"), py::arg("nesterov"));
  py::class_<optim::Adam<float>, Optimizer>(m, "_Adam")
      .def(py::init([](const PyGroups& groups, double lr, double beta1, double beta2, double eps) {
             return std::make_unique<optim::Adam<float>>(to_groups(groups), lr, optim::AdamOptions{beta1, beta2, eps});
           }),
           py::arg("groups"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"));
  py::class_<optim::AdamW<float>, optim::Adam<float>>(m, "_AdamW")
      .def(py::init([](const PyGroups& groups, double lr, double beta1, double beta2, double eps) {
             return std::make_unique<optim::AdamW<float>>(to_groups(groups), lr, optim::AdamOptions{beta1, beta2, eps});
           }),
           py::arg("groups"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"));
}

}  // namespace

void bind_nn(py::module_& m) {
  bind_clipping(m);
  m.attr("_norm_eps") = kNormEps;  // the eps of LayerNorm and RMSNorm (ops/ops.hpp)
  m.def(
      "_model_config", [](const std::string& json) { return config::model_json(config::model_from_json(json)); },
      "The model section completed with defaults (JSON), after the config's checks");

  bind_modules<float>(m, "");
  bind_modules<double>(m, "64");

  // In-place copy into a parameter (load_state_dict): the buffer stays, so NumPy views of it stay valid.
  m.def("_copy_into", [](const Tensor& t, const py::array& value) {
    visit(t, [&](const auto& v) {
      using S = typename std::decay_t<decltype(v.value())>::value_type;
      Array<S> a = to_array<S>(value);
      if (to_shape(a.shape()) != v.shape()) {
        throw std::invalid_argument(fmt::format("shape [{}] differs from the parameter's [{}]",
                                                fmt::join(a.shape(), ", "), fmt::join(v.shape(), ", ")));
      }
      auto var = v;
      std::copy(a.data(), a.data() + a.size(), var.mutable_value().data());
    });
  });

  bind_optimizers(m);

  // The trainer's learning-rate schedule (optim/schedule.hpp, nanoGPT's get_lr): the lr of a 0-based step.
  m.def(
      "_schedule_lr",
      [](const std::string& kind, double lr, std::int64_t warmup_steps, std::int64_t decay_steps, double min_lr,
         std::int64_t step) {
        optim::LrSchedule s;
        if (kind == "constant") {
          s = optim::LrSchedule::constant(lr);
        } else if (kind == "warmup") {
          s = optim::LrSchedule::warmup(lr, warmup_steps);
        } else if (kind == "cosine") {
          s = optim::LrSchedule::cosine(lr, warmup_steps, decay_steps, min_lr);
        } else {
          throw std::invalid_argument(fmt::format("schedule '{}': valid are constant, warmup, cosine", kind));
        }
        return s.at(step);
      },
      py::arg("kind"), py::arg("lr"), py::arg("warmup_steps"), py::arg("decay_steps"), py::arg("min_lr"),
      py::arg("step"));
}

}  // namespace tf::python
