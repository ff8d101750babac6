// The library's modules, in float32 (training) and float64 (gradient checks), and its optimizers (float32, as the
// library trains): tf.nn.Linear, LayerNorm, CausalSelfAttention and GPT hold an nn:: module of the library;
// tinyformer/nn.py wraps them in tf.nn.Module.
// A module's configuration arrives as the model section's JSON (config::model_from_json: the YAML names and checks).
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/config/config.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/optim/adam.hpp"
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

// logits [B,T,V] and every activation by hook name, in the forward's order (nn/hooks.hpp), as NumPy copies.
template <class S>
py::tuple run_with_cache(nn::GPT<S>& g, const py::object& ids) {
  const IndexArray x = to_ids(ids);
  nn::ActivationCache<S> cache;
  Array<S> logits;
  {
    py::gil_scoped_release release;
    logits = g.run_with_cache(x, cache).value();
  }
  py::dict out;
  for (const auto& name : g.hook_names())
    if (auto it = cache.find(name); it != cache.end()) out[py::str(name)] = to_numpy_copy(it->second);
  return py::make_tuple(to_numpy_copy(logits), out);
}

// logits [B,T,V] of the forward with Python hooks: fn(activation, name) gets a NumPy copy of the activation and returns
// a replacement (anything np.asarray takes) or None to keep it. The GIL is released around the forward and taken
// again in each hook: a Python function needs it.
template <class S>
py::array_t<S> run_with_hooks(nn::GPT<S>& g, const py::object& ids,
                              const std::vector<std::pair<std::string, py::function>>& fns) {
  const IndexArray x = to_ids(ids);
  nn::Hooks<S> hooks;
  for (const auto& [name, fn] : fns)
    hooks.add(name, [fn = fn](const Var<S>& activation, const std::string& hook_name) {
      py::gil_scoped_acquire gil;
      const py::object out = fn(to_numpy_copy(activation.value()), hook_name);
      return out.is_none() ? activation : Var<S>(to_array<S>(out));
    });
  Array<S> logits;
  {
    py::gil_scoped_release release;
    logits = g.forward(x, hooks).value();
  }
  return to_numpy_copy(logits);
}

optim::NamedVars<float> to_named_vars(const std::vector<std::pair<std::string, Tensor>>& params) {
  optim::NamedVars<float> out;
  for (const auto& [name, t] : params) out.emplace_back(name, t.as<float>());
  return out;
}

// The library's modules in S (float32, or float64 with the suffix "64": _Linear64, ...), each under its Python name.
template <class S>
void bind_modules(py::module_& m, const std::string& suffix) {
  using Module = nn::Module<S>;
  const auto name = [&](const char* base) { return std::string(base) + suffix; };
  py::class_<Module>(m, name("_Module").c_str())
      .def("named_parameters", [](const Module& mod) { return named_tensors(mod.named_parameters()); })
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

  py::class_<OwnedAttention<S>, Module>(m, name("_CausalSelfAttention").c_str())
      .def(py::init([](const std::string& model_json, std::uint64_t seed) {
        const config::ModelConfig cfg = config::model_from_json(model_json);
        config::validate_model(cfg);
        return std::make_unique<OwnedAttention<S>>(cfg, seed);
      }))
      .def(
          "forward", [](OwnedAttention<S>& a, const Tensor& x) { return Tensor(a.forward(x.as<S>())); }, Release())
      .def("record_weights", &OwnedAttention<S>::record_weights)
      .def("last_weights", [](const OwnedAttention<S>& a) { return to_numpy_copy(a.last_weights()); });

  py::class_<nn::GPT<S>, Module>(m, name("_GPT").c_str())
      .def(py::init([](const std::string& model_json, std::uint64_t seed) {
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
      .def("run_with_cache", &run_with_cache<S>, py::arg("ids"))
      .def("run_with_hooks", &run_with_hooks<S>, py::arg("ids"), py::arg("hooks"))
      .def("hook_names", &nn::GPT<S>::hook_names)
      .def("config_json", [](const nn::GPT<S>& g) { return config::model_json(g.config()); })
      .def_property_readonly("n_layer", &nn::GPT<S>::n_layer)
      .def_property_readonly("vocab_size", &nn::GPT<S>::vocab_size)
      .def_property_readonly("context", &nn::GPT<S>::context);
}

}  // namespace

void bind_nn(py::module_& m) {
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

  using Optimizer = optim::Optimizer<float>;
  py::class_<Optimizer>(m, "_Optimizer")
      .def("step", &Optimizer::step, Release())
      .def("zero_grad", &Optimizer::zero_grad)
      .def_property("lr", &Optimizer::lr, &Optimizer::set_lr)
      .def_property_readonly("step_count", &Optimizer::step_count)
      .def_property_readonly("name", &Optimizer::name)
      .def("state_tensors", [](const Optimizer& o) {
        py::dict out;
        for (const auto& [name, a] : o.state_tensors()) out[py::str(name)] = to_numpy_copy(a);
        return out;
      });
  py::class_<optim::SGD<float>, Optimizer>(m, "_SGD").def(
      py::init([](const std::vector<std::pair<std::string, Tensor>>& params, double lr, double momentum,
                  double dampening, bool nesterov, double weight_decay) {
        optim::SgdOptions o;
        o.momentum = momentum;
        o.dampening = dampening;
        o.nesterov = nesterov;
        return std::make_unique<optim::SGD<float>>(to_named_vars(params), lr, o, weight_decay);
      }));
  py::class_<optim::Adam<float>, Optimizer>(m, "_Adam")
      .def(py::init([](const std::vector<std::pair<std::string, Tensor>>& params, double lr, double beta1, double beta2,
                       double eps, double weight_decay) {
        return std::make_unique<optim::Adam<float>>(to_named_vars(params), lr, optim::AdamOptions{beta1, beta2, eps},
                                                    weight_decay);
      }));
  py::class_<optim::AdamW<float>, optim::Adam<float>>(m, "_AdamW")
      .def(py::init([](const std::vector<std::pair<std::string, Tensor>>& params, double lr, double beta1, double beta2,
                       double eps, double weight_decay) {
        return std::make_unique<optim::AdamW<float>>(to_named_vars(params), lr, optim::AdamOptions{beta1, beta2, eps},
                                                     weight_decay);
      }));
}

}  // namespace tf::python
