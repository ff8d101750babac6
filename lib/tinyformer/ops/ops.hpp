#pragma once
// Every differentiable op: forward and backward live side by side in ops/<name>.cpp, written once as a
// template on the scalar type and instantiated for float (training) and double (gradient checks).
// Letters in shape comments: B batch, T time, C channels, H heads, D head size, V vocab.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tinyformer/autograd/variable.hpp"
#include "tinyformer/tensor/random.hpp"

namespace tf {

// One declaration a line, so that the list reads as a table of the ops.
// clang-format off
// ---- elementwise.cpp: NumPy broadcasting; each input's gradient is sum-reduced back to its shape.
template <class S> Var<S> add(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> sub(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> mul(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> div(const Var<S>& a, const Var<S>& b);
// torch.remainder (Python's %): a - floor(a / b) b, with b's sign; da = dout, db = -dout floor(a / b)
template <class S> Var<S> remainder(const Var<S>& a, const Var<S>& b);
// torch.floor_divide (Python's //): floor(a / b), a constant (no gradient)
template <class S> Var<S> floor_divide(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> neg(const Var<S>& a);
template <class S> Var<S> scale(const Var<S>& a, S factor);  // a * factor, factor a constant
// Sums `g` over the broadcast axes so the result has `shape` (the backward of broadcasting).
template <class S> Array<S> sum_to_shape(const Array<S>& g, const Shape& shape);

template <class S> Var<S> operator+(const Var<S>& a, const Var<S>& b) { return add(a, b); }
template <class S> Var<S> operator-(const Var<S>& a, const Var<S>& b) { return sub(a, b); }
template <class S> Var<S> operator*(const Var<S>& a, const Var<S>& b) { return mul(a, b); }
template <class S> Var<S> operator/(const Var<S>& a, const Var<S>& b) { return div(a, b); }
template <class S> Var<S> operator-(const Var<S>& a) { return neg(a); }

// Arithmetic with a constant on either side (x * 0.5, 1.0 - x, x / 2, 2 + x for a Var<float> or Var<double>): the
// constant converts to the Var's scalar type (it takes no part in deducing S).
template <class S> Var<S> add_scalar(const Var<S>& a, S c);     // a + c;  da = dout
template <class S> Var<S> scalar_div(S c, const Var<S>& a);     // c / a;  da = -dout * c / a^2
template <class T> struct NonDeduced { using type = T; };
template <class S> using ScalarOf = typename NonDeduced<S>::type;
template <class S> Var<S> operator+(const Var<S>& a, ScalarOf<S> c) { return add_scalar(a, c); }
template <class S> Var<S> operator+(ScalarOf<S> c, const Var<S>& a) { return add_scalar(a, c); }
template <class S> Var<S> operator-(const Var<S>& a, ScalarOf<S> c) { return add_scalar(a, -c); }
template <class S> Var<S> operator-(ScalarOf<S> c, const Var<S>& a) { return add_scalar(neg(a), c); }
template <class S> Var<S> operator*(const Var<S>& a, ScalarOf<S> c) { return scale(a, c); }
template <class S> Var<S> operator*(ScalarOf<S> c, const Var<S>& a) { return scale(a, c); }
template <class S> Var<S> operator/(const Var<S>& a, ScalarOf<S> c) { return scale(a, S(1) / c); }  // a * (1/c)
template <class S> Var<S> operator/(ScalarOf<S> c, const Var<S>& a) { return scalar_div(c, a); }

// ---- matmul.cpp: through the one gemm wrapper, transposes as BLAS flags (no copies).
// a [..., M, K] (or [..., K, M] with trans_a), b [..., K, N] (or [..., N, K] with trans_b) -> [..., M, N].
// As torch.matmul: the batch dims broadcast ([2,3,4] @ [1,4,2] -> [2,3,2]; b 2-D is shared by every batch entry, a
// Linear layer, without a copy), a 1-D a is a row [1,K] and a 1-D b a column [K,1], that dim removed from the result
// ([K] @ [K] -> [], [M,K] @ [K] -> [M]). The transpose flags need 2-D or more on their side.
template <class S> Var<S> matmul(const Var<S>& a, const Var<S>& b, bool trans_a = false, bool trans_b = false);

// ---- linear.cpp: y = x W^T + b as one op (bias in the product's accumulator, gradients written straight
// into the parameters' .grad). x [..., in], weight [out, in], bias [out] or an undefined Var -> [..., out].
template <class S> Var<S> linear(const Var<S>& x, const Var<S>& weight, const Var<S>& bias);
// gelu(linear(x, weight, bias)) as one op (keeps the pre-activation; the backward works in place).
template <class S> Var<S> linear_gelu(const Var<S>& x, const Var<S>& weight, const Var<S>& bias);

// ---- shape.cpp: results are contiguous copies.
template <class S> Var<S> permute(const Var<S>& a, const std::vector<std::size_t>& perm);
template <class S> Var<S> transpose(const Var<S>& a, long axis0, long axis1);
// One entry of `shape` may be -1 (inferred).
template <class S> Var<S> reshape(const Var<S>& a, const std::vector<long>& shape);
// Splits along `axis` into pieces of the given sizes (they must add up to that axis' length).
template <class S> std::vector<Var<S>> split(const Var<S>& a, long axis, const std::vector<std::size_t>& sizes);
template <class S> Var<S> concat(const std::vector<Var<S>>& parts, long axis);
// a[..., begin:end, ...] along `axis` (Python's a[:, begin:end] for axis 1); negative axis, begin and end count from
// the end. After that 0 <= begin < end <= the axis' length, or std::invalid_argument. da: dout added into the slice.
template <class S> Var<S> slice(const Var<S>& a, long axis, long begin, long end);
// a[..., i, ...]: the entry i along `axis`, that axis removed (a [B,T,C], index(a, 1, -1) -> [B,C], the last step).
template <class S> Var<S> index(const Var<S>& a, long axis, long i);

// ---- dims.cpp: dims added, removed, stretched or stacked (built on reshape, concat and index, or their own op).
template <class S> Var<S> unsqueeze(const Var<S>& a, long axis);   // a 1 inserted at axis (-rank-1 <= axis <= rank)
template <class S> Var<S> squeeze(const Var<S>& a);                // every axis of length 1 removed
template <class S> Var<S> squeeze(const Var<S>& a, long axis);     // that axis removed if its length is 1
template <class S> Var<S> flatten(const Var<S>& a, long start_axis = 0, long end_axis = -1);
// parts of one shape -> [..., n, ...] with the new axis at `axis` (-rank-1 <= axis <= rank)
template <class S> Var<S> stack(const std::vector<Var<S>>& parts, long axis);
template <class S> std::vector<Var<S>> unbind(const Var<S>& a, long axis);  // the entries along axis, axis removed
// torch's expand: a stretched to `sizes` (new axes in front; -1 keeps an axis; only length-1 axes stretch) as a
// contiguous copy; da = dout summed over the stretched axes.
template <class S> Var<S> expand(const Var<S>& a, const std::vector<long>& sizes);

// ---- index.cpp: NumPy and PyTorch subscripts, a[1, :, ::2, None, ..., [0, 2]], and torch.take.
// One entry of a subscript, as libtorch's torch::indexing::TensorIndex: an integer (negative counts from the end),
// a slice with Python's rules (start, stop empty for the ends; any nonzero step, negative too as in NumPy), a new
// axis of length 1 (None), the ellipsis (...), an array of integer positions (advanced indexing: the arrays of one
// subscript broadcast together) or a mask (nonzero entries select; it covers as many axes as it has dims).
struct Slice {
  std::optional<long> start, stop;
  long step = 1;
};
struct TensorIndex {
  enum class Kind { integer, slice, new_axis, ellipsis, positions, mask };
  Kind kind = Kind::ellipsis;
  long integer = 0;
  Slice slice;
  Array<std::int64_t> values;  // positions, or the mask's entries
  TensorIndex(long i) : kind(Kind::integer), integer(i) {}  // NOLINT(google-explicit-constructor): a[{0, 2}]
  TensorIndex(int i) : TensorIndex(static_cast<long>(i)) {}  // NOLINT(google-explicit-constructor)
  TensorIndex(Slice s) : kind(Kind::slice), slice(s) {}     // NOLINT(google-explicit-constructor)
  static TensorIndex new_axis() { return TensorIndex(Kind::new_axis); }
  static TensorIndex ellipsis() { return TensorIndex(Kind::ellipsis); }
  static TensorIndex positions(Array<std::int64_t> p) { return TensorIndex(Kind::positions, std::move(p)); }
  static TensorIndex mask(Array<std::int64_t> m) { return TensorIndex(Kind::mask, std::move(m)); }

 private:
  explicit TensorIndex(Kind k, Array<std::int64_t> v = {}) : kind(k), values(std::move(v)) {}
};
// a[index...] with NumPy's result shape (advanced indices' dims where the first of them stands when they are side by
// side, else in front); da gets dout scatter-added at the positions read (a repeated position adds up). A subscript
// that selects nothing, an index out of range (IndexError) and a malformed one are refused, naming the entry.
template <class S> Var<S> index(const Var<S>& a, const std::vector<TensorIndex>& index);
// The flat row-major positions in an array of `shape` that a[index...] reads, in the result's shape.
Array<std::int64_t> index_positions(const Shape& shape, const std::vector<TensorIndex>& index);
// torch.take: a read as 1-D at `positions` (negative count from the end) -> positions' shape; da scatter-added.
template <class S> Var<S> take(const Var<S>& a, const Array<std::int64_t>& positions);
// torch.gather: out[i][j][k] = a[i][index[i][j][k]][k] for dim 1, and so for every dim: index has a's number of dims
// and, but along dim, sizes at most a's; its entries from 0 to a's size along dim - 1. da scatter-added.
template <class S> Var<S> gather(const Var<S>& a, long dim, const Array<std::int64_t>& index);
// torch.scatter_add: a with src[i][j][k] added at [i][index[i][j][k]][k] for dim 1, and so for every dim (repeated
// entries add up): index has a's and src's number of dims, sizes at most src's (and a's but along dim), entries from 0
// to a's size along dim - 1. da = dout; dsrc = dout gathered back at index.
template <class S> Var<S> scatter_add(const Var<S>& a, long dim, const Array<std::int64_t>& index, const Var<S>& src);
// torch.flip: a with the order of each of `dims` reversed; da flipped back.
template <class S> Var<S> flip(const Var<S>& a, const std::vector<long>& dims);
// torch.topk: the k largest (smallest) entries along dim, largest (smallest) first, NaN above every number, ties in
// their order; `indices` where they stand along dim. values' da scatter-added there.
template <class S>
struct TopK {
  Var<S> values;
  Array<std::int64_t> indices;
};
template <class S> TopK<S> topk(const Var<S>& a, std::size_t k, long dim = -1, bool largest = true);
// torch.Tensor.repeat: a tiled reps[d] times along each dim d (more counts than dims put dims of 1 in front); da is
// the sum over the tiles.
template <class S> Var<S> repeat(const Var<S>& a, const std::vector<long>& reps);

// ---- einsum.cpp: torch.einsum over letters ("bhqd,bhkd->bhqk"; without "->" the labels used once, alphabetical),
// composed of sum, permute, reshape, expand and matmul (their backwards); "..." for the remaining dims, right-aligned
// and broadcast from length 1 (torch's rule); a label twice in one operand (a diagonal) is refused.
template <class S> Var<S> einsum(const std::string& equation, const std::vector<Var<S>>& operands);

// ---- reduce.cpp: over all elements (-> []), one axis or a list of axes (negative count from the end; each once; an
// empty list means all, as torch).
template <class S> Var<S> sum(const Var<S>& a);                                   // all elements -> []
template <class S> Var<S> sum(const Var<S>& a, long axis, bool keepdim = false);
template <class S> Var<S> sum(const Var<S>& a, const std::vector<long>& axes, bool keepdim = false);
template <class S> Var<S> mean(const Var<S>& a);
template <class S> Var<S> mean(const Var<S>& a, long axis, bool keepdim = false);
template <class S> Var<S> mean(const Var<S>& a, const std::vector<long>& axes, bool keepdim = false);
// Variance over n reduced elements: sum (a - mean)^2 / (n - correction); correction 1 is torch's unbiased default,
// 0 NumPy's. n <= correction gives inf or nan, as torch. std_dev is its square root (torch.std).
template <class S> Var<S> var(const Var<S>& a, double correction = 1);
template <class S> Var<S> var(const Var<S>& a, const std::vector<long>& axes, double correction = 1, bool keepdim = false);
template <class S> Var<S> std_dev(const Var<S>& a, double correction = 1);
template <class S> Var<S> std_dev(const Var<S>& a, const std::vector<long>& axes, double correction = 1, bool keepdim = false);
// torch.cumsum: the running sum along one axis (a 0-d tensor: itself); da is the running sum of dout backwards.
template <class S> Var<S> cumsum(const Var<S>& a, long axis);
// torch.logsumexp: log sum exp(a) over the axes, without overflow (the max taken out first); da = softmax(a) dout.
template <class S> Var<S> logsumexp(const Var<S>& a, const std::vector<long>& axes, bool keepdim = false);
// torch.linalg.vector_norm with ord 2: sqrt(sum a^2) over the axes (an empty list: all); da = a / norm dout, and 0
// where the norm is 0 (as torch).
template <class S> Var<S> norm(const Var<S>& a, const std::vector<long>& axes, bool keepdim = false);

// ---- extrema.cpp: largest and smallest values (torch.max, min, argmax, argmin, maximum, minimum). A NaN is larger
// and smaller than any number (it propagates, as in torch); ties pick the first index.
template <class S> Var<S> max(const Var<S>& a);  // all elements -> []; ties share the gradient evenly
template <class S> Var<S> min(const Var<S>& a);
// Along one axis: the values and the index of each along it (torch.return_types.max); the gradient goes to that index.
template <class S> struct ValuesIndices { Var<S> values; IndexArray indices; };
template <class S> ValuesIndices<S> max(const Var<S>& a, long axis, bool keepdim = false);
template <class S> ValuesIndices<S> min(const Var<S>& a, long axis, bool keepdim = false);
template <class S> IndexArray argmax(const Var<S>& a);  // the flat index of the largest element -> []
template <class S> IndexArray argmin(const Var<S>& a);
template <class S> IndexArray argmax(const Var<S>& a, long axis, bool keepdim = false);
template <class S> IndexArray argmin(const Var<S>& a, long axis, bool keepdim = false);
// Elementwise, broadcast: where a == b each input gets half of dout (torch's rule).
template <class S> Var<S> maximum(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> minimum(const Var<S>& a, const Var<S>& b);

// ---- unary.cpp
template <class S> Var<S> exp(const Var<S>& a);
template <class S> Var<S> log(const Var<S>& a);
template <class S> Var<S> tanh(const Var<S>& a);
template <class S> Var<S> relu(const Var<S>& a);

// ---- math.cpp: elementwise maths beyond unary.cpp (torch.pow, sqrt, sigmoid, abs, clone, round, floor, sin, ...).
template <class S> Var<S> pow(const Var<S>& a, S exponent);        // a^p for any real p (NaN where a < 0 and p is not whole)
template <class S> Var<S> pow(const Var<S>& a, const Var<S>& b);   // a^b, broadcast: both differentiable
template <class S> Var<S> sqrt(const Var<S>& a);
template <class S> Var<S> sigmoid(const Var<S>& a);                 // 1 / (1 + e^-a)
template <class S> Var<S> abs(const Var<S>& a);                     // the derivative at 0 is taken as 0 (as torch)
template <class S> Var<S> clone(const Var<S>& a);                   // a copy that passes the gradient through
template <class S> Var<S> rsqrt(const Var<S>& a);                   // 1 / sqrt(a)
// torch.clamp: a held within [lo, hi] (either may be absent, not both; lo > hi gives hi); da = dout where
// lo <= a <= hi (as torch: the gradient passes at the bounds too). NaN stays NaN.
template <class S> Var<S> clamp(const Var<S>& a, std::optional<S> lo, std::optional<S> hi);
// torch.round (halves to even; decimals: rint(a 10^d) / 10^d, as torch), floor, ceil, trunc, sign (NaN stays NaN):
// steps, whose gradient is 0 (torch's rule); frac = a - trunc(a) passes dout through.
template <class S> Var<S> round(const Var<S>& a, int decimals = 0);
template <class S> Var<S> floor(const Var<S>& a);
template <class S> Var<S> ceil(const Var<S>& a);
template <class S> Var<S> trunc(const Var<S>& a);
template <class S> Var<S> sign(const Var<S>& a);
template <class S> Var<S> frac(const Var<S>& a);
// torch.sin, cos, tan, log1p (ln(1 + a), exact for small a), expm1 (e^a - 1, likewise) and erf, with their derivatives.
template <class S> Var<S> sin(const Var<S>& a);
template <class S> Var<S> cos(const Var<S>& a);
template <class S> Var<S> tan(const Var<S>& a);
template <class S> Var<S> log1p(const Var<S>& a);
template <class S> Var<S> expm1(const Var<S>& a);
template <class S> Var<S> erf(const Var<S>& a);

// ---- compare.cpp: torch.eq, ne, lt, le, gt, ge, broadcast -> 1 where the relation holds, else 0: a constant (no
// gradient flows through a comparison). A mask is such a tensor; any nonzero entry counts as true.
template <class S> Var<S> eq(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> ne(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> lt(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> le(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> gt(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> ge(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> isnan(const Var<S>& a);
template <class S> Var<S> isinf(const Var<S>& a);
template <class S> Var<S> isfinite(const Var<S>& a);
// torch.isclose: 1 where |a - b| <= atol + rtol |b| (inf equals inf of its sign; NaN equals NaN only with equal_nan).
template <class S> Var<S> isclose(const Var<S>& a, const Var<S>& b, double rtol = 1e-5, double atol = 1e-8,
                                  bool equal_nan = false);
template <class S> Var<S> logical_not(const Var<S>& a);
template <class S> Var<S> logical_and(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> logical_or(const Var<S>& a, const Var<S>& b);
template <class S> Var<S> logical_xor(const Var<S>& a, const Var<S>& b);
// cond, a, b broadcast together -> a where cond is nonzero, else b; each of a and b gets dout where it was chosen.
template <class S> Var<S> where(const Var<S>& cond, const Var<S>& a, const Var<S>& b);
// a with `value` where mask is nonzero (mask broadcasts to a's shape); da = dout where the mask is zero.
template <class S> Var<S> masked_fill(const Var<S>& a, const Var<S>& mask, S value);
// a [..., R, C] -> a with 0 above (tril) or below (triu) its `diagonal` in the last two axes (torch.tril, torch.triu:
// tril keeps column - row <= diagonal, triu keeps column - row >= diagonal); da = dout where kept.
template <class S> Var<S> tril(const Var<S>& a, long diagonal = 0);
template <class S> Var<S> triu(const Var<S>& a, long diagonal = 0);

// ---- count.cpp: counts over a tensor's values, constants as torch's (no gradient flows through a count).
// a [N] (whole numbers >= 0) -> [max(minlength, max(a) + 1)]: how often each value occurs, or the sum of weights [N]
// at its occurrences (in the weights' type).
template <class S> Var<S> bincount(const Var<S>& a, std::size_t minlength = 0);
template <class S, class W> Var<W> bincount(const Var<S>& a, const Var<W>& weights, std::size_t minlength = 0);
// The distinct values of a flattened, sorted (NaN last, as one value); inverse [a's shape]: each entry's position in
// values; counts: how often each occurs.
template <class S> struct Unique { Var<S> values, inverse, counts; };
template <class S> Unique<S> unique(const Var<S>& a);
// [bins]: how many of a's values fall in each of `bins` equal bins over [lo, hi] (hi in the last; values outside and
// NaN left out); lo = hi = 0 takes a's range (refused where NaN or inf is in a), and a range of one value is widened
// by 1 on each side (as torch).
template <class S> Var<S> histc(const Var<S>& a, std::size_t bins = 100, S lo = 0, S hi = 0);
// [n, a's ndim]: the coordinates of a's nonzero entries, in row-major order.
template <class S> Var<S> nonzero(const Var<S>& a);

// ---- gelu.cpp: GELU, tanh approximation (as nanoGPT / GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <class S> Var<S> gelu(const Var<S>& a);

// ---- swiglu.cpp: the gated MLP activation of LLaMA.
// SiLU (torch.nn.functional.silu): a * sigmoid(a)
template <class S> Var<S> silu(const Var<S>& a);
// x [..., 2H] = [gate | up] -> silu(gate) * up [..., H] (gate first: the first H rows of a fused c_fc [2H, C])
template <class S> Var<S> swiglu(const Var<S>& x);
// SwiGLU hidden width H for d_model C: 2 * mlp_ratio * C / 3 (integer division) rounded up to a multiple of 8,
// LLaMA's 2/3 rule, so that c_fc [2H, C] + c_proj [C, H] hold about the parameters of a GELU MLP of ratio
// mlp_ratio. E.g. C = 64, ratio 4 -> 170 -> 176. (0 when 2 * mlp_ratio * C < 3.)
constexpr std::size_t swiglu_hidden(std::size_t d_model, std::size_t mlp_ratio) {
  return (2 * mlp_ratio * d_model / 3 + 7) / 8 * 8;
}

// ---- softmax.cpp: over the last axis, max-subtracted (stable); -inf entries get weight 0.
template <class S> Var<S> softmax(const Var<S>& a);
template <class S> Var<S> log_softmax(const Var<S>& a);
// Scores [..., Tq, Tk]: entries with key j > query i become -inf (lower-triangular keep, as np.tril), so
// column 0 is always kept and no row is ever fully masked.
template <class S> Var<S> causal_mask(const Var<S>& scores);

// The eps of layer_norm and rms_norm unless given (torch's LayerNorm default): nn::Norm's.
inline constexpr double kNormEps = 1e-5;
// ---- layer_norm.cpp: x [..., C], weight [C], bias [C]; normalised over the last axis (biased variance).
template <class S> Var<S> layer_norm(const Var<S>& x, const Var<S>& weight, const Var<S>& bias, S eps = S(kNormEps));
// ---- rms_norm.cpp: x [..., C], weight [C] (no bias); y = x / sqrt(mean(x^2) + eps) * weight over the last axis.
template <class S> Var<S> rms_norm(const Var<S>& x, const Var<S>& weight, S eps = S(kNormEps));

// ---- embedding.cpp: weight [V, C], ids [...] -> [..., C]; the gradient is scatter-added (repeats add up).
template <class S> Var<S> embedding(const Var<S>& weight, const IndexArray& ids);

// ---- cross_entropy.cpp: logits [..., V], targets [...] (same leading shape) -> scalar mean over the
// targets that are not `ignore_index`. Fused log-softmax + NLL. A row holding a NaN or only -inf gives a NaN
// loss and gradient (as PyTorch does), so that non-finite values surface where the caller checks for them.
template <class S> Var<S> cross_entropy(const Var<S>& logits, const IndexArray& targets, Index ignore_index = -1);

// ---- dropout.cpp: in training, zeroes each element with probability p and scales the rest by 1/(1-p)
// (the mask drawn from `rng`); identity when !training or p == 0.
template <class S> Var<S> dropout(const Var<S>& a, S p, bool training, Rng& rng);

// ---- fused_attention.cpp: fused causal multi-head self-attention with a hand-written backward (the fast path;
// nn/self_attention composes the same maths from the ops above as the readable reference).
// qkv [B,T,3C] holds q, k, v side by side on the last axis, each split into H heads of D = C/H columns.
//   y_h = dropout(softmax(causal_mask(q_h k_h^T / sqrt(D)))) v_h       y [B,T,C] = heads side by side
// Grouped-query attention (Llama 2; n_kv_head = 1: multi-query): qkv [B,T,(H+2Hkv)D] holds the H q heads, then
// Hkv k heads, then Hkv v heads; q head h reads k/v head h / (H/Hkv). n_kv_head 0 means n_head (the layout above).
// Dropout draws one rng.uniform() per weight in [B,H,T,T] row-major order, like dropout() on the weights.
// When `weights` is not null it receives the attention weights before dropout, [B,H,T,T].
// The op keeps P [B,H,T,T] for its backward when that takes at most keep_limit_bytes (default 32 MB); above it only
// the dropout mask is kept (a byte a weight) and the backward computes P again, to the same bits. A limit of 0
// always recomputes (the tests use that).
inline constexpr std::size_t kDefaultAttentionKeepBytes = std::size_t{32} << 20;
struct AttentionOptions {
  std::size_t n_head = 1;
  double dropout = 0;     // in [0, 1); applied only when training
  bool training = false;
  std::size_t keep_limit_bytes = kDefaultAttentionKeepBytes;
  std::size_t n_kv_head = 0;  // key/value heads, a divisor of n_head; 0: n_head
};
template <class S>
Var<S> causal_self_attention(const Var<S>& qkv, const AttentionOptions& options, Rng& rng,
                             Array<S>* weights = nullptr);

// ---- cached_attention.cpp: the same attention for decoding, with a cache of keys and values (no gradient).
// k and v [Hkv, capacity, D] (keys after rope, if any), the first `length` positions filled.
template <class S>
struct KVCache {
  Array<S> k, v;
  std::size_t length = 0;
};
template <class S> KVCache<S> make_kv_cache(std::size_t n_head, std::size_t capacity, std::size_t head_size);
// qkv [1,n,3C] (or [1,n,(H+2Hkv)D]) holds positions cache.length .. cache.length + n - 1: their keys and values are appended to the
// cache (std::length_error when they do not fit) and each query attends to every cached position up to its own.
// -> y [1,n,C], a constant: the rows causal_self_attention gives for these positions in eval mode (up to rounding).
// options.dropout, training and keep_limit_bytes are not used.
template <class S>
Var<S> causal_self_attention_cached(const Var<S>& qkv, KVCache<S>& cache, const AttentionOptions& options);

// ---- rope.cpp: rotary position embedding of the q and k heads of qkv [B,T,3C] (v untouched) -> [B,T,3C]
// (with n_kv_head: qkv [B,T,(H+2Hkv)D], as causal_self_attention reads it).
// Row t is position pos0 + t; head pairs (x_i, x_{i+D/2}) turn by (pos0 + t) * base^(-2i/D) (rotate_half,
// as GPT-NeoX / HF LLaMA). D = C / n_head must be even.
template <class S>
Var<S> rotary_qk(const Var<S>& qkv, std::size_t n_head, double base = 10000.0, std::size_t pos0 = 0,
                 std::size_t n_kv_head = 0);

// clang-format on

}  // namespace tf
