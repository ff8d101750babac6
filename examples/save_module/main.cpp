// save_module: a model that is not a GPT saved and loaded again. Its named parameters go to a safetensors file
// (tf::save), a second model of the same structure, initialised from another seed, reads them (tf::load) and then
// computes exactly the same outputs; a model of another structure is refused with the list of what does not match.
// Exit status 0 when the reloaded model agrees bit for bit and the mismatch is refused.
//   usage: save_module [out.safetensors]
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <tinyformer/tinyformer.hpp>

using namespace tf;

// y = fc2(tanh(fc1(x))): parameters fc1.weight, fc1.bias, fc2.weight, fc2.bias
struct Regressor : nn::Module<float> {
  Regressor(std::size_t hidden, std::uint64_t seed)
      : rng(seed),
        fc1(1, hidden, /*bias=*/true, nn::InitScheme::xavier_uniform, rng),
        fc2(hidden, 1, true, nn::InitScheme::xavier_uniform, rng) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Var<float> forward(const Var<float>& x) { return fc2.forward(tanh(fc1.forward(x))); }
  Rng rng;
  nn::Linear<float> fc1, fc2;
};

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "save_module.safetensors";
  // fit y = sin(3x) on [-1, 1]: x [N,1] -> y [N,1]
  const std::size_t N = 64;
  Array<float> xs = Array<float>::from_shape({N, 1}), ys = Array<float>::from_shape({N, 1});
  for (std::size_t i = 0; i < N; ++i) {
    xs(i, 0) = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(N - 1);
    ys(i, 0) = std::sin(3.0f * xs(i, 0));
  }
  const Var<float> x(xs), target(ys);

  Regressor model(16, /*seed=*/1);
  optim::Adam<float> opt(model.named_parameters(), /*lr=*/0.02);
  double loss_value = 0;
  for (int step = 1; step <= 400; ++step) {
    const Var<float> diff = model.forward(x) - target;
    const Var<float> loss = mean(diff * diff);
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_value = loss.item();
  }
  std::printf("mean squared error after 400 Adam steps: %.5f\n", loss_value);

  save(out, model);            // the named parameters, F32
  Regressor reloaded(16, 99);  // another initialisation, overwritten by load
  load(out, reloaded);
  const bool same = reloaded.forward(x).value() == model.forward(x).value();
  std::printf("reloaded from %s: outputs %s\n", out.c_str(), same ? "equal bit for bit" : "DIFFER");

  bool refused = false;
  try {
    Regressor wider(32, 1);
    load(out, wider);
  } catch (const std::invalid_argument& e) {
    refused = true;
    std::printf("a model of another size is refused:\n%s\n", e.what());
  }
  const bool ok = same && refused && loss_value < 0.01;
  std::printf("%s\n", ok ? "save_module: saved, loaded and refused as expected" : "save_module: FAILED");
  return ok ? 0 : 1;
}
