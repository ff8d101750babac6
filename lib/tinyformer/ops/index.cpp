// Subscripts (NumPy's and PyTorch's a[...]) and torch.take, as one gather:
//   take(a, p)       out[j] = a.flat[p[j]]            da.flat[p[j]] += dout[j]   (a position read twice adds twice)
//   index(a, idx)    take(a, index_positions(a's shape, idx))
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

#define TF_INSTANTIATE(S)                                                   \
  template Var<S> index<S>(const Var<S>&, const std::vector<TensorIndex>&); \
  template Var<S> take<S>(const Var<S>&, const Array<std::int64_t>&);
TF_INSTANTIATE(float)
TF_INSTANTIATE(double)
#undef TF_INSTANTIATE

}  // namespace tf
