// Subscripts (NumPy's and PyTorch's a[...]), torch.take, gather, flip, topk and repeat, as one gather:
//   take(a, p)       out[j] = a.flat[p[j]]            da.flat[p[j]] += dout[j]   (a position read twice adds twice)
//   index(a, idx)    take(a, index_positions(a's shape, idx))
//   gather, flip, topk, repeat: take at the positions each reads (topk's: its entries' ranked along the dim)
// index_positions turns a subscript into the flat positions it reads, in the result's shape, by NumPy's rules:
//   - an integer picks one entry and removes its axis; a slice keeps its axis with the entries start, start + step,
//     ... before stop (Python's rules for missing, negative and out-of-range ends); None inserts an axis of length 1;
//     the ellipsis stands for as many full slices as the axes left over (one is implied at the end);
//   - integer arrays and masks are advanced indices: a mask covering k axes is the k arrays of its nonzero entries'
//     coordinates; once one is present, an integer is a 0-d array too. The arrays broadcast together to a shape
//     B; the result has B's dims where the first advanced index stands if they stand side by side in the subscript,
//     else in front; entry b of that block reads the positions the arrays hold at b.
// The positions are built as a sum of independent parts, one a dim of the result: a slice's or None's dim adds
// (start + j step) * stride (None: 0), the advanced block adds a table over B, and the integers add a constant.
#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xnoalias.hpp>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

using Positions = Array<std::int64_t>;

// One dim of the result: `size` entries, entry j adding table[j] (when a table is given) or j * step to the position.
struct ResultDim {
  std::size_t size = 1;
  std::int64_t step = 0;
  const Positions* table = nullptr;
};

// Python's slice.indices(length) followed by the entry count (PySlice_AdjustIndices).
struct SliceRange {
  long start = 0, step = 1;
  std::size_t count = 0;
};

SliceRange resolve_slice(const Slice& s, long length, std::size_t entry) {
  if (s.step == 0) throw std::invalid_argument(fmt::format("index: entry {} is a slice with step 0", entry));
  const long step = s.step;
  auto clamp_end = [&](std::optional<long> v, long if_missing) {
    if (!v) return if_missing;
    long x = *v < 0 ? *v + length : *v;
    if (x < 0) x = step < 0 ? -1 : 0;
    if (x >= length) x = step < 0 ? length - 1 : length;
    return x;
  };
  const long start = clamp_end(s.start, step < 0 ? length - 1 : 0);
  const long stop = clamp_end(s.stop, step < 0 ? -1 : length);
  long count = 0;
  if (step > 0 && stop > start) count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) count = (start - stop - 1) / (-step) + 1;
  return {start, step, static_cast<std::size_t>(count)};
}

// A position along an axis of `length`, negative counting from the end; IndexError otherwise.
std::int64_t checked_position(std::int64_t i, std::size_t length, std::size_t axis, std::size_t entry) {
  const auto n = static_cast<std::int64_t>(length);
  if (i < -n || i >= n)
    throw IndexError(fmt::format("index: {} (entry {} of the subscript) is out of range for axis {} of length "
                                 "{} (valid: {} to {})",
                                 i, entry, axis, length, -n, n - 1));
  return i < 0 ? i + n : i;
}

// The subscript with the ellipsis expanded (and one implied at the end), masks turned into position arrays, and
// each entry tagged with the axis of `shape` it reads (new axes: none).
struct Entry {
  TensorIndex::Kind kind;
  std::size_t axis = 0;    // the axis of a it reads
  std::size_t source = 0;  // its place in the subscript as given (for messages)
  long integer = 0;
  Slice slice;
  Positions positions;  // advanced entries
};

std::size_t axes_read(const TensorIndex& t) {
  switch (t.kind) {
    case TensorIndex::Kind::integer:
    case TensorIndex::Kind::slice:
    case TensorIndex::Kind::positions:
      return 1;
    case TensorIndex::Kind::mask:
      return t.values.dimension();
    default:
      return 0;
  }
}

// A mask over axes [axis, axis + k) -> the k position arrays of its nonzero entries, in row-major order.
void expand_mask(const TensorIndex& t, const Shape& shape, std::size_t axis, std::size_t source,
                 std::vector<Entry>& out) {
  const Shape ms = to_shape(t.values.shape());
  const std::size_t k = ms.size();
  if (k == 0)
    throw std::invalid_argument(
        fmt::format("index: the mask (entry {}) has no dims; use one of the tensor's shape", source));
  for (std::size_t i = 0; i < ms.size(); ++i)
    if (ms[i] != shape[axis + i])
      throw std::invalid_argument(fmt::format("index: the mask of shape {} (entry {}) does not match the tensor's "
                                              "shape {} at axis {}: a mask covers the axes it stands for exactly",
                                              shape_str(ms), source, shape_str(shape), axis + i));
  std::size_t hits = 0;
  for (std::size_t f = 0; f < t.values.size(); ++f) hits += t.values.data()[f] != 0;
  if (hits == 0) throw std::invalid_argument(fmt::format("index: the mask (entry {}) selects nothing", source));
  std::vector<Positions> coords(k, Positions::from_shape({hits}));
  std::size_t h = 0;
  for (std::size_t f = 0; f < t.values.size(); ++f) {
    if (t.values.data()[f] == 0) continue;
    std::size_t rest = f;  // the row-major coordinates of f
    for (std::size_t i = ms.size(); i-- > 0;) {
      coords[i].data()[h] = static_cast<std::int64_t>(rest % ms[i]);
      rest /= ms[i];
    }
    ++h;
  }
  for (std::size_t i = 0; i < k; ++i) {
    Entry e{TensorIndex::Kind::positions, axis + i, source, 0, Slice{}, Positions{}};
    e.positions = std::move(coords[i]);
    out.push_back(std::move(e));
  }
}

std::vector<Entry> expand_subscript(const Shape& shape, const std::vector<TensorIndex>& index) {
  std::size_t consumed = 0, ellipses = 0;
  for (const TensorIndex& t : index) {
    consumed += axes_read(t);
    ellipses += t.kind == TensorIndex::Kind::ellipsis;
  }
  if (ellipses > 1) throw std::invalid_argument("index: a subscript may hold one ellipsis (...), not more");
  if (consumed > shape.size())
    throw IndexError(fmt::format("index: the subscript reads {} axes, but the tensor of shape {} has {}", consumed,
                                 shape_str(shape), shape.size()));
  std::vector<Entry> out;
  std::size_t axis = 0;
  auto full_slices = [&](std::size_t n, std::size_t source) {
    for (std::size_t i = 0; i < n; ++i)
      out.push_back(Entry{TensorIndex::Kind::slice, axis++, source, 0, Slice{}, Positions{}});
  };
  for (std::size_t s = 0; s < index.size(); ++s) {
    const TensorIndex& t = index[s];
    switch (t.kind) {
      case TensorIndex::Kind::ellipsis:
        full_slices(shape.size() - consumed, s);
        break;
      case TensorIndex::Kind::new_axis:
        out.push_back(Entry{t.kind, axis, s, 0, Slice{}, Positions{}});
        break;
      case TensorIndex::Kind::mask:
        expand_mask(t, shape, axis, s, out);
        axis += axes_read(t);
        break;
      default: {
        Entry e{t.kind, axis++, s, t.integer, t.slice, t.values};
        out.push_back(std::move(e));
      }
    }
  }
  if (ellipses == 0) full_slices(shape.size() - consumed, index.size());
  return out;
}

// The advanced block: its shape B and, for each entry of B, the sum of stride * position over its arrays.
struct AdvancedBlock {
  Shape shape;
  Positions table;
  bool present = false, adjacent = true;
  std::size_t first = 0;  // the place of its first entry among the expanded entries
};

AdvancedBlock advanced_block(std::vector<Entry>& entries, const Shape& shape, const Shape& strides) {
  AdvancedBlock b;
  for (const Entry& e : entries) b.present = b.present || e.kind == TensorIndex::Kind::positions;
  if (!b.present) return b;
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    if (e.kind == TensorIndex::Kind::integer) {  // a 0-d array among advanced indices
      e.kind = TensorIndex::Kind::positions;
      e.positions = Positions::from_shape({});
      e.positions() = e.integer;
    }
    if (e.kind != TensorIndex::Kind::positions) continue;
    if (!members.empty() && members.back() + 1 != i) b.adjacent = false;
    members.push_back(i);
    b.shape = broadcast_shapes(b.shape, to_shape(e.positions.shape()), "index");
  }
  b.first = members.front();
  b.table = xt::zeros<std::int64_t>(b.shape);
  for (const std::size_t i : members) {
    const Entry& e = entries[i];
    const Positions stretched = xt::broadcast(e.positions, b.shape);
    for (std::size_t j = 0; j < stretched.size(); ++j)
      b.table.data()[j] += checked_position(stretched.data()[j], shape[e.axis], e.axis, e.source) *
                           static_cast<std::int64_t>(strides[e.axis]);
  }
  return b;
}

Shape row_major_strides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

// Walks every entry of the result in row-major order, adding up each dim's part.
Positions gather_positions(const std::vector<ResultDim>& dims, const Shape& out_shape, std::int64_t base) {
  Positions out = Positions::from_shape(out_shape);
  if (out.size() == 0) return out;
  std::vector<std::size_t> at(dims.size(), 0);
  auto part = [&](std::size_t d) {
    return dims[d].table ? dims[d].table->data()[at[d]] : static_cast<std::int64_t>(at[d]) * dims[d].step;
  };
  std::int64_t pos = base;
  for (std::size_t d = 0; d < dims.size(); ++d) pos += part(d);
  for (std::size_t j = 0; j < out.size(); ++j) {
    out.data()[j] = pos;
    for (std::size_t d = dims.size(); d-- > 0;) {  // the odometer: the last dim turns fastest
      pos -= part(d);
      if (++at[d] < dims[d].size) {
        pos += part(d);
        break;
      }
      at[d] = 0;
      pos += part(d);
    }
  }
  return out;
}

template <class S>
Var<S> take_positions(const Var<S>& a, Positions positions, const char* op) {
  Array<S> out = Array<S>::from_shape(positions.shape());
  const S* x = a.value().data();
  for (std::size_t j = 0; j < out.size(); ++j) out.data()[j] = x[positions.data()[j]];
  return make_result<S>(
      std::move(out), {a},
      [positions = std::move(positions)](Node<S>& self) {
        Node<S>& in = *self.inputs[0];
        Array<S> g = xt::zeros<S>(in.value.shape());
        for (std::size_t j = 0; j < positions.size(); ++j) g.data()[positions.data()[j]] += self.grad.data()[j];
        accumulate_grad(in, std::move(g));
      },
      op);
}

}  // namespace

Positions index_positions(const Shape& shape, const std::vector<TensorIndex>& index) {
  std::vector<Entry> entries = expand_subscript(shape, index);
  const Shape strides = row_major_strides(shape);
  const AdvancedBlock block = advanced_block(entries, shape, strides);
  std::vector<ResultDim> dims;
  Shape out_shape;
  std::int64_t base = 0;
  auto add_block = [&] {
    dims.push_back({block.table.size(), 0, &block.table});
    out_shape.insert(out_shape.end(), block.shape.begin(), block.shape.end());
  };
  if (block.present && !block.adjacent) add_block();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.kind == TensorIndex::Kind::positions) {
      if (block.adjacent && i == block.first) add_block();
    } else if (e.kind == TensorIndex::Kind::integer) {
      base += checked_position(e.integer, shape[e.axis], e.axis, e.source) * static_cast<std::int64_t>(strides[e.axis]);
    } else if (e.kind == TensorIndex::Kind::new_axis) {
      dims.push_back({1, 0, nullptr});
      out_shape.push_back(1);
    } else {
      const SliceRange r = resolve_slice(e.slice, static_cast<long>(shape[e.axis]), e.source);
      if (r.count == 0)
        throw std::invalid_argument(fmt::format("index: the slice (entry {}) selects nothing from axis {} of length "
                                                "{}; a tensor holds at least one element",
                                                e.source, e.axis, shape[e.axis]));
      base += r.start * static_cast<std::int64_t>(strides[e.axis]);
      dims.push_back({r.count, r.step * static_cast<std::int64_t>(strides[e.axis]), nullptr});
      out_shape.push_back(r.count);
    }
  }
  if (shape_numel(out_shape) == 0)
    throw std::invalid_argument(fmt::format("index: the subscript selects nothing (result shape {}); a tensor holds at "
                                            "least one element",
                                            shape_str(out_shape)));
  return gather_positions(dims, out_shape, base);
}

template <class S>
Var<S> index(const Var<S>& a, const std::vector<TensorIndex>& index) {
  check_input(a, "index", "a");
  return take_positions(a, index_positions(a.shape(), index), "index");
}

template <class S>
Var<S> take(const Var<S>& a, const Array<std::int64_t>& positions) {
  check_input(a, "take", "a");
  if (positions.size() == 0) throw std::invalid_argument("take: the positions hold no elements");
  Positions p = Positions::from_shape(positions.shape());
  for (std::size_t j = 0; j < p.size(); ++j) {
    const auto n = static_cast<std::int64_t>(a.numel());
    const std::int64_t i = positions.data()[j];
    if (i < -n || i >= n)
      throw IndexError(fmt::format("take: position {} is out of range for a tensor of {} elements (valid: {} "
                                   "to {})",
                                   i, n, -n, n - 1));
    p.data()[j] = i < 0 ? i + n : i;
  }
  return take_positions(a, std::move(p), "take");
}

namespace {

// f(coordinates, j) for each entry j of an array of `shape`, in row-major order.
template <class F>
void for_each_coordinate(const Shape& shape, F f) {
  std::size_t count = 1;
  for (const std::size_t d : shape) count *= d;
  std::vector<std::size_t> at(shape.size(), 0);
  for (std::size_t j = 0; j < count; ++j) {
    f(at, j);
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
}

// The flat position in an array of `strides` of `at`, with `at[axis]` replaced by `along`.
std::int64_t position_of(const std::vector<std::size_t>& at, const Shape& strides, std::size_t axis,
                         std::size_t along) {
  std::int64_t p = 0;
  for (std::size_t d = 0; d < at.size(); ++d) p += static_cast<std::int64_t>((d == axis ? along : at[d]) * strides[d]);
  return p;
}

}  // namespace

template <class S>
Var<S> gather(const Var<S>& a, long dim, const Array<std::int64_t>& index) {
  check_input(a, "gather", "a");
  if (a.dim() == 0) throw std::invalid_argument("gather: a is 0-d; gather reads along a dim of a tensor of 1 or more");
  const std::size_t axis = normalize_axis(dim, a.dim(), "gather");
  if (index.dimension() != a.dim())
    throw std::invalid_argument(fmt::format("gather: index has {} dims and a has {}; they must have the same number",
                                            index.dimension(), a.dim()));
  if (index.size() == 0) throw std::invalid_argument("gather: index holds no elements");
  for (std::size_t d = 0; d < a.dim(); ++d)
    if (d != axis && index.shape()[d] > a.shape()[d])
      throw std::invalid_argument(fmt::format("gather: index's size {} in dim {} is more than a's {} (only dim {}, the "
                                              "one gathered along, may be longer)",
                                              index.shape()[d], d, a.shape()[d], axis));
  const Shape strides = row_major_strides(a.shape());
  const auto n = static_cast<std::int64_t>(a.shape()[axis]);
  Positions p = Positions::from_shape(index.shape());
  for_each_coordinate(
      Shape(index.shape().begin(), index.shape().end()), [&](const std::vector<std::size_t>& at, std::size_t j) {
        const std::int64_t i = index.data()[j];
        if (i < 0 || i >= n)
          throw IndexError(fmt::format("gather: index {} is out of range for dim {} of size {} (valid: 0 to {})", i,
                                       axis, n, n - 1));
        p.data()[j] = position_of(at, strides, axis, static_cast<std::size_t>(i));
      });
  return take_positions(a, std::move(p), "gather");
}

template <class S>
Var<S> scatter_add(const Var<S>& a, long dim, const Array<std::int64_t>& index, const Var<S>& src) {
  check_input(a, "scatter_add", "a");
  check_input(src, "scatter_add", "src");
  if (a.dim() == 0) throw std::invalid_argument("scatter_add: a is 0-d; it adds along a dim of a tensor of 1 or more");
  const std::size_t axis = normalize_axis(dim, a.dim(), "scatter_add");
  if (index.dimension() != a.dim() || src.dim() != a.dim())
    throw std::invalid_argument(fmt::format("scatter_add: a, index and src have {}, {} and {} dims; they must have the "
                                            "same number",
                                            a.dim(), index.dimension(), src.dim()));
  if (index.size() == 0) throw std::invalid_argument("scatter_add: index holds no elements");
  for (std::size_t d = 0; d < a.dim(); ++d)
    if (index.shape()[d] > src.shape()[d] || (d != axis && index.shape()[d] > a.shape()[d]))
      throw std::invalid_argument(fmt::format("scatter_add: index's size {} in dim {} is more than src's {} or a's {} "
                                              "(only along dim {} may it pass a's)",
                                              index.shape()[d], d, src.shape()[d], a.shape()[d], axis));
  const Shape strides = row_major_strides(a.shape()), src_strides = row_major_strides(src.shape());
  const auto n = static_cast<std::int64_t>(a.shape()[axis]);
  Positions to = Positions::from_shape(index.shape()), from = Positions::from_shape(index.shape());
  for_each_coordinate(
      Shape(index.shape().begin(), index.shape().end()), [&](const std::vector<std::size_t>& at, std::size_t j) {
        const std::int64_t i = index.data()[j];
        if (i < 0 || i >= n)
          throw IndexError(fmt::format("scatter_add: index {} is out of range for dim {} of size {} (valid: 0 to {})",
                                       i, axis, n, n - 1));
        to.data()[j] = position_of(at, strides, axis, static_cast<std::size_t>(i));
        from.data()[j] = position_of(at, src_strides, axis, at[axis]);
      });
  Array<S> out = a.value();
  for (std::size_t j = 0; j < to.size(); ++j) out.data()[to.data()[j]] += src.value().data()[from.data()[j]];
  return make_result<S>(
      std::move(out), {a, src},
      [to = std::move(to), from = std::move(from)](Node<S>& self) {
        Node<S>& na = *self.inputs[0];
        Node<S>& nsrc = *self.inputs[1];
        if (nsrc.requires_grad) {
          Array<S> g = xt::zeros<S>(nsrc.value.shape());
          for (std::size_t j = 0; j < to.size(); ++j) g.data()[from.data()[j]] = self.grad.data()[to.data()[j]];
          accumulate_grad(nsrc, std::move(g));
        }
        if (na.requires_grad) accumulate_grad(na, self.grad);
      },
      "scatter_add");
}

template <class S>
Var<S> flip(const Var<S>& a, const std::vector<long>& dims) {
  check_input(a, "flip", "a");
  std::vector<bool> flipped(a.dim(), false);
  for (const long d : dims) {
    const std::size_t axis = normalize_axis(d, a.dim(), "flip");
    if (flipped[axis]) throw std::invalid_argument(fmt::format("flip: dim {} is given twice", axis));
    flipped[axis] = true;
  }
  const Shape shape = a.shape();
  const Shape strides = row_major_strides(shape);
  Positions p = Positions::from_shape(shape);
  for_each_coordinate(shape, [&](const std::vector<std::size_t>& at, std::size_t j) {
    std::int64_t q = 0;
    for (std::size_t d = 0; d < at.size(); ++d)
      q += static_cast<std::int64_t>((flipped[d] ? shape[d] - 1 - at[d] : at[d]) * strides[d]);
    p.data()[j] = q;
  });
  return take_positions(a, std::move(p), "flip");
}

template <class S>
TopK<S> topk(const Var<S>& a, std::size_t k, long dim, bool largest) {
  check_input(a, "topk", "a");
  if (a.dim() == 0) throw std::invalid_argument("topk: a is 0-d; topk reads along a dim of a tensor of 1 or more");
  const std::size_t axis = normalize_axis(dim, a.dim(), "topk");
  const std::size_t n = a.shape()[axis];
  if (k < 1 || k > n)
    throw std::invalid_argument(fmt::format("topk: k must be from 1 to {} (the size of dim {}), got {}", n, axis, k));
  Shape out_shape = a.shape();
  out_shape[axis] = 1;
  const Shape strides = row_major_strides(a.shape());
  const S* x = a.value().data();
  // NaN ranks above every number (as torch), ties keep the earlier entry first.
  const auto before = [largest](S u, S v) {
    if (std::isnan(u) || std::isnan(v))
      return largest ? std::isnan(u) && !std::isnan(v) : std::isnan(v) && !std::isnan(u);
    return largest ? u > v : u < v;
  };
  Shape result_shape = a.shape();
  result_shape[axis] = k;
  TopK<S> out{Var<S>(), Positions::from_shape(result_shape)};
  Positions p = Positions::from_shape(result_shape);
  const Shape result_strides = row_major_strides(result_shape);
  std::vector<std::size_t> order(n);
  std::vector<S> row(n);
  for_each_coordinate(out_shape, [&](const std::vector<std::size_t>& at, std::size_t) {
    for (std::size_t i = 0; i < n; ++i) {
      order[i] = i;
      row[i] = x[position_of(at, strides, axis, i)];
    }
    std::partial_sort(
        order.begin(), order.begin() + static_cast<long>(k), order.end(),
        [&](std::size_t u, std::size_t v) { return before(row[u], row[v]) || (!before(row[v], row[u]) && u < v); });
    for (std::size_t r = 0; r < k; ++r) {
      const std::int64_t slot = position_of(at, result_strides, axis, r);
      out.indices.data()[slot] = static_cast<std::int64_t>(order[r]);
      p.data()[slot] = position_of(at, strides, axis, order[r]);
    }
  });
  out.values = take_positions(a, std::move(p), "topk");
  return out;
}

template <class S>
Var<S> repeat(const Var<S>& a, const std::vector<long>& reps) {
  check_input(a, "repeat", "a");
  if (reps.size() < a.dim())
    throw std::invalid_argument(fmt::format("repeat: {} counts for a tensor of {} dims; give one a dim at least "
                                            "(more put dims of 1 in front)",
                                            reps.size(), a.dim()));
  const Shape in = a.shape();
  Shape padded(reps.size() - a.dim(), 1), shape;
  padded.insert(padded.end(), in.begin(), in.end());
  std::size_t count = 1;
  const std::size_t limit = static_cast<std::size_t>(-1) / sizeof(std::int64_t);
  for (std::size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 1)
      throw std::invalid_argument(fmt::format("repeat: count {} for dim {} must be 1 or more", reps[d], d));
    const auto r = static_cast<std::size_t>(reps[d]);
    if (r > limit / padded[d] || padded[d] * r > limit / count) throw std::bad_alloc();  // MemoryError at the boundary
    shape.push_back(padded[d] * r);
    count *= shape.back();
  }
  const Shape strides = row_major_strides(padded);
  Positions p = Positions::from_shape(shape);
  for_each_coordinate(shape, [&](const std::vector<std::size_t>& at, std::size_t j) {
    std::int64_t q = 0;
    for (std::size_t d = 0; d < at.size(); ++d) q += static_cast<std::int64_t>((at[d] % padded[d]) * strides[d]);
    p.data()[j] = q;
  });
  return take_positions(a, std::move(p), "repeat");
}

#define TF_INSTANTIATE(S)                                                                         \
  template Var<S> index<S>(const Var<S>&, const std::vector<TensorIndex>&);                       \
  template Var<S> take<S>(const Var<S>&, const Array<std::int64_t>&);                             \
  template Var<S> gather<S>(const Var<S>&, long, const Array<std::int64_t>&);                     \
  template Var<S> scatter_add<S>(const Var<S>&, long, const Array<std::int64_t>&, const Var<S>&); \
  template Var<S> flip<S>(const Var<S>&, const std::vector<long>&);                               \
  template TopK<S> topk<S>(const Var<S>&, std::size_t, long, bool);                               \
  template Var<S> repeat<S>(const Var<S>&, const std::vector<long>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
