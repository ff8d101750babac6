// Shape ops and subscripts, as functions and methods with torch's signatures: reshape / view, permute, transpose, t,
// T, unsqueeze, squeeze, flatten, expand, split, chunk, cat, stack, unbind, take, x[...] and iteration. Each calls
// the library's op (ops/ops.hpp); a subscript is parsed here into the library's TensorIndex entries.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <pybind11/stl.h>
#include <xtensor/xoperation.hpp>

#include "tensor.hpp"
#include "tinyformer/ops/ops.hpp"

namespace tf::python {

// An index array (a list, NumPy array or tensor of ints or bools) as a TensorIndex.
static TensorIndex array_index(const py::handle& item, std::size_t entry) {
  py::array values;
  py::detail::make_caster<Tensor> caster;
  if (caster.load(item, false)) {
    const Tensor& t = py::detail::cast_op<const Tensor&>(caster);
    if (t.is_floating())
      throw py::index_error(
          fmt::format("a tensor used as an index must be int64 or bool, got {} (entry {})", t.dtype(), entry));
    values = to_numpy(t);
  } else {
    values = py::module_::import("numpy").attr("asarray")(item);
  }
  const char kind = values.dtype().kind();
  if (kind != 'b' && kind != 'i' && kind != 'u' && values.size() > 0)
    throw py::index_error(fmt::format("entry {} of the subscript is an array of {}: only integer and bool arrays "
                                      "index",
                                      entry, std::string(py::str(values.dtype()))));
  Array<std::int64_t> a = to_array<std::int64_t>(values);
  return kind == 'b' ? TensorIndex::mask(std::move(a)) : TensorIndex::positions(std::move(a));
}

static std::optional<long> slice_end(const py::handle& v) {
  if (v.is_none()) return std::nullopt;
  return py::cast<long>(v);
}

std::vector<TensorIndex> subscript(const py::handle& key) {
  py::tuple items = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  std::vector<TensorIndex> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const py::handle item = items[i];
    if (item.is_none()) {
      out.push_back(TensorIndex::new_axis());
    } else if (item.ptr() == Py_Ellipsis) {
      out.push_back(TensorIndex::ellipsis());
    } else if (PySlice_Check(item.ptr())) {
      const py::object step = item.attr("step");
      out.push_back(Slice{slice_end(item.attr("start")), slice_end(item.attr("stop")),
                          step.is_none() ? 1 : py::cast<long>(step)});
    } else if (PyBool_Check(item.ptr())) {
      throw py::index_error(fmt::format("entry {} of the subscript is a bool; index with ints, slices, None, ..., or "
                                        "integer / bool arrays",
                                        i));
    } else if (PyIndex_Check(item.ptr()) && !py::isinstance<Tensor>(item) && !py::isinstance<py::array>(item)) {
      // (a NumPy array has __index__ too, for its one-element integer arrays: it is an array index here, as in torch)
      out.emplace_back(py::cast<long>(item));
    } else {
      out.push_back(array_index(item, i));
    }
  }
  return out;
}

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

Shape shape_of_tensor(const Tensor& t) {
  return visit(t, [](const auto& v) { return v.shape(); });
}

// torch.split's sizes: an int (chunks of that length, the last one shorter) or a list of lengths.
std::vector<std::size_t> split_sizes(const py::handle& spec, std::size_t length) {
  std::vector<std::size_t> sizes;
  if (PyIndex_Check(spec.ptr())) {
    const long chunk = py::cast<long>(spec);
    if (chunk < 1) throw std::invalid_argument(fmt::format("split: the chunk length must be >= 1, got {}", chunk));
    for (std::size_t at = 0; at < length; at += static_cast<std::size_t>(chunk))
      sizes.push_back(std::min(static_cast<std::size_t>(chunk), length - at));
    return sizes;
  }
  return py::cast<std::vector<std::size_t>>(spec);
}

std::vector<Tensor> split_t(const Tensor& a, const py::object& spec, long dim) {
  const Shape shape = shape_of_tensor(a);
  const std::vector<std::size_t> sizes = split_sizes(spec, shape[normalize_axis(dim, shape.size(), "split")]);
  std::vector<Tensor> out;
  py::gil_scoped_release release;
  if (a.is_floating()) {
    visit(a, [&](const auto& v) {
      for (auto& p : split(v, dim, sizes)) out.emplace_back(std::move(p));
    });
  } else {
    for (auto& p : split(std::get<Var<double>>(a.var), dim, sizes)) out.emplace_back(std::move(p), a.kind);
  }
  return out;
}

// torch.chunk: `chunks` pieces of ceil(L / chunks) (fewer when L is short).
std::vector<Tensor> chunk_t(const Tensor& a, long chunks, long dim) {
  if (chunks < 1) throw std::invalid_argument(fmt::format("chunk: chunks must be >= 1, got {}", chunks));
  const Shape shape = shape_of_tensor(a);
  const std::size_t length = shape[normalize_axis(dim, shape.size(), "chunk")];
  const std::size_t piece = (length + static_cast<std::size_t>(chunks) - 1) / static_cast<std::size_t>(chunks);
  return split_t(a, py::int_(piece), dim);
}

std::vector<Tensor> unbind_t(const Tensor& a, long dim) {
  std::vector<Tensor> out;
  if (a.is_floating()) {
    visit(a, [&](const auto& v) {
      for (auto& p : unbind(v, dim)) out.emplace_back(std::move(p));
    });
  } else {
    for (auto& p : unbind(std::get<Var<double>>(a.var), dim)) out.emplace_back(std::move(p), a.kind);
  }
  return out;
}

Tensor transpose_2d(const Tensor& a, const char* what) {
  const std::size_t rank = shape_of_tensor(a).size();
  if (rank > 2)
    throw std::invalid_argument(fmt::format("{} is for tensors of at most 2 dims (got {}); use transpose(dim0, dim1) "
                                            "or permute",
                                            what, rank));
  if (rank < 2) return a;
  return keeping_dtype(a, [](const auto& v) { return transpose(v, 0, 1); });
}

std::vector<std::size_t> permutation(const std::vector<long>& dims, std::size_t rank) {
  std::vector<std::size_t> perm;
  perm.reserve(dims.size());
  for (const long d : dims) perm.push_back(normalize_axis(d, rank, "permute"));
  return perm;
}

// ---- subscripts

Tensor getitem(const Tensor& a, const py::handle& key) {
  const std::vector<TensorIndex> index_entries = subscript(key);
  py::gil_scoped_release release;
  return keeping_dtype(a, [&](const auto& v) { return index(v, index_entries); });
}

// torch.index_select: the entries at `index` (1-D int64) along dim, a subscript a[:, ..., index].
Tensor index_select_t(const Tensor& a, long dim, const py::handle& index) {
  const std::size_t rank = visit(a, [](const auto& v) { return v.dim(); });
  const std::size_t axis = normalize_axis(dim, std::max<std::size_t>(rank, 1), "index_select");
  std::vector<TensorIndex> entries(axis, TensorIndex(Slice{}));
  entries.push_back(array_index(index, axis));
  if (entries.back().values.dimension() != 1)
    throw py::index_error(fmt::format("index_select: index must be 1-D, got {}-D", entries.back().values.dimension()));
  py::gil_scoped_release release;
  return keeping_dtype(a, [&](const auto& v) { return tf::index(v, entries); });
}

// An integer result of the library's (positions, counts) as an int64 tensor.
template <class S>
Tensor int64_tensor(const Var<S>& v) {
  return Tensor(Var<double>(Array<double>(xt::cast<double>(v.value()))), DType::int64);
}

// torch.nonzero: the coordinates of the nonzero entries, int64 [n, ndim], in row-major order (a constant).
Tensor nonzero_t(const Tensor& a) {
  return visit(a, [](const auto& v) { return int64_tensor(nonzero(v)); });
}

// torch.repeat_interleave with an int: each entry `repeats` times along dim (flattened when dim is None), as
// index_select of the repeated positions (the gradient sums the copies).
Tensor repeat_interleave_t(const Tensor& a, long repeats, const std::optional<long>& dim) {
  if (repeats < 0) throw std::invalid_argument(fmt::format("repeat_interleave: repeats must be >= 0, got {}", repeats));
  const Tensor x = dim ? a : keeping_dtype(a, [](const auto& v) { return reshape(v, {-1}); });
  const Shape shape = visit(x, [](const auto& v) { return v.shape(); });
  const std::size_t axis = normalize_axis(dim.value_or(0), std::max<std::size_t>(shape.size(), 1), "repeat_interleave");
  py::array_t<std::int64_t> positions(static_cast<py::ssize_t>(shape[axis] * static_cast<std::size_t>(repeats)));
  for (py::ssize_t i = 0; i < positions.size(); ++i) positions.mutable_at(i) = i / repeats;
  return index_select_t(x, static_cast<long>(axis), positions);
}

// Counts over a tensor's values (the library's count.cpp): constants, as torch's.
Tensor bincount_t(const Tensor& a, const py::object& weights, long minlength) {
  if (a.kind != DType::int64) throw py::type_error(fmt::format("bincount: input must be int64, got {}", a.dtype()));
  if (minlength < 0) throw std::invalid_argument(fmt::format("bincount: minlength must be >= 0, got {}", minlength));
  const auto n = static_cast<std::size_t>(minlength);
  const Var<double>& ids = std::get<Var<double>>(a.var);
  if (weights.is_none()) return int64_tensor(bincount(ids, n));
  const Tensor w = py::cast<Tensor>(weights);
  Tensor out = visit(w, [&](const auto& v) { return Tensor(bincount(ids, v, n)); });
  out.kind = w.kind;
  return out;
}

py::object unique_t(const Tensor& a, bool sorted, bool return_inverse, bool return_counts, const py::object& dim) {
  if (!dim.is_none()) throw std::invalid_argument("unique: dim is not supported; it takes the flattened input");
  (void)sorted;  // always sorted, torch's default
  py::list out;
  visit(a, [&](const auto& v) {
    const auto parts = unique(v);
    Tensor values(parts.values);
    values.kind = a.kind;
    out.append(values);
    if (return_inverse) out.append(int64_tensor(parts.inverse));
    if (return_counts) out.append(int64_tensor(parts.counts));
  });
  return out.size() == 1 ? py::object(out[0]) : py::object(py::tuple(out));
}

Tensor histc_t(const Tensor& a, long bins, double lo, double hi) {
  if (bins < 1) throw std::invalid_argument(fmt::format("histc: bins must be >= 1, got {}", bins));
  return visit(floating(a), [&](const auto& v) {
    using S = ScalarOfVar<std::decay_t<decltype(v)>>;
    return Tensor(histc(v, static_cast<std::size_t>(bins), static_cast<S>(lo), static_cast<S>(hi)));
  });
}

void bind_views(py::module_& m, py::class_<Tensor>& t) {
  def_function_and_method(m, t, "repeat_interleave", &repeat_interleave_t, py::arg("input"), py::arg("repeats"),
                          py::arg("dim") = py::none(), "each entry `repeats` times along dim (flattened for None)");
  m.def("bincount", &bincount_t, py::arg("input"), py::arg("weights") = py::none(), py::arg("minlength") = 0,
        "the count of each value of a 1-D int64 tensor (weights: their sums), a constant");
  def_function_and_method(m, t, "unique", &unique_t, py::arg("input"), py::arg("sorted") = true,
                          py::arg("return_inverse") = false, py::arg("return_counts") = false,
                          py::arg("dim") = py::none(), "the distinct values, sorted (and inverse, counts), constants");
  def_function_and_method(m, t, "histc", &histc_t, py::arg("input"), py::arg("bins") = 100, py::arg("min") = 0.0,
                          py::arg("max") = 0.0,
                          "counts in `bins` equal bins over [min, max] (the data's range for 0, 0)");
  def_function_and_method(m, t, "index_select", &index_select_t, py::arg("input"), py::arg("dim"), py::arg("index"),
                          "the entries at index (1-D int64) along dim; the gradient scatter-added");
  def_function_and_method(m, t, "nonzero", &nonzero_t, py::arg("input"),
                          "int64 [n, ndim]: the coordinates of the nonzero entries, row-major");
  auto reshaped = [](const Tensor& a, const std::vector<long>& shape) {
    return keeping_dtype(a, [&](const auto& v) { return reshape(v, shape); });
  };
  m.def("reshape", reshaped, py::arg("input"), py::arg("shape"), Release());
  auto reshape_method = [reshaped](const Tensor& a, const py::args& shape) {
    return reshaped(a, shape_arguments(shape, "reshape"));
  };
  t.def("reshape", reshape_method, "x.reshape(2, -1) or x.reshape((2, -1)): a new tensor of the same values");
  t.def("view", reshape_method, "the same as reshape (tinyformer tensors are always contiguous copies)");
  m.def(
      "permute",
      [](const Tensor& a, const std::vector<long>& dims) {
        return keeping_dtype(a, [&](const auto& v) { return permute(v, permutation(dims, v.dim())); });
      },
      py::arg("input"), py::arg("dims"), Release());
  t.def("permute", [](const Tensor& a, const py::args& dims) {
    const std::vector<long> d = shape_arguments(dims, "permute");
    return keeping_dtype(a, [&](const auto& v) { return permute(v, permutation(d, v.dim())); });
  });
  def_function_and_method(
      m, t, "transpose",
      [](const Tensor& a, long d0, long d1) {
        return keeping_dtype(a, [&](const auto& v) { return transpose(v, d0, d1); });
      },
      py::arg("input"), py::arg("dim0"), py::arg("dim1"), Release());
  def_function_and_method(
      m, t, "t", [](const Tensor& a) { return transpose_2d(a, "t()"); }, py::arg("input"));
  t.def_property_readonly("T", [](const Tensor& a) {
    return keeping_dtype(a, [&](const auto& v) {
      std::vector<std::size_t> perm(v.dim());
      for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = perm.size() - 1 - i;
      return permute(v, perm);
    });
  });
}

void bind_dims(py::module_& m, py::class_<Tensor>& t) {
  def_function_and_method(
      m, t, "unsqueeze",
      [](const Tensor& a, long dim) { return keeping_dtype(a, [&](const auto& v) { return unsqueeze(v, dim); }); },
      py::arg("input"), py::arg("dim"), Release());
  def_function_and_method(
      m, t, "squeeze",
      [](const Tensor& a, std::optional<long> dim) {
        return keeping_dtype(a, [&](const auto& v) { return dim ? squeeze(v, *dim) : squeeze(v); });
      },
      py::arg("input"), py::arg("dim") = py::none(), Release());
  def_function_and_method(
      m, t, "flatten",
      [](const Tensor& a, long start, long end) {
        return keeping_dtype(a, [&](const auto& v) { return flatten(v, start, end); });
      },
      py::arg("input"), py::arg("start_dim") = 0, py::arg("end_dim") = -1, Release());
  t.def("expand", [](const Tensor& a, const py::args& sizes) {
    const std::vector<long> s = shape_arguments(sizes, "expand");
    return keeping_dtype(a, [&](const auto& v) { return expand(v, s); });
  });
  m.def(
      "broadcast_to",
      [](const Tensor& a, const std::vector<long>& shape) {
        return keeping_dtype(a, [&](const auto& v) { return expand(v, shape); });
      },
      py::arg("input"), py::arg("shape"), Release());
  t.def("expand_as", [](const Tensor& a, const Tensor& other) {
    const Shape s = shape_of_tensor(other);
    return keeping_dtype(a, [&](const auto& v) { return expand(v, std::vector<long>(s.begin(), s.end())); });
  });
}

// Reads and writes at positions an index tensor gives: take, gather, scatter_add.
void bind_positions(py::module_& m, py::class_<Tensor>& t) {
  def_function_and_method(
      m, t, "take",
      [](const Tensor& a, const Tensor& positions) {
        if (positions.kind != DType::int64) throw py::index_error("take: the positions must be an int64 tensor");
        const Array<std::int64_t> p = to_array<std::int64_t>(to_numpy(positions));
        py::gil_scoped_release release;
        return keeping_dtype(a, [&](const auto& v) { return take(v, p); });
      },
      py::arg("input"), py::arg("index"));
  def_function_and_method(
      m, t, "gather",
      [](const Tensor& a, long dim, const Tensor& index) {
        if (index.kind != DType::int64) throw py::type_error("gather: index must be an int64 tensor");
        const Array<std::int64_t> i = to_array<std::int64_t>(to_numpy(index));
        py::gil_scoped_release release;
        return keeping_dtype(a, [&](const auto& v) { return gather(v, dim, i); });
      },
      py::arg("input"), py::arg("dim"), py::arg("index"),
      "out[i][j] = input[i][index[i][j]] for dim 1, and so for every dim (torch.gather); the gradient scatter-added");
  def_function_and_method(
      m, t, "scatter_add",
      [](const Tensor& a, long dim, const Tensor& index, const Tensor& src) {
        if (index.kind != DType::int64) throw py::type_error("scatter_add: index must be an int64 tensor");
        const Array<std::int64_t> i = to_array<std::int64_t>(to_numpy(index));
        return visit2(a, src, [&](const auto& x, const auto& y) { return scatter_add(x, dim, i, y); });
      },
      py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("src"),
      "input with src[i][j] added at [i][index[i][j]] for dim 1, and so for every dim (torch.scatter_add); gradients "
      "to both");
}

void bind_pieces(py::module_& m, py::class_<Tensor>& t) {
  def_function_and_method(m, t, "split", &split_t, py::arg("tensor"), py::arg("split_size_or_sections"),
                          py::arg("dim") = 0,
                          "pieces of split_size_or_sections along dim (an int: that length each, the last shorter; a "
                          "list: those lengths)");
  def_function_and_method(m, t, "chunk", &chunk_t, py::arg("input"), py::arg("chunks"), py::arg("dim") = 0);
  def_function_and_method(m, t, "unbind", &unbind_t, py::arg("input"), py::arg("dim") = 0);
  m.def(
      "cat",
      [](const std::vector<Tensor>& parts, long dim) {
        return joined(parts, "cat", [dim](const auto& vs) { return concat(vs, dim); });
      },
      py::arg("tensors"), py::arg("dim") = 0);
  m.def(
      "stack",
      [](const std::vector<Tensor>& parts, long dim) {
        return joined(parts, "stack", [dim](const auto& vs) { return stack(vs, dim); });
      },
      py::arg("tensors"), py::arg("dim") = 0);
  def_function_and_method(
      m, t, "flip",
      [](const Tensor& a, const py::object& dims) {
        const std::vector<long> d = py::isinstance<py::int_>(dims) ? std::vector<long>{py::cast<long>(dims)}
                                                                   : py::cast<std::vector<long>>(dims);
        py::gil_scoped_release release;
        return keeping_dtype(a, [&](const auto& v) { return flip(v, d); });
      },
      py::arg("input"), py::arg("dims"), "input with the order of each of dims reversed (torch.flip)");
  t.def(
      "repeat",
      [](const Tensor& a, const py::args& sizes) {
        const std::vector<long> reps = shape_arguments(sizes, "repeat");
        py::gil_scoped_release release;
        return keeping_dtype(a, [&](const auto& v) { return repeat(v, reps); });
      },
      "x.repeat(2, 1): x tiled that many times along each dim (torch.Tensor.repeat); the gradient summed over the "
      "tiles");
  t.def_property_readonly(
      "mT",
      [](const Tensor& a) {
        return keeping_dtype(a, [](const auto& v) {
          if (v.dim() < 2) throw std::invalid_argument("mT: the tensor needs 2 or more dims (it swaps the last two)");
          return transpose(v, -2, -1);
        });
      },
      "The last two dims swapped (torch.Tensor.mT)");
  t.def("__getitem__", &getitem,
        "x[0], x[:, 1:3], x[..., -1], x[None], x[[0, 2]], x[mask]: NumPy's basic and advanced indexing, with gradient");
  t.def("__iter__", [](const Tensor& a) {
    if (shape_of_tensor(a).empty()) throw py::type_error("iteration over a 0-d tensor");
    return py::iter(py::cast(unbind_t(a, 0)));
  });
}

}  // namespace

void bind_shapes(py::module_& m, py::class_<Tensor>& t) {
  bind_views(m, t);
  bind_dims(m, t);
  bind_pieces(m, t);
  bind_positions(m, t);
}

}  // namespace tf::python
