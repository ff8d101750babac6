// Dims added, removed, stretched or stacked. All but expand are compositions of reshape, concat and index (whose
// backwards are theirs):
//   unsqueeze(a, axis)   reshape with a 1 inserted              squeeze: reshape without length-1 axes
//   flatten(a, s, e)     reshape with axes s..e merged into one
//   stack(parts, axis)   concat of the parts unsqueezed at axis  unbind(a, axis): index(a, axis, i) for each i
//   expand(a, sizes)     out = a broadcast to sizes (a copy)     da = sum_to_shape(dout, a's shape)
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xnoalias.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

std::vector<long> as_longs(const Shape& shape) { return std::vector<long>(shape.begin(), shape.end()); }

}  // namespace

// a [...] -> [..., 1, ...]
template <class S>
Var<S> unsqueeze(const Var<S>& a, long axis) {
  check_input(a, "unsqueeze", "a");
  const std::size_t at = normalize_axis(axis, a.dim() + 1, "unsqueeze");
  std::vector<long> shape = as_longs(a.shape());
  shape.insert(shape.begin() + static_cast<long>(at), 1);
  return reshape(a, shape);
}

template <class S>
Var<S> squeeze(const Var<S>& a) {
  check_input(a, "squeeze", "a");
  std::vector<long> shape;
  for (const std::size_t d : a.shape())
    if (d != 1) shape.push_back(static_cast<long>(d));
  return reshape(a, shape);
}

template <class S>
Var<S> squeeze(const Var<S>& a, long axis) {
  check_input(a, "squeeze", "a");
  const std::size_t at = normalize_axis(axis, a.dim(), "squeeze");
  if (a.shape()[at] != 1) return reshape(a, as_longs(a.shape()));  // torch: a no-op (a new node all the same)
  std::vector<long> shape = as_longs(a.shape());
  shape.erase(shape.begin() + static_cast<long>(at));
  return reshape(a, shape);
}

// a [d0, ..., ds, ..., de, ...] -> [d0, ..., ds * ... * de, ...]; a 0-d a becomes [1]
template <class S>
Var<S> flatten(const Var<S>& a, long start_axis, long end_axis) {
  check_input(a, "flatten", "a");
  if (a.dim() == 0) return reshape(a, {1});
  const std::size_t s = normalize_axis(start_axis, a.dim(), "flatten");
  const std::size_t e = normalize_axis(end_axis, a.dim(), "flatten");
  if (s > e)
    throw std::invalid_argument(
        fmt::format("flatten: the start axis {} comes after the end axis {} (of a tensor of shape {})", start_axis,
                    end_axis, shape_str(a.shape())));
  const Shape in = a.shape();
  std::vector<long> shape(in.begin(), in.begin() + static_cast<long>(s));
  shape.push_back(-1);
  shape.insert(shape.end(), in.begin() + static_cast<long>(e) + 1, in.end());
  return reshape(a, shape);
}

// parts [...] of one shape -> [..., n, ...]
template <class S>
Var<S> stack(const std::vector<Var<S>>& parts, long axis) {
  if (parts.empty()) throw std::invalid_argument("stack: needs at least one part, got none");
  for (std::size_t k = 0; k < parts.size(); ++k) check_input(parts[k], "stack", fmt::format("parts[{}]", k));
  const Shape first = parts[0].shape();
  const std::size_t at = normalize_axis(axis, first.size() + 1, "stack");
  std::vector<Var<S>> lifted;
  lifted.reserve(parts.size());
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (parts[k].shape() != first)
      throw std::invalid_argument(fmt::format("stack: part {} has shape {} but part 0 has shape {}; all parts need "
                                              "the same shape",
                                              k, shape_str(parts[k].shape()), shape_str(first)));
    lifted.push_back(unsqueeze(parts[k], static_cast<long>(at)));
  }
  return concat(lifted, static_cast<long>(at));
}

// a [..., L, ...] -> L tensors [..., ...]
template <class S>
std::vector<Var<S>> unbind(const Var<S>& a, long axis) {
  check_input(a, "unbind", "a");
  const std::size_t at = normalize_axis(axis, a.dim(), "unbind");
  std::vector<Var<S>> out;
  out.reserve(a.shape()[at]);
  for (std::size_t i = 0; i < a.shape()[at]; ++i) out.push_back(index(a, static_cast<long>(at), static_cast<long>(i)));
  return out;
}

// a [d...] -> sizes (len(sizes) >= rank; a's dims align with the last ones)
template <class S>
Var<S> expand(const Var<S>& a, const std::vector<long>& sizes) {
  check_input(a, "expand", "a");
  const Shape in = a.shape();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("expand: a tensor of shape {} cannot be expanded to [{}]: {}",
                                             shape_str(in), fmt::join(sizes, ", "), why));
  };
  if (sizes.size() < in.size()) throw fail("give at least as many sizes as the tensor has dims");
  const std::size_t lead = sizes.size() - in.size();
  Shape out_shape(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const long want = sizes[i];
    if (i < lead) {
      if (want < 1) throw fail(fmt::format("a new leading dim must be at least 1, got {}", want));
      out_shape[i] = static_cast<std::size_t>(want);
      continue;
    }
    const std::size_t have = in[i - lead];
    if (want == -1 || static_cast<std::size_t>(want) == have) {
      out_shape[i] = have;
    } else if (have == 1 && want >= 1) {
      out_shape[i] = static_cast<std::size_t>(want);
    } else {
      throw fail(
          fmt::format("dim {} has length {}; only a dim of length 1 stretches (-1 keeps a dim)", i - lead, have));
    }
  }
  Array<S> out = Array<S>::from_shape(out_shape);
  xt::noalias(out) = xt::broadcast(a.value(), out_shape);
  return make_result<S>(
      std::move(out), {a}, [in](Node<S>& self) { accumulate_grad(*self.inputs[0], sum_to_shape(self.grad, in)); },
      "expand");
}

// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, and the >> closing Var<S> inside std::vector<...> is no shift
#define TF_INSTANTIATE(S)                                      \
  template Var<S> unsqueeze<S>(const Var<S>&, long);           \
  template Var<S> squeeze<S>(const Var<S>&);                   \
  template Var<S> squeeze<S>(const Var<S>&, long);             \
  template Var<S> flatten<S>(const Var<S>&, long, long);       \
  template Var<S> stack<S>(const std::vector<Var<S>>&, long);  \
  template std::vector<Var<S>> unbind<S>(const Var<S>&, long); \
  template Var<S> expand<S>(const Var<S>&, const std::vector<long>&);
// NOLINTEND(bugprone-macro-parentheses)
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
