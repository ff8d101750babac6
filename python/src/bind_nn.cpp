// The library's modules and optimizers, float32 (the library trains in float32): tf.nn.Linear, LayerNorm,
// CausalSelfAttention and GPT hold an nn:: module of the library; tinyformer/nn.py wraps them in tf.nn.Module.
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
using Module = nn::Module<float>;

// The attention's generators live as long as it does (it keeps a reference to the dropout generator): a base
// initialised before the module.
struct AttentionGenerators {
  Rng init;
};
struct OwnedAttention : private AttentionGenerators, public nn::CausalSelfAttention<float> {
  OwnedAttention(const config::ModelConfig& cfg, std::uint64_t seed)
      : AttentionGenerators{Rng(seed)},
        nn::CausalSelfAttention<float>(cfg, AttentionGenerators::init, std::make_shared<Rng>(Rng(seed).split())) {}
};

py::list named_tensors(const nn::NamedParams<float>& params) {
  py::list out;
  for (const auto& [name, v] : params) out.append(py::make_tuple(name, Tensor(v)));
  return out;
}

optim::NamedVars<float> to_named_vars(const std::vector<std::pair<std::string, Tensor>>& params) {
  optim::NamedVars<float> out;
  for (const auto& [name, t] : params) out.emplace_back(name, t.as<float>());
  return out;
}

}  // namespace

void bind_nn(py::module_& m) {
  m.def(
      "_model_config", [](const std::string& json) { return config::model_json(config::model_from_json(json)); },
      "The model section completed with defaults (JSON), after the config's checks");

  py::class_<Module>(m, "_Module")
      .def("named_parameters", [](const Module& mod) { return named_tensors(mod.named_parameters()); })
      .def("num_parameters", &Module::num_parameters)
      .def("zero_grad", &Module::zero_grad)
      .def("train", &Module::train, py::arg("mode") = true)
      .def_property_readonly("training", &Module::training);

  py::class_<nn::Linear<float>, Module>(m, "_Linear")
      .def(py::init([](std::size_t in, std::size_t out, bool bias, const std::string& model_json, std::uint64_t seed) {
             const config::ModelConfig cfg = config::model_from_json(model_json);
             Rng rng(seed);
             return std::make_unique<nn::Linear<float>>(in, out, bias, cfg.init, rng);
           }),
           py::arg("in_features"), py::arg("out_features"), py::arg("bias"), py::arg("model_json"), py::arg("seed"))
      .def(
          "forward", [](const nn::Linear<float>& l, const Tensor& x) { return Tensor(l.forward(x.as<float>())); },
          Release());

  py::class_<nn::Norm<float>, Module>(m, "_Norm")
      .def(py::init([](const std::string& model_json) {
        const config::ModelConfig cfg = config::model_from_json(model_json);
        config::validate_model(cfg);
        return std::make_unique<nn::Norm<float>>(cfg);
      }))
      .def(
          "forward", [](const nn::Norm<float>& n, const Tensor& x) { return Tensor(n.forward(x.as<float>())); },
          Release());

  py::class_<OwnedAttention, Module>(m, "_CausalSelfAttention")
      .def(py::init([](const std::string& model_json, std::uint64_t seed) {
        const config::ModelConfig cfg = config::model_from_json(model_json);
        config::validate_model(cfg);
        return std::make_unique<OwnedAttention>(cfg, seed);
      }))
      .def(
          "forward", [](OwnedAttention& a, const Tensor& x) { return Tensor(a.forward(x.as<float>())); }, Release())
      .def("record_weights", &OwnedAttention::record_weights)
      .def("last_weights", [](const OwnedAttention& a) { return to_numpy_copy(a.last_weights()); });

  py::class_<nn::GPT<float>, Module>(m, "_GPT")
      .def(py::init([](const std::string& model_json, std::uint64_t seed) {
             return std::make_unique<nn::GPT<float>>(config::model_from_json(model_json), seed);
           }),
           py::arg("model_json"), py::arg("seed"))
      .def("forward",
           [](nn::GPT<float>& g, const py::object& ids) {
             IndexArray x = to_ids(ids);
             py::gil_scoped_release release;
             return Tensor(g.forward(x));
           })
      .def("loss",
           [](nn::GPT<float>& g, const py::object& ids, const py::object& targets) {
             IndexArray x = to_ids(ids), y = to_ids(targets);
             py::gil_scoped_release release;
             return Tensor(g.loss(x, y));
           })
      .def("config_json", [](const nn::GPT<float>& g) { return config::model_json(g.config()); })
      .def_property_readonly("n_layer", &nn::GPT<float>::n_layer)
      .def_property_readonly("vocab_size", &nn::GPT<float>::vocab_size)
      .def_property_readonly("context", &nn::GPT<float>::context);

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
