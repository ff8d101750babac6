#include "tinyformer/autograd/variable.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "tinyformer/autograd/profile.hpp"
#include "tinyformer/tensor/parallel.hpp"

namespace tf {

namespace {
thread_local bool g_grad_enabled = true;
constexpr std::size_t kMinValuesPerPiece = std::size_t{1} << 14;  // as kernels::add_arrays: 64 KiB of floats

// Refuses (before any gradient changes) a graph in which an op's input changed in place after the op read it, or an
// op's result after the op made it: its backward would read the new values. torch's rule, checked here for every
// input and result rather than only the ones a backward keeps.
template <class S>
void check_versions(const std::vector<Node<S>*>& order) {
  for (const Node<S>* n : order) {
    if (n->backward && n->version != 0)  // an op result changed in place: its backward may read what it made
      throw std::runtime_error(fmt::format(
          "backward(): the result of '{}' (shape {}) was changed in place after '{}' made it (version {}), so its "
          "gradient would use the new values; change it after backward(), or change a copy (x.clone() in Python)",
          n->op, shape_str(to_shape(n->value.shape())), n->op, n->version));
    for (std::size_t i = 0; i < n->inputs.size(); ++i) {
      const Node<S>& in = *n->inputs[i];
      if (in.version == n->input_versions[i]) continue;
      throw std::runtime_error(fmt::format(
          "backward(): input {} of '{}' (a {} value of shape {}) was changed in place after '{}' read it (version {}, "
          "{} when read), so its gradient would use the new values; change it after backward(), or change a copy "
          "(x.clone() in Python, a new Var in C++)",
          i, n->op, in.op, shape_str(to_shape(in.value.shape())), n->op, in.version, n->input_versions[i]));
    }
  }
}

// A value's hooks on its gradient, in the order registered (over a copy of the list: a hook may remove one).
template <class S>
void run_grad_hooks(Node<S>& n) {
  const auto hooks = n.grad_hooks;
  for (const auto& hook : hooks) {
    hook.second(n.grad);
    if (n.grad.shape() != n.value.shape())
      throw std::invalid_argument(fmt::format(
          "backward(): a gradient hook on a '{}' value of shape {} left a gradient of shape {}; it must keep the "
          "value's shape",
          n.op, shape_str(to_shape(n.value.shape())), shape_str(to_shape(n.grad.shape()))));
  }
}

// Propagates the gradients from the last node of `order` to the first (each op result once all of its consumers have
// added theirs), running each value's hooks first, and frees each op result's gradient once it has flowed on.
template <class S>
void sweep(const std::vector<Node<S>*>& order, const Node<S>* root) {
  profile::Profiler* const profiler = profile::active();
  const bool timed = profiler != nullptr;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node<S>* n = *it;
    if (!n->has_grad) continue;
    if (!n->grad_hooks.empty()) run_grad_hooks(*n);
    if (!n->backward) continue;
    const auto t0 = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    n->backward(*n);
    // every consumer of n ran before it, so n's gradient is spent: free it now (lower peak memory)
    if (!n->retain_grad && n != root) {
      n->grad = Array<S>();
      n->has_grad = false;
    }
    if (timed)
      profiler->add_backward(n->op,
                             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
}

// For a sweep with hooks in its graph: the leaves' gradients taken out before it, so that each leaf's hook sees this
// sweep's alone; commit() adds them back. Without commit() (a hook or a backward threw), every leaf is left as it was.
template <class S>
class HeldLeafGrads {
 public:
  explicit HeldLeafGrads(const std::vector<Node<S>*>& order) : order_(order) {
    for (Node<S>* n : order_)
      if (!n->backward && n->has_grad) {
        held_.emplace_back(n, std::move(n->grad));
        n->grad = Array<S>();
        n->has_grad = false;
      }
  }
  HeldLeafGrads(const HeldLeafGrads&) = delete;
  HeldLeafGrads& operator=(const HeldLeafGrads&) = delete;
  ~HeldLeafGrads() {
    if (committed_) return;
    for (Node<S>* n : order_)
      if (!n->backward) {
        n->grad = Array<S>();
        n->has_grad = false;
      }
    for (auto& [n, g] : held_) {
      n->grad = std::move(g);
      n->has_grad = true;
    }
  }
  void commit() {
    for (auto& [n, g] : held_) {
      if (n->has_grad) {
        add_values(g.size(), g.data(), n->grad.data());  // this sweep's + what it held: the same bits either way
      } else {
        n->grad = std::move(g);
        n->has_grad = true;
      }
    }
    committed_ = true;
  }

 private:
  const std::vector<Node<S>*>& order_;
  std::vector<std::pair<Node<S>*, Array<S>>> held_;
  bool committed_ = false;
};

std::atomic<std::uint64_t> g_next_hook_id{1};
}  // namespace

template <class S>
void add_values(std::size_t n, const S* g, S* out) {
  parallel_for(n, kMinValuesPerPiece, [=](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) out[i] += g[i];
  });
}

template <class S>
void copy_values(std::size_t n, const S* g, S* out) {
  parallel_for(n, kMinValuesPerPiece, [=](std::size_t i0, std::size_t i1) { std::copy(g + i0, g + i1, out + i0); });
}

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

template <class S>
Node<S>::~Node() {
  // Take over the inputs that only this node keeps alive and free them in a loop, not by recursion.
  std::vector<NodePtr<S>> pending;
  pending.swap(inputs);
  while (!pending.empty()) {
    NodePtr<S> p = std::move(pending.back());
    pending.pop_back();
    if (p && p.use_count() == 1) {
      for (auto& q : p->inputs) pending.push_back(std::move(q));
      p->inputs.clear();
    }
  }
}

template <class S>
Var<S>::Var(Array<S> value, bool requires_grad) : node_(std::make_shared<Node<S>>()) {
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
}

template <class S>
void Var<S>::throw_undefined() {
  throw std::invalid_argument(
      "Var: this Var is undefined (default-constructed, it holds no value); construct it from an Array or assign an "
      "op's result to it first");
}

template <class S>
void check_input(const Var<S>& v, std::string_view op, std::string_view arg) {
  if (!v.defined())
    throw std::invalid_argument(fmt::format(
        "{}: argument '{}' is an undefined Var (default-constructed, no value); give it a tensor", op, arg));
  if (v.numel() == 0)
    throw std::invalid_argument(fmt::format("{}: argument '{}' has shape {}, which holds no elements; every dimension "
                                            "must be at least 1",
                                            op, arg, shape_str(v.shape())));
}

void check_input(const IndexArray& ids, std::string_view op, std::string_view arg) {
  if (ids.size() == 0)
    throw std::invalid_argument(fmt::format("{}: argument '{}' has shape {}, which holds no elements; every dimension "
                                            "must be at least 1",
                                            op, arg, shape_str(to_shape(ids.shape()))));
}

template <class S>
std::size_t Var<S>::size(long axis) const {
  return checked().value.shape()[normalize_axis(axis, dim(), "Var::size")];
}

template <class S>
S Var<S>::item() const {
  if (numel() != 1)
    throw std::invalid_argument(
        fmt::format("item(): the value has shape {}, not a single element", shape_str(shape())));
  return *checked().value.data();
}

template <class S>
Array<S>& Var<S>::mutable_value() {
  Node<S>& n = checked();
  ++n.version;
  return n.value;
}

template <class S>
Var<S>& Var<S>::set_requires_grad(bool on) {
  if (!is_leaf()) throw std::logic_error("set_requires_grad: only leaves (not op results) can change it");
  if (detached_) {
    if (!on) return *this;
    *this = Var<S>(node_->value, true);  // torch's x.detach().requires_grad_(): a new leaf (here with its own copy)
    return *this;
  }
  node_->requires_grad = on;
  return *this;
}

template <class S>
Var<S> Var<S>::detach() const {
  checked();
  Var<S> out(node_);
  out.detached_ = true;
  return out;
}

template <class S>
NodePtr<S> Var<S>::recorded_node() const {
  const Node<S>& n = checked();
  if (!detached_ || (!n.requires_grad && n.inputs.empty())) return node_;
  auto copy = std::make_shared<Node<S>>();
  copy->value = n.value;
  return copy;
}

template <class S>
const Array<S>& Var<S>::grad() const {
  if (!has_grad())
    throw std::logic_error(
        fmt::format("grad(): no gradient has reached this {} value (shape {})", node_->op, shape_str(shape())));
  return node_->grad;
}

template <class S>
Array<S>& Var<S>::mutable_grad() {
  if (detached_) throw std::logic_error("mutable_grad(): a detached handle has no gradient (detach() leaves autograd)");
  if (!checked().has_grad) {
    node_->grad = xt::zeros<S>(node_->value.shape());
    node_->has_grad = true;
  }
  return node_->grad;
}

template <class S>
std::uint64_t Var<S>::register_hook(GradHook<S> fn) {
  if (!requires_grad())
    throw std::logic_error(fmt::format("register_hook(): this {} value (shape {}) requires no grad{}, so no gradient "
                                       "will reach a hook on it",
                                       checked().op, shape_str(shape()), detached_ ? " (a detached handle)" : ""));
  if (!fn) throw std::invalid_argument("register_hook(): the function is empty");
  const std::uint64_t id = g_next_hook_id.fetch_add(1);
  node_->grad_hooks.emplace_back(id, std::move(fn));
  return id;
}

template <class S>
void Var<S>::remove_hook(std::uint64_t id) {
  auto& hooks = checked().grad_hooks;
  hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [id](const auto& h) { return h.first == id; }), hooks.end());
}

template <class S>
void Var<S>::zero_grad() {
  checked();
  if (detached_) return;  // a detached handle has no gradient to drop
  node_->grad = Array<S>();
  node_->has_grad = false;
}

template <class S>
void Var<S>::backward(BackwardOptions opts) const {
  if (numel() != 1)
    throw std::invalid_argument(fmt::format(
        "backward(): the value has shape {}; pass a seed gradient of that shape, or reduce it to one element",
        shape_str(shape())));
  Array<S> seed = xt::ones<S>(node_->value.shape());
  backward(seed, opts);
}

template <class S>
void Var<S>::backward(const Array<S>& seed, BackwardOptions opts) const {
  if (to_shape(seed.shape()) != shape())
    throw std::invalid_argument(fmt::format("backward(): seed shape {} differs from the value's shape {}",
                                            shape_str(to_shape(seed.shape())), shape_str(shape())));
  if (node_->graph_released)
    throw std::logic_error("backward(): the graph behind this value was already released by an earlier backward(); "
                           "set BackwardOptions::retain_graph in the first call to differentiate the same graph twice");
  if (!requires_grad())
    throw std::logic_error(detached_ ? "backward(): this value is detached (detach() or .data): it requires no grad"
                                     : "backward(): this value does not require grad (no input of it requires grad, "
                                       "or it was computed inside a NoGradGuard)");

  // Iterative post-order DFS over nodes that require grad: every node comes after all of its inputs.
  std::vector<Node<S>*> order;
  std::unordered_set<Node<S>*> visited;
  std::vector<std::pair<Node<S>*, std::size_t>> stack{{node_.get(), 0}};
  visited.insert(node_.get());
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->inputs.size()) {
      Node<S>* child = n->inputs[next++].get();
      if (child->requires_grad && visited.insert(child).second) stack.emplace_back(child, 0);
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }

  check_versions(order);
  // Op results start every sweep with no gradient (only leaves accumulate across calls).
  for (Node<S>* n : order)
    if (n->backward) {
      n->grad = Array<S>();
      n->has_grad = false;
    }
  if (std::none_of(order.begin(), order.end(), [](const Node<S>* n) { return !n->grad_hooks.empty(); })) {
    accumulate_grad(*node_, seed);
    sweep(order, node_.get());
  } else {
    HeldLeafGrads<S> held(order);
    accumulate_grad(*node_, seed);
    sweep(order, node_.get());
    held.commit();
  }

  for (Node<S>* n : order) {
    if (!n->backward) continue;  // leaves keep their gradient
    if (!n->retain_grad) {
      n->grad = Array<S>();
      n->has_grad = false;
    }
    if (!opts.retain_graph) {
      n->backward = nullptr;
      n->inputs.clear();
      n->input_versions.clear();
      n->graph_released = true;
    }
  }
}

template <class S>
Var<S> make_result(Array<S> value, const std::vector<Var<S>>& inputs, std::function<void(Node<S>&)> backward,
                   const char* op) {
  auto node = std::make_shared<Node<S>>();
  node->value = std::move(value);
  node->op = op;
  bool needs = false;
  if (g_grad_enabled)
    for (const auto& in : inputs) needs = needs || in.requires_grad();
  if (needs) {
    node->requires_grad = true;
    node->inputs.reserve(inputs.size());
    node->input_versions.reserve(inputs.size());
    for (const auto& in : inputs) {
      node->inputs.push_back(in.recorded_node());
      node->input_versions.push_back(node->inputs.back()->version);
    }
    node->backward = std::move(backward);
  }
  if (profile::Profiler* profiler = profile::active()) profiler->end_forward_op(op);
  return Var<S>(std::move(node));
}

template void add_values(std::size_t, const float*, float*);
template void add_values(std::size_t, const double*, double*);
template void copy_values(std::size_t, const float*, float*);
template void copy_values(std::size_t, const double*, double*);
template struct Node<float>;
template struct Node<double>;
template class Var<float>;
template class Var<double>;
template void check_input(const Var<float>&, std::string_view, std::string_view);
template void check_input(const Var<double>&, std::string_view, std::string_view);
template Var<float> make_result(Array<float>, const std::vector<Var<float>>&, std::function<void(Node<float>&)>,
                                const char*);
template Var<double> make_result(Array<double>, const std::vector<Var<double>>&, std::function<void(Node<double>&)>,
                                 const char*);

}  // namespace tf
