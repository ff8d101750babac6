// Cross-entropy with logits: fused, stable log-softmax + negative log-likelihood, mean over kept targets.
// logits [..., V] (e.g. [B, T, V]) are read as N contiguous rows of V; targets [...] hold N class ids.
// A row whose target equals ignore_index is left out; n = the number of rows kept. Per kept row with target t:
//   m = max_k x_k     lse = m + log(sum_k exp(x_k - m))     loss_row = lse - x_t   (= -log softmax_t)
//   loss = (1/n) sum over kept rows of loss_row                                  -> scalar []
//   dx_row = dloss (softmax(x_row) - onehot(t)) / n on kept rows, 0 on ignored rows
// When every target is ignored (n = 0) the loss is defined as 0 and its gradient is zero (PyTorch gives NaN);
// a batch of padding then contributes nothing instead of poisoning the run.
#include <cstddef>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "tinyformer/ops/kernels/softmax_rows.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf {

// logits [..., V], targets [...] -> scalar loss []
template <class S>
Var<S> cross_entropy(const Var<S>& logits, const IndexArray& targets, Index ignore_index) {
  check_input(logits, "cross_entropy", "logits");
  check_input(targets, "cross_entropy", "targets");
  const Shape lshape = logits.shape();
  const Shape tshape = to_shape(targets.shape());
  if (lshape.empty())
    throw std::invalid_argument(
        "cross_entropy: logits are a 0-d value; they need a last axis of V class scores [..., V]");
  const Shape expected(lshape.begin(), lshape.end() - 1);
  if (tshape != expected)
    throw std::invalid_argument(fmt::format(
        "cross_entropy: targets have shape {} but logits of shape {} need targets of shape {} (the logits without "
        "their last axis V)",
        shape_str(tshape), shape_str(lshape), shape_str(expected)));
  const std::size_t V = lshape.back();
  if (V == 0)
    throw std::invalid_argument(
        fmt::format("cross_entropy: logits of shape {} have V = 0 classes; V must be at least 1", shape_str(lshape)));
  const std::size_t N = targets.size();
  const Index* t = targets.data();
  std::size_t kept = 0;
  for (std::size_t r = 0; r < N; ++r) {
    if (t[r] == ignore_index) continue;
    if (t[r] < 0 || static_cast<std::size_t>(t[r]) >= V)
      throw std::invalid_argument(fmt::format(
          "cross_entropy: target {} at position {} of targets {} is out of range for V = {} classes (valid: 0..{}, "
          "or ignore_index = {})",
          t[r], position_str(r, tshape), shape_str(tshape), V, static_cast<long long>(V) - 1, ignore_index));
    ++kept;
  }

  // probs = softmax over each row, kept for the backward (the row loops: kernels::cross_entropy_forward). A row with
  // a NaN, or with nothing above -inf, has no softmax: its loss and gradient are NaN (as in PyTorch), for the caller
  // to detect (the trainer stops or skips the step), not an exception mid-step.
  Array<S> probs = Array<S>::from_shape(logits.value().shape());
  const double total = kernels::cross_entropy_forward<S>(N, V, logits.value().data(), t, ignore_index, probs.data());
  Array<S> out = Array<S>::from_shape({});
  out() = kept == 0 ? S(0) : static_cast<S>(total / static_cast<double>(kept));

  return make_result<S>(
      std::move(out), {logits},
      [targets, ignore_index, N, V, kept, probs = std::move(probs)](Node<S>& self) {
        Node<S>& nx = *self.inputs[0];
        if (!nx.requires_grad) return;
        // dx = (probs - onehot) * dloss / n, into a new array (with retain_graph this backward may run again)
        Array<S> dx = Array<S>::from_shape(probs.shape());
        const S coef = kept == 0 ? S(0) : self.grad() / static_cast<S>(kept);
        kernels::cross_entropy_backward<S>(N, V, probs.data(), targets.data(), ignore_index, coef, dx.data());
        accumulate_grad(nx, std::move(dx));
      },
      "cross_entropy");
}

template Var<float> cross_entropy<float>(const Var<float>&, const IndexArray&, Index);
template Var<double> cross_entropy<double>(const Var<double>&, const IndexArray&, Index);

}  // namespace tf
