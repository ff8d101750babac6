#include <cstdio>
#include <tinyformer/tinyformer.hpp>
using namespace tf;

struct TinyMLP : nn::Module<float> {  // logits = fc2(tanh(fc1(x))); parameters fc1.weight, fc1.bias, fc2.weight, ...
  Rng rng{0};
  nn::Linear<float> fc1{2, 16, /*bias=*/true, nn::InitScheme::xavier_uniform, rng};
  nn::Linear<float> fc2{16, 2, true, nn::InitScheme::xavier_uniform, rng};
  TinyMLP() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Var<float> forward(const Var<float>& x) { return fc2.forward(tanh(fc1.forward(x))); }
};

int main() {
  TinyMLP model;
  optim::AdamW<float> opt(model.named_parameters(), /*lr=*/0.05);
  const Var<float> x(Array<float>{{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  const IndexArray y = {0, 1, 1, 0};  // XOR, as two classes
  for (int step = 1; step <= 300; ++step) {
    const Var<float> loss = cross_entropy(model.forward(x), y);  // logits [4,2], targets [4]
    opt.zero_grad();
    loss.backward();  // fills every parameter's .grad()
    opt.step();
    if (step % 50 == 0) std::printf("step %3d  loss %.6f\n", step, loss.item());
  }
  return cross_entropy(model.forward(x), y).item() < 0.01 ? 0 : 1;  // exit status 0: XOR learned
}
