#pragma once
// Define-by-run reverse mode. A Var is a cheap handle (shared pointer) to a Node that holds the value,
// the accumulated gradient and, for op results, the inputs and a backward function.
//
// Rules (see docs/api.md, "The rules"):
// - backward() walks an iterative topological order; gradients accumulate (+=) into every input, so a
//   value used twice gets both contributions. Leaves keep .grad until zero_grad().
// - After backward() the graph is released: op results drop their inputs and backward functions, and
//   their gradients are freed. A second backward() through a released graph throws std::logic_error;
//   backward(opts) with opts.retain_graph = true keeps the graph so it can be differentiated again (gradients then
//   accumulate once more into the leaves). An op result's gradient is freed after the sweep unless
//   retain_grad() was called on it; then it holds that latest sweep's gradient.
// - Inside a NoGradGuard scope ops record nothing: results are constants.
// - Every change of a node's values (mutable_value()) bumps its version. An op result records its inputs' versions,
//   and backward() refuses, before it changes any gradient, a graph whose op read a value that changed since, or
//   whose op's own result changed after the op made it.
// - detach() gives a handle on the same values outside autograd (torch's detach() and .data): no gradient, a leaf.
// - register_hook(fn) runs fn on a value's whole gradient of each sweep (torch's Tensor.register_hook): an op result's
//   before it flows on to the inputs, a leaf's (this sweep's alone) before it is added to what .grad holds. A sweep
//   with hooks in its graph is all or nothing: when a hook throws, every leaf's gradient is left as it was.
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include <xtensor/xnoalias.hpp>
#include <xtensor/xstorage.hpp>

#include "tinyformer/tensor/tensor.hpp"

namespace tf {

template <class S>
struct Node;
template <class S>
using NodePtr = std::shared_ptr<Node<S>>;

// A function on a value's gradient in a sweep: it may change it in place or assign an array of the same shape.
template <class S>
using GradHook = std::function<void(Array<S>& grad)>;

template <class S>
struct Node {
  Array<S> value;
  Array<S> grad;  // meaningful only when has_grad
  bool has_grad = false;
  bool requires_grad = false;
  bool retain_grad = false;     // keep this op result's gradient after backward (leaves always keep theirs)
  bool graph_released = false;  // an op result whose graph a backward() already freed
  std::uint32_t version = 0;    // how many times the values were changed in place (mutable_value())
  const char* op = "leaf";
  std::vector<NodePtr<S>> inputs;
  xt::svector<std::uint32_t, 4> input_versions;  // each input's version when this op read it (inline up to 4)
  // Propagates self.grad into self.inputs (each input that requires grad), accumulating.
  std::function<void(Node& self)> backward;
  std::vector<std::pair<std::uint64_t, GradHook<S>>> grad_hooks;  // Var::register_hook's, by id, in that order

  bool is_leaf() const { return !backward && !graph_released; }
  ~Node();  // iterative release of the input chain: a 100,000-op graph must not overflow the stack
};

// out[i] += g[i] and out[i] = g[i] for i < n, split over the thread pool when n is large (elementwise: the same bits
// at any thread count). A residual connection's backward copies and adds arrays of the whole activation's size.
template <class S>
void add_values(std::size_t n, const S* g, S* out);
template <class S>
void copy_values(std::size_t n, const S* g, S* out);

// Adds `g` (same shape as n.value) to n.grad. A temporary array is taken over on first use (no copy).
template <class S>
void accumulate_grad(Node<S>& n, Array<S>&& g) {
  if (!n.requires_grad) return;
  if (!n.has_grad) {
    n.grad = std::move(g);
    n.has_grad = true;
  } else if (n.grad.shape() == g.shape()) {
    add_values(g.size(), g.data(), n.grad.data());
  } else {
    xt::noalias(n.grad) += g;
  }
}

// The same for an array the caller keeps: copied on first use.
template <class S>
void accumulate_grad(Node<S>& n, const Array<S>& g) {
  if (!n.requires_grad) return;
  if (!n.has_grad) {
    n.grad = Array<S>::from_shape(g.shape());
    n.has_grad = true;
    copy_values(g.size(), g.data(), n.grad.data());
  } else if (n.grad.shape() == g.shape()) {
    add_values(g.size(), g.data(), n.grad.data());
  } else {
    xt::noalias(n.grad) += g;
  }
}

// The same for any xtensor expression, evaluated into n.grad.
template <class S, class E>
void accumulate_grad(Node<S>& n, const E& g) {
  if (!n.requires_grad) return;
  if (!n.has_grad) {
    n.grad = g;
    n.has_grad = true;
  } else {
    xt::noalias(n.grad) += g;
  }
}

// For backward functions that write an input's gradient in place (e.g. as a BLAS output): makes sure
// n.grad exists, allocated but not initialised when n had no gradient yet, and returns the factor to
// apply to what it holds: 0 (overwrite) for a fresh gradient, 1 (accumulate) otherwise.
template <class S>
S prepare_grad(Node<S>& n) {
  if (n.has_grad) return S(1);
  n.grad = Array<S>::from_shape(n.value.shape());
  n.has_grad = true;
  return S(0);
}

struct BackwardOptions {
  bool retain_graph = false;
};

template <class S>
class Var {
 public:
  Var() = default;
  explicit Var(Array<S> value, bool requires_grad = false);
  explicit Var(NodePtr<S> node) : node_(std::move(node)) {}

  // Every accessor below throws std::invalid_argument on an undefined (default-constructed) Var.
  bool defined() const { return node_ != nullptr; }
  const Array<S>& value() const { return checked().value; }
  // For optimizers, initialisers and in-place changes: not recorded, and bumps the version, so that a backward()
  // through an op that read the old values is refused rather than given the new ones.
  Array<S>& mutable_value();
  Shape shape() const { return to_shape(checked().value.shape()); }
  std::size_t dim() const { return checked().value.dimension(); }
  std::size_t size(long axis) const;
  std::size_t numel() const { return checked().value.size(); }
  S item() const;  // the value of a one-element tensor

  bool requires_grad() const { return !detached_ && checked().requires_grad; }
  // On a detached handle, turning it on makes this handle a new leaf holding a copy of the values.
  Var& set_requires_grad(bool on);
  bool has_grad() const { return !detached_ && checked().has_grad; }
  bool is_leaf() const { return detached_ || checked().is_leaf(); }
  // The same values outside autograd, not copied: requires no gradient and has none; an op that reads it records a
  // constant (a copy of the values, when the node itself is part of a graph); a change through it changes this Var.
  Var detach() const;
  bool is_detached() const { return detached_; }
  const Array<S>& grad() const;  // throws std::logic_error when no gradient has reached this value
  Array<S>& mutable_grad();
  void zero_grad();  // drops the gradient (like PyTorch's set_to_none)
  void retain_grad() { checked().retain_grad = true; }
  const char* op() const { return checked().op; }
  // Runs fn on this value's gradient in every later backward() (the rules above), after the hooks registered before it.
  // Returns the id that remove_hook takes. Throws std::logic_error on a value that requires no grad (or a detached
  // handle): no gradient would reach it.
  std::uint64_t register_hook(GradHook<S> fn);
  void remove_hook(std::uint64_t id);  // an id already removed (or unknown) is ignored, as torch's handle.remove()

  // Reverse-mode sweep from this value. The no-argument form needs a one-element value (seed 1).
  void backward(BackwardOptions opts = {}) const;
  void backward(const Array<S>& seed, BackwardOptions opts = {}) const;

  Node<S>& node() const { return checked(); }
  const NodePtr<S>& node_ptr() const { return node_; }
  // The node an op result records for this input: the node itself, or for a detached handle on a node that is part
  // of a graph, a constant holding a copy of its values (the graph must not reach the original through it).
  NodePtr<S> recorded_node() const;

 private:
  Node<S>& checked() const {
    if (!node_) throw_undefined();
    return *node_;
  }
  [[noreturn]] static void throw_undefined();
  NodePtr<S> node_;
  bool detached_ = false;
};

// The precondition of every op on each tensor argument: throws std::invalid_argument naming `op` and `arg` when `v`
// is undefined (a default-constructed Var) or holds no elements (a dimension of size 0).
template <class S>
void check_input(const Var<S>& v, std::string_view op, std::string_view arg);
// The same for an op's index argument (token ids, targets): it must hold at least one element.
void check_input(const IndexArray& ids, std::string_view op, std::string_view arg);

// Builds an op result. Records `inputs` and `backward` only when grad mode is on and some input
// requires grad; otherwise the result is a constant.
template <class S>
Var<S> make_result(Array<S> value, const std::vector<Var<S>>& inputs, std::function<void(Node<S>&)> backward,
                   const char* op);

// Grad mode (thread-local). NoGradGuard switches it off for its scope.
bool grad_enabled();
// Switches grad mode for this thread from here on (torch.set_grad_enabled); a NoGradGuard restores what it found.
void set_grad_enabled(bool on);
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

extern template class Var<float>;
extern template class Var<double>;
extern template struct Node<float>;
extern template struct Node<double>;

}  // namespace tf
