// Counts over a tensor's values: constants, as torch's (no gradient flows through a count).
//   bincount(a, n)            a [N] whole numbers >= 0 -> [max(n, max(a) + 1)]: how often each value occurs
//   bincount(a, w, n)         the same with the sum of w [N] at each value's occurrences
//   unique(a)                 the distinct values of a flattened, sorted (NaN last, once); inverse [a's shape], counts
//   histc(a, bins, lo, hi)    [bins]: the values in [lo, hi] by equal bins, hi in the last, NaN left out;
//                             lo = hi = 0: a's range (refused with NaN or inf in a, as torch)
//   nonzero(a)                [n, a's ndim]: the coordinates of the nonzero entries, row-major
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/memory.hpp"

namespace tf {

namespace {

template <class S>
Var<S> constant(Array<S> values, const char* op) {
  return make_result<S>(std::move(values), {}, nullptr, op);
}

// The number of bins a's values ask for (max + 1, at least minlength), after checking them: 1-D, whole, >= 0.
template <class S>
std::size_t bins_of(const Array<S>& a, std::size_t minlength) {
  if (a.dimension() != 1)
    throw std::invalid_argument(fmt::format("bincount: input must be 1-D, got {}-D", a.dimension()));
  double largest = -1;
  for (const S v : a) {
    if (!(v >= 0) || v != std::floor(v))
      throw std::invalid_argument(fmt::format("bincount: input must hold whole numbers >= 0, got {}", v));
    largest = std::max(largest, static_cast<double>(v));
  }
  const double bins = std::max(largest + 1, static_cast<double>(minlength));
  const double available = available_memory();
  if (available > 0 && bins * sizeof(double) > available)
    throw std::invalid_argument(fmt::format("bincount: the value {} asks for {} bins ({}), more than this machine has "
                                            "available ({})",
                                            largest, bins, format_bytes(bins * sizeof(double)),
                                            format_bytes(available)));
  return static_cast<std::size_t>(bins);
}

// Whether x sorts before y: by value, NaN after every number (and equal to NaN).
template <class S>
bool before(S x, S y) {
  return std::isnan(y) ? !std::isnan(x) : x < y;
}

}  // namespace

template <class S>
Var<S> bincount(const Var<S>& a, std::size_t minlength) {
  const Array<S>& ids = a.value();
  Array<S> counts = xt::zeros<S>({bins_of(ids, minlength)});
  for (const S v : ids) counts(static_cast<std::size_t>(v)) += 1;
  return constant(std::move(counts), "bincount");
}

template <class S, class W>
Var<W> bincount(const Var<S>& a, const Var<W>& weights, std::size_t minlength) {
  const Array<S>& ids = a.value();
  const Array<W>& w = weights.value();
  if (w.shape() != ids.shape())
    throw std::invalid_argument(fmt::format("bincount: weights must have the input's shape [{}], got [{}]",
                                            fmt::join(ids.shape(), ", "), fmt::join(w.shape(), ", ")));
  Array<W> sums = xt::zeros<W>({bins_of(ids, minlength)});
  for (std::size_t i = 0; i < ids.size(); ++i) sums(static_cast<std::size_t>(ids.data()[i])) += w.data()[i];
  return constant(std::move(sums), "bincount");
}

template <class S>
Unique<S> unique(const Var<S>& a) {
  const Array<S>& x = a.value();
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return before(x.data()[i], x.data()[j]); });
  std::vector<S> values;
  std::vector<S> counts;
  Array<S> inverse = Array<S>::from_shape(x.shape());
  for (const std::size_t i : order) {
    const S v = x.data()[i];
    if (values.empty() || before(values.back(), v)) {
      values.push_back(v);
      counts.push_back(0);
    }
    counts.back() += 1;
    inverse.data()[i] = static_cast<S>(values.size() - 1);
  }
  const auto as_array = [](const std::vector<S>& v) {
    Array<S> out = Array<S>::from_shape({v.size()});
    std::copy(v.begin(), v.end(), out.begin());
    return out;
  };
  return {constant(as_array(values), "unique"), constant(std::move(inverse), "unique"),
          constant(as_array(counts), "unique")};
}

template <class S>
Var<S> histc(const Var<S>& a, std::size_t bins, S lo, S hi) {
  if (bins < 1) throw std::invalid_argument("histc: bins must be >= 1, got 0");
  const Array<S>& x = a.value();
  if (lo == 0 && hi == 0 && x.size() > 0) {  // torch: the data's own range, which NaN or inf makes unusable
    lo = std::numeric_limits<S>::infinity();
    hi = -lo;
    for (const S v : x) {
      if (std::isnan(v)) {
        lo = hi = v;
        break;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (!std::isfinite(lo) || !std::isfinite(hi))
      throw std::invalid_argument(
          fmt::format("histc: the input's range [{}, {}] is not finite; give min and max to count the rest", lo, hi));
  }
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo <= hi))
    throw std::invalid_argument(fmt::format("histc: min {} and max {} must be finite with min <= max", lo, hi));
  if (lo == hi) {  // as torch: a range of one value is widened by one on each side
    lo -= 1;
    hi += 1;
  }
  // Bin k holds [edge(k), edge(k + 1)), the last one its upper edge too; the position from the value is corrected
  // against the edges where rounding put it one off.
  const auto edge = [&](std::size_t k) { return lo + (hi - lo) * static_cast<S>(k) / static_cast<S>(bins); };
  Array<S> counts = xt::zeros<S>({bins});
  for (const S v : x) {
    if (!(v >= lo && v <= hi)) continue;  // outside the range, or NaN
    auto bin = std::min(static_cast<std::size_t>((v - lo) / (hi - lo) * static_cast<S>(bins)), bins - 1);
    if (bin > 0 && v < edge(bin)) --bin;
    if (bin + 1 < bins && v >= edge(bin + 1)) ++bin;
    counts(bin) += 1;
  }
  return constant(std::move(counts), "histc");
}

template <class S>
Var<S> nonzero(const Var<S>& a) {
  const Array<S>& x = a.value();
  const std::size_t rank = x.dimension();
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x.data()[i] != 0) at.push_back(i);
  Array<S> out = Array<S>::from_shape({at.size(), rank});
  for (std::size_t n = 0; n < at.size(); ++n) {
    std::size_t rest = at[n];
    for (std::size_t d = rank; d-- > 0;) {
      out(n, d) = static_cast<S>(rest % x.shape()[d]);
      rest /= x.shape()[d];
    }
  }
  return constant(std::move(out), "nonzero");
}

#define TF_INSTANTIATE(S)                                                        \
  template Var<S> bincount(const Var<S>&, std::size_t);                          \
  template Var<float> bincount(const Var<S>&, const Var<float>&, std::size_t);   \
  template Var<double> bincount(const Var<S>&, const Var<double>&, std::size_t); \
  template Unique<S> unique(const Var<S>&);                                      \
  template Var<S> histc(const Var<S>&, std::size_t, S, S);                       \
  template Var<S> nonzero(const Var<S>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
