// Reductions as torch has them, functions and methods: sum, mean, var, std over None, one dim or a tuple of dims;
// max and min (everything; along a dim as (values, indices); of two tensors), argmax and argmin; any and all.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "tensor.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::python {

namespace {

// torch.return_types.max and .min: named tuples (values, indices), made once in the module's return_types.
py::handle g_max_type, g_min_type, g_topk_type, g_sort_type;

double variance_correction(const py::object& unbiased, const py::object& correction) {
  if (!unbiased.is_none() && !correction.is_none())
    throw std::invalid_argument("var / std: give unbiased= or correction=, not both");
  if (!correction.is_none()) return py::cast<double>(correction);
  return unbiased.is_none() || py::cast<bool>(unbiased) ? 1.0 : 0.0;
}

Tensor sum_t(const Tensor& a, const py::object& dim, bool keepdim) {
  const std::optional<std::vector<long>> dims = dims_argument(dim);
  const Tensor x = a.kind == DType::boolean ? converted(a, DType::int64) : a;  // a sum of bools counts them
  py::gil_scoped_release release;
  return keeping_dtype(x, [&](const auto& v) { return dims ? sum(v, *dims, keepdim) : sum(v); });
}

Tensor mean_t(const Tensor& a, const py::object& dim, bool keepdim) {
  const std::optional<std::vector<long>> dims = dims_argument(dim);
  py::gil_scoped_release release;
  return on_floating(a, [&](const auto& v) { return dims ? mean(v, *dims, keepdim) : mean(v); });
}

template <bool Deviation>
Tensor spread_t(const Tensor& a, const py::object& dim, const py::object& unbiased, bool keepdim,
                const py::object& correction) {
  const std::optional<std::vector<long>> dims = dims_argument(dim);
  const double c = variance_correction(unbiased, correction);
  py::gil_scoped_release release;
  return on_floating(a, [&](const auto& v) {
    if (Deviation) return dims ? std_dev(v, *dims, c, keepdim) : std_dev(v, c);
    return dims ? var(v, *dims, c, keepdim) : var(v, c);
  });
}

// torch.max / torch.min: of everything (dim None), along an int dim (values, indices), or of two tensors.
template <bool Largest>
py::object extreme_t(const Tensor& a, const py::object& dim, bool keepdim) {
  py::detail::make_caster<Tensor> caster;
  const bool of_two = caster.load(dim, false);
  if (of_two || dim.is_none()) {
    Tensor out;
    {
      py::gil_scoped_release release;
      if (of_two)  // elementwise, as maximum / minimum
        out = visit2(a, py::detail::cast_op<const Tensor&>(caster),
                     [](const auto& x, const auto& y) { return Largest ? maximum(x, y) : minimum(x, y); });
      else
        out = keeping_dtype(a, [](const auto& v) { return Largest ? max(v) : min(v); });
    }
    return py::cast(std::move(out));
  }
  const long d = py::cast<long>(dim);
  Tensor values;
  IndexArray indices;
  {
    py::gil_scoped_release release;
    values = keeping_dtype(a, [&](const auto& v) {
      auto r = Largest ? max(v, d, keepdim) : min(v, d, keepdim);
      indices = std::move(r.indices);
      return r.values;
    });
  }
  return (Largest ? g_max_type : g_min_type)(values, from_indices(indices));
}

// torch.topk: (values, indices) of the k largest (or smallest) entries along dim, sorted (sorted=False is accepted and
// sorts all the same, which torch allows).
py::object topk_t(const Tensor& a, long k, long dim, bool largest, bool /*sorted*/) {
  if (k < 1) throw std::invalid_argument(fmt::format("topk: k must be 1 or more, got {}", k));
  Tensor values;
  Array<std::int64_t> indices;
  {
    py::gil_scoped_release release;
    const Tensor x = a.kind == DType::boolean ? converted(a, DType::int64) : a;  // bools ranked as 0 and 1
    values = keeping_dtype(x, [&](const auto& v) {
      auto r = topk(v, static_cast<std::size_t>(k), dim, largest);
      indices = std::move(r.indices);
      return r.values;
    });
  }
  return g_topk_type(values, from_array(xt::cast<double>(indices), DType::int64));
}

// torch.sort: (values, indices) along dim, ascending (descending=True: largest first) - topk of every entry.
py::object sort_t(const Tensor& a, long dim, bool descending, bool /*stable*/) {
  const long n = visit(a, [&](const auto& v) { return v.dim() == 0 ? 1L : static_cast<long>(v.size(dim)); });
  const py::object r = topk_t(a, n, dim, descending, true);
  return g_sort_type(r.attr("values"), r.attr("indices"));
}

Tensor argsort_t(const Tensor& a, long dim, bool descending, bool stable) {
  return py::cast<Tensor>(sort_t(a, dim, descending, stable).attr("indices"));
}

Tensor cumsum_t(const Tensor& a, long dim) {
  const Tensor x = a.kind == DType::boolean ? converted(a, DType::int64) : a;  // torch: bools count as int64
  py::gil_scoped_release release;
  return keeping_dtype(x, [&](const auto& v) { return cumsum(v, dim); });
}

Tensor logsumexp_t(const Tensor& a, const py::object& dim, bool keepdim) {
  const std::vector<long> dims = dims_argument(dim).value_or(std::vector<long>{});
  py::gil_scoped_release release;
  return on_floating(a, [&](const auto& v) { return logsumexp(v, dims, keepdim); });
}

// torch.amax / amin over dims (None: all), defined below.
template <bool Largest>
Tensor extreme_values_t(const Tensor& a, const py::object& dim, bool keepdim);

// torch.norm / Tensor.norm over everything or dims: p=2 ("fro", None) is the library's norm (its gradient 0 where it is
// 0); p=1 sum |x|, inf max |x|, -inf min |x|, 0 the count of nonzero entries, any other p (sum |x|^p)^(1/p), composed
// of the library's ops (their gradients).
Tensor norm_t(const Tensor& a, const py::object& p, const py::object& dim, bool keepdim) {
  if (py::isinstance<py::str>(p) && py::cast<std::string>(p) != "fro")
    throw std::invalid_argument(
        fmt::format("norm: p='{}' is not here; give a number or 'fro'", py::cast<std::string>(p)));
  const double order = p.is_none() || py::isinstance<py::str>(p) ? 2.0 : py::cast<double>(p);
  std::vector<long> dims = dims_argument(dim).value_or(std::vector<long>{});
  const long rank = visit(a, [](const auto& v) { return static_cast<long>(v.dim()); });
  if (dims.empty())
    for (long d = 0; d < rank; ++d) dims.push_back(d);
  const Tensor x = floating(a);
  if (order == 2.0) {
    py::gil_scoped_release release;
    return on_floating(x, [&](const auto& v) { return norm(v, dims, keepdim); });
  }
  const Tensor magnitude = visit(x, [](const auto& v) { return Tensor(abs(v)); });
  if (std::isinf(order)) {
    const py::tuple axes = py::cast(dims);
    return order > 0 ? extreme_values_t<true>(magnitude, axes, keepdim)
                     : extreme_values_t<false>(magnitude, axes, keepdim);
  }
  py::gil_scoped_release release;
  return visit(magnitude, [&](const auto& v) {
    using S = ScalarOfVar<decltype(v)>;
    if (order == 0.0)  // the count of nonzero entries, with gradient 0 (as torch's)
      return Tensor(add(sum(ne(v, scale(v, S(0))), dims, keepdim), scale(sum(v, dims, keepdim), S(0))));
    if (order == 1.0) return Tensor(sum(v, dims, keepdim));
    return Tensor(pow(sum(pow(v, static_cast<S>(order)), dims, keepdim), static_cast<S>(1.0 / order)));
  });
}

// torch.amax / amin: the largest (smallest) values over one dim or several (None or (): all), without indices.
template <bool Largest>
Tensor extreme_values_t(const Tensor& a, const py::object& dim, bool keepdim) {
  std::vector<long> dims = dims_argument(dim).value_or(std::vector<long>{});
  const long rank = visit(a, [](const auto& v) { return static_cast<long>(v.dim()); });
  if (dims.empty())
    for (long d = 0; d < rank; ++d) dims.push_back(d);
  for (long& d : dims) d = static_cast<long>(normalize_axis(d, static_cast<std::size_t>(rank), "amax"));
  std::sort(dims.rbegin(), dims.rend());  // the last first: the others keep their numbers
  py::gil_scoped_release release;
  return keeping_dtype(a, [&](const auto& v) {
    auto out = v;
    for (const long d : dims) out = (Largest ? max(out, d, keepdim) : min(out, d, keepdim)).values;
    return out;
  });
}

template <bool Largest>
Tensor extreme_index_t(const Tensor& a, const py::object& dim, bool keepdim) {
  const Tensor x = a.kind == DType::boolean ? converted(a, DType::int64) : a;
  IndexArray idx = visit(x, [&](const auto& v) {
    if (dim.is_none()) return Largest ? argmax(v) : argmin(v);
    const long d = py::cast<long>(dim);
    return Largest ? argmax(v, d, keepdim) : argmin(v, d, keepdim);
  });
  return from_indices(idx);
}

// torch.any / torch.all: a bool tensor, of everything (dim None) or along one dim, the max / min of the entries as
// bools (any nonzero entry is true); a constant, as torch's.
template <bool Any>
Tensor truth_t(const Tensor& a, const py::object& dim, bool keepdim) {
  const std::optional<long> d = dim.is_none() ? std::nullopt : std::optional<long>(py::cast<long>(dim));
  const Tensor x = converted(a, DType::boolean);
  py::gil_scoped_release release;
  return keeping_dtype(x, [&](const auto& v) {
    if (!d) return Any ? max(v) : min(v);
    return (Any ? max(v, *d, keepdim) : min(v, *d, keepdim)).values;
  });
}

void make_return_types(py::module_& m) {
  py::module_ types = m.def_submodule("return_types", "named tuples of (values, indices), as torch.return_types");
  py::object namedtuple = py::module_::import("collections").attr("namedtuple");
  types.attr("max") = namedtuple("max", py::make_tuple("values", "indices"));
  types.attr("min") = namedtuple("min", py::make_tuple("values", "indices"));
  types.attr("max").attr("__module__") = "tinyformer.return_types";
  types.attr("min").attr("__module__") = "tinyformer.return_types";
  types.attr("topk") = namedtuple("topk", py::make_tuple("values", "indices"));
  types.attr("topk").attr("__module__") = "tinyformer.return_types";
  g_max_type = types.attr("max");
  g_min_type = types.attr("min");
  g_topk_type = types.attr("topk");
  types.attr("sort") = namedtuple("sort", py::make_tuple("values", "indices"));
  types.attr("sort").attr("__module__") = "tinyformer.return_types";
  g_sort_type = types.attr("sort");
}

}  // namespace

void bind_reductions(py::module_& m, py::class_<Tensor>& t) {
  make_return_types(m);
  def_function_and_method(m, t, "topk", &topk_t, py::arg("input"), py::arg("k"), py::arg("dim") = -1,
                          py::arg("largest") = true, py::arg("sorted") = true,
                          "(values, indices) of the k largest entries along dim, largest first (smallest with "
                          "largest=False); NaN ranks above every number, ties keep their order");
  def_function_and_method(m, t, "sort", &sort_t, py::arg("input"), py::arg("dim") = -1, py::arg("descending") = false,
                          py::arg("stable") = false,
                          "(values, indices) along dim, smallest first (descending=True: largest first); topk of "
                          "every entry, so NaN ranks above every number and ties keep their order");
  def_function_and_method(m, t, "argsort", &argsort_t, py::arg("input"), py::arg("dim") = -1,
                          py::arg("descending") = false, py::arg("stable") = false, "sort's indices");
  def_function_and_method(m, t, "cumsum", &cumsum_t, py::arg("input"), py::arg("dim"),
                          "the running sum along dim (bools count as int64)");
  def_function_and_method(m, t, "logsumexp", &logsumexp_t, py::arg("input"), py::arg("dim"), py::arg("keepdim") = false,
                          "log(sum(exp(x))) over dim (an int or a tuple), without overflow");
  def_function_and_method(m, t, "norm", &norm_t, py::arg("input"), py::arg("p") = py::none(),
                          py::arg("dim") = py::none(), py::arg("keepdim") = false,
                          "the p-norm (2, 'fro' and None: the 2-norm) over everything or dim, with gradient");
  def_function_and_method(m, t, "amax", &extreme_values_t<true>, py::arg("input"), py::arg("dim") = py::tuple(),
                          py::arg("keepdim") = false, "the largest values over dim (an int or a tuple; () all)");
  def_function_and_method(m, t, "amin", &extreme_values_t<false>, py::arg("input"), py::arg("dim") = py::tuple(),
                          py::arg("keepdim") = false, "the smallest values over dim (an int or a tuple; () all)");
  def_function_and_method(m, t, "sum", &sum_t, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false, "over everything (dim None), one dim or a tuple of dims");
  def_function_and_method(m, t, "mean", &mean_t, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false, "over everything (dim None), one dim or a tuple of dims");
  def_function_and_method(m, t, "var", &spread_t<false>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("unbiased") = py::none(), py::arg("keepdim") = false, py::kw_only(),
                          py::arg("correction") = py::none(),
                          "sum (x - mean)^2 / (n - correction): correction 1 (unbiased, torch's default) unless "
                          "unbiased=False or correction= says otherwise");
  def_function_and_method(m, t, "std", &spread_t<true>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("unbiased") = py::none(), py::arg("keepdim") = false, py::kw_only(),
                          py::arg("correction") = py::none(), "sqrt(var), with var's arguments");
  def_function_and_method(m, t, "max", &extreme_t<true>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false,
                          "max(x): the largest value; max(x, dim): (values, indices) along dim; max(x, y): maximum");
  def_function_and_method(m, t, "min", &extreme_t<false>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false,
                          "min(x): the smallest value; min(x, dim): (values, indices) along dim; min(x, y): minimum");
  def_function_and_method(m, t, "argmax", &extreme_index_t<true>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false, "int64 indices; of the flattened tensor when dim is None");
  def_function_and_method(m, t, "argmin", &extreme_index_t<false>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false, "int64 indices; of the flattened tensor when dim is None");
  def_function_and_method(m, t, "any", &truth_t<true>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false,
                          "bool: whether any entry is nonzero (of everything or along dim)");
  def_function_and_method(m, t, "all", &truth_t<false>, py::arg("input"), py::arg("dim") = py::none(),
                          py::arg("keepdim") = false,
                          "bool: whether every entry is nonzero (of everything or along dim)");
}

}  // namespace tf::python
