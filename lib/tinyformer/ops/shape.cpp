// Shape ops: permute / transpose, reshape, split and concat. Every result is a contiguous row-major copy.
//   permute:  out[i_perm[0], ..., i_perm[n-1]] = a[i_0, ..., i_{n-1}]     da = permute(dout, inverse(perm))
//   reshape:  same elements in the same row-major order                    da = reshape(dout, a's shape)
//   split:    piece k = a[..., off_k : off_k + size_k, ...] along axis     da[..., slice_k, ...] += dpiece_k
//   concat:   out = parts side by side along axis                          dpart_k = dout[..., slice_k, ...]
//   slice:    out = a[..., begin:end, ...] along axis                       da[..., begin:end, ...] += dout
//   index:    out = a[..., i, ...] (axis removed) = reshape(slice(a, axis, i, i + 1))
// split and concat see a row-major tensor around `axis` as [outer, len, inner] and move whole
// contiguous slabs of (rows * inner) elements per outer index.
#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xnoalias.hpp>
#include <xtensor/xstrided_view.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

// ---- permute / transpose

template <class S>
Var<S> permute_impl(const Var<S>& a, const std::vector<std::size_t>& perm, const char* op) {
  const Shape in_shape = a.shape();
  const std::size_t rank = in_shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (std::size_t i = 0; valid && i < rank; ++i) {
    valid = perm[i] < rank && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  if (!valid)
    throw std::invalid_argument(fmt::format(
        "{}: ({}) is not a permutation of the axes of a tensor of shape {}; expected each of 0..{} exactly once", op,
        fmt::join(perm, ", "), shape_str(in_shape), static_cast<long>(rank) - 1));

  Shape out_shape(rank);
  std::vector<std::size_t> inverse(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    out_shape[i] = in_shape[perm[i]];
    inverse[perm[i]] = i;  // output axis i came from input axis perm[i]
  }
  Array<S> out = Array<S>::from_shape(out_shape);
  xt::noalias(out) = xt::transpose(a.value(), perm);
  return make_result<S>(
      std::move(out), {a},
      [inverse](Node<S>& self) {
        // dout has the permuted shape; the inverse permutation puts every axis back where a had it
        accumulate_grad(*self.inputs[0], xt::transpose(self.grad, inverse));
      },
      op);
}

// ---- split / concat

// For every outer index: rows [src_off, src_off + rows) of src ([outer, src_len, inner]) go to rows
// [dst_off, dst_off + rows) of dst ([outer, dst_len, inner]); copied, or added when Add.
template <bool Add, class S>
void move_rows(const S* src, std::size_t src_len, std::size_t src_off, S* dst, std::size_t dst_len, std::size_t dst_off,
               std::size_t rows, std::size_t outer, std::size_t inner) {
  const std::size_t n = rows * inner;
  for (std::size_t o = 0; o < outer; ++o) {
    const S* from = src + (o * src_len + src_off) * inner;
    S* to = dst + (o * dst_len + dst_off) * inner;
    if (Add)
      for (std::size_t i = 0; i < n; ++i) to[i] += from[i];
    else
      std::copy(from, from + n, to);
  }
}

std::string long_list_str(const std::vector<long>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

}  // namespace

// a [...] -> [a.shape[perm[0]], ..., a.shape[perm[n-1]]]
template <class S>
Var<S> permute(const Var<S>& a, const std::vector<std::size_t>& perm) {
  check_input(a, "permute", "a");
  return permute_impl(a, perm, "permute");
}

// swaps two axes (negative axes count from the end), e.g. [B,T,H,D] with (1,2) -> [B,H,T,D]
template <class S>
Var<S> transpose(const Var<S>& a, long axis0, long axis1) {
  check_input(a, "transpose", "a");
  const std::size_t i = normalize_axis(axis0, a.dim(), "transpose");
  const std::size_t j = normalize_axis(axis1, a.dim(), "transpose");
  std::vector<std::size_t> perm(a.dim());
  for (std::size_t k = 0; k < perm.size(); ++k) perm[k] = k;
  std::swap(perm[i], perm[j]);
  return permute_impl(a, perm, "transpose");
}

// a [...] (n elements) -> `shape` (n elements; one entry may be -1 and is then inferred)
template <class S>
Var<S> reshape(const Var<S>& a, const std::vector<long>& shape) {
  check_input(a, "reshape", "a");
  const Shape in_shape = a.shape();
  const std::size_t n = a.numel();
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("reshape: cannot reshape a tensor of shape {} ({} elements) into {}: {}",
                                             shape_str(in_shape), n, long_list_str(shape), why));
  };
  std::size_t known = 1, inferred_at = shape.size();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred_at != shape.size()) throw fail("at most one dimension may be -1");
      inferred_at = i;
    } else if (shape[i] < 0) {
      throw fail(fmt::format("dimension {} is {}; dimensions must be >= 0, or -1 to infer one", i, shape[i]));
    } else if (__builtin_mul_overflow(known, static_cast<std::size_t>(shape[i]), &known)) {
      throw fail("the product of its dimensions overflows 64 bits");
    }
  }
  Shape out_shape(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (i != inferred_at) out_shape[i] = static_cast<std::size_t>(shape[i]);
  if (inferred_at != shape.size()) {
    if (known == 0 || n % known != 0)
      throw fail(fmt::format("{} elements cannot be split evenly by the other dimensions (product {})", n, known));
    out_shape[inferred_at] = n / known;
  } else if (known != n) {
    throw fail(fmt::format("the new shape holds {} elements", known));
  }

  Array<S> out = a.value();
  out.reshape(out_shape);
  return make_result<S>(
      std::move(out), {a},
      [in_shape](Node<S>& self) { accumulate_grad(*self.inputs[0], xt::reshape_view(self.grad, in_shape)); },
      "reshape");
}

// a [..., L, ...] (L on `axis`) -> pieces [..., sizes[k], ...] with sum(sizes) = L
template <class S>
std::vector<Var<S>> split(const Var<S>& a, long axis, const std::vector<std::size_t>& sizes) {
  check_input(a, "split", "a");
  const std::size_t ax = normalize_axis(axis, a.dim(), "split");
  const Shape in_shape = a.shape();
  const AxisSlabs s = axis_slabs(in_shape, ax);
  std::size_t total = 0;
  bool wraps = false;
  for (auto size : sizes) wraps = wraps || __builtin_add_overflow(total, size, &total);
  if (wraps)
    throw std::invalid_argument(fmt::format("split: sizes ({}) add up to more than 64 bits hold; they must add up to "
                                            "{}, the length of axis {} of a tensor of shape {}",
                                            fmt::join(sizes, ", "), s.len, ax, shape_str(in_shape)));
  if (total != s.len)
    throw std::invalid_argument(fmt::format(
        "split: sizes ({}) add up to {}, but axis {} of a tensor of shape {} has length {}; they must add up to {}",
        fmt::join(sizes, ", "), total, ax, shape_str(in_shape), s.len, s.len));

  std::vector<Var<S>> pieces;
  pieces.reserve(sizes.size());
  std::size_t offset = 0;
  for (auto size : sizes) {
    Shape piece_shape = in_shape;
    piece_shape[ax] = size;
    Array<S> out = Array<S>::from_shape(piece_shape);
    move_rows<false>(a.value().data(), s.len, offset, out.data(), size, 0, size, s.outer, s.inner);
    // Each piece is its own op result: a piece whose gradient never arrives is never called and adds nothing.
    pieces.push_back(make_result<S>(
        std::move(out), {a},
        [s, offset, size](Node<S>& self) {
          Node<S>& x = *self.inputs[0];
          if (!x.requires_grad) return;
          if (!x.has_grad) {  // the first piece to arrive starts from a zero gradient of a's shape
            x.grad = xt::zeros<S>(x.value.shape());
            x.has_grad = true;
          }
          move_rows<true>(self.grad.data(), size, 0, x.grad.data(), s.len, offset, size, s.outer, s.inner);
        },
        "split"));
    offset += size;
  }
  return pieces;
}

// parts [..., L_k, ...] (equal except on `axis`) -> [..., sum_k L_k, ...]
template <class S>
Var<S> concat(const std::vector<Var<S>>& parts, long axis) {
  for (std::size_t k = 0; k < parts.size(); ++k) check_input(parts[k], "concat", fmt::format("parts[{}]", k));
  if (parts.empty()) throw std::invalid_argument("concat: needs at least one part, got none");
  const Shape first = parts[0].shape();
  const std::size_t ax = normalize_axis(axis, first.size(), "concat");
  Shape out_shape = first;
  out_shape[ax] = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const Shape sk = parts[k].shape();
    bool match = sk.size() == first.size();
    for (std::size_t i = 0; match && i < sk.size(); ++i) match = i == ax || sk[i] == first[i];
    if (!match)
      throw std::invalid_argument(
          fmt::format("concat: part {} has shape {} but part 0 has shape {}; all parts need the same rank and the same "
                      "dimensions except on axis {}",
                      k, shape_str(sk), shape_str(first), ax));
    out_shape[ax] += sk[ax];
  }

  const AxisSlabs s = axis_slabs(out_shape, ax);
  Array<S> out = Array<S>::from_shape(out_shape);
  std::vector<std::size_t> offsets(parts.size());
  std::size_t offset = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const std::size_t len = parts[k].shape()[ax];
    move_rows<false>(parts[k].value().data(), len, 0, out.data(), s.len, offset, len, s.outer, s.inner);
    offsets[k] = offset;
    offset += len;
  }
  return make_result<S>(
      std::move(out), parts,
      [s, ax, offsets](Node<S>& self) {
        for (std::size_t k = 0; k < self.inputs.size(); ++k) {
          Node<S>& p = *self.inputs[k];
          if (!p.requires_grad) continue;
          const std::size_t len = p.value.shape()[ax];
          // dpart_k = dout[..., offsets[k] : offsets[k] + len, ...], added straight into p's gradient
          if (!p.has_grad) {
            p.grad = Array<S>::from_shape(p.value.shape());
            move_rows<false>(self.grad.data(), s.len, offsets[k], p.grad.data(), len, 0, len, s.outer, s.inner);
            p.has_grad = true;
          } else {
            move_rows<true>(self.grad.data(), s.len, offsets[k], p.grad.data(), len, 0, len, s.outer, s.inner);
          }
        }
      },
      "concat");
}

// a [..., L, ...] (L on `axis`) -> [..., end - begin, ...]
template <class S>
Var<S> slice(const Var<S>& a, long axis, long begin, long end) {
  check_input(a, "slice", "a");
  const Shape in_shape = a.shape();
  const std::size_t ax = normalize_axis(axis, in_shape.size(), "slice");
  const AxisSlabs s = axis_slabs(in_shape, ax);
  const long len = static_cast<long>(s.len);
  const long b = begin < 0 ? begin + len : begin, e = end < 0 ? end + len : end;
  if (b < 0 || e > len || b >= e)
    throw std::invalid_argument(fmt::format("slice: begin {} and end {} on axis {} of a tensor of shape {}: need 0 <= "
                                            "begin < end <= {} (negative values count from the end)",
                                            begin, end, ax, shape_str(in_shape), len));
  const std::size_t offset = static_cast<std::size_t>(b), size = static_cast<std::size_t>(e - b);
  Shape out_shape = in_shape;
  out_shape[ax] = size;
  Array<S> out = Array<S>::from_shape(out_shape);
  move_rows<false>(a.value().data(), s.len, offset, out.data(), size, 0, size, s.outer, s.inner);
  return make_result<S>(
      std::move(out), {a},
      [s, offset, size](Node<S>& self) {
        Node<S>& x = *self.inputs[0];
        if (!x.requires_grad) return;
        if (!x.has_grad) {
          x.grad = xt::zeros<S>(x.value.shape());
          x.has_grad = true;
        }
        move_rows<true>(self.grad.data(), size, 0, x.grad.data(), s.len, offset, size, s.outer, s.inner);
      },
      "slice");
}

// a [..., L, ...] -> [..., ...] (the axis removed)
template <class S>
Var<S> index(const Var<S>& a, long axis, long i) {
  check_input(a, "index", "a");
  const Shape in_shape = a.shape();
  const std::size_t ax = normalize_axis(axis, in_shape.size(), "index");
  const long len = static_cast<long>(in_shape[ax]);
  if (i < -len || i >= len)
    throw std::invalid_argument(
        fmt::format("index: {} is out of range for axis {} of a tensor of shape {}: need -{} <= "
                    "i < {}",
                    i, ax, shape_str(in_shape), len, len));
  const long at = i < 0 ? i + len : i;
  std::vector<long> out_shape;
  for (std::size_t k = 0; k < in_shape.size(); ++k)
    if (k != ax) out_shape.push_back(static_cast<long>(in_shape[k]));
  return reshape(slice(a, static_cast<long>(ax), at, at + 1), out_shape);
}

// NOLINTBEGIN(bugprone-macro-parentheses): S is a type, and the >> closing Var<S> inside std::vector<...> is no shift
#define TF_INSTANTIATE(S)                                                                      \
  template Var<S> permute<S>(const Var<S>&, const std::vector<std::size_t>&);                  \
  template Var<S> transpose<S>(const Var<S>&, long, long);                                     \
  template Var<S> reshape<S>(const Var<S>&, const std::vector<long>&);                         \
  template std::vector<Var<S>> split<S>(const Var<S>&, long, const std::vector<std::size_t>&); \
  template Var<S> concat<S>(const std::vector<Var<S>>&, long);                                 \
  template Var<S> slice<S>(const Var<S>&, long, long, long);                                   \
  template Var<S> index<S>(const Var<S>&, long, long);
// NOLINTEND(bugprone-macro-parentheses)
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
