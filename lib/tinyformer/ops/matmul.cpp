// Matrix products through the one gemm wrapper; transposes are BLAS flags, never copies.
//   C = op(A) op(B), op(A) [M,K], op(B) [K,N]
//   dA = dC op(B)^T   (stored as A is: [M,K], or [K,M] when trans_a)
//   dB = op(A)^T dC   (stored as B is: [K,N], or [N,K] when trans_b)
// torch.matmul's other cases are compositions around that product: a 1-D a is reshaped to a row [1,K] and a 1-D b to
// a column [K,1] (that dim removed from the result), and batch dims that differ are broadcast by expand (whose
// backward sums the stretched dims), so that the product sees equal batch dims or a shared 2-D b.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "tinyformer/ops/ops.hpp"
#include "tinyformer/tensor/gemm.hpp"

namespace tf {

namespace {

struct MatmulPlan {
  std::size_t batch, m, k, n;
  bool shared_b;  // b is 2-D and used by every batch entry
  Shape out_shape;
};

MatmulPlan plan_matmul(const Shape& a, const Shape& b, bool ta, bool tb) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("matmul: a {}{} and b {}{}: {}", shape_str(a), ta ? " (transposed)" : "",
                                             shape_str(b), tb ? " (transposed)" : "", why));
  };
  if (a.size() < 2 || b.size() < 2) throw fail("both operands need at least 2 dimensions");
  MatmulPlan p{};
  const std::size_t ra = a.size(), rb = b.size();
  p.m = ta ? a[ra - 1] : a[ra - 2];
  p.k = ta ? a[ra - 2] : a[ra - 1];
  const std::size_t kb = tb ? b[rb - 1] : b[rb - 2];
  p.n = tb ? b[rb - 2] : b[rb - 1];
  if (p.k != kb) throw fail(fmt::format("inner dimensions differ ({} vs {})", p.k, kb));
  p.shared_b = rb == 2 && ra > 2;
  if (!p.shared_b && ra != rb) throw fail("batch dimensions must match, or b must be 2-D");
  if (!p.shared_b)
    for (std::size_t i = 0; i + 2 < ra; ++i)
      if (a[i] != b[i]) throw fail("batch dimensions must match, or b must be 2-D");
  p.batch = 1;
  for (std::size_t i = 0; i + 2 < ra; ++i) p.batch *= a[i];
  p.out_shape = Shape(a.begin(), a.end() - 2);
  p.out_shape.push_back(p.m);
  p.out_shape.push_back(p.n);
  return p;
}

// Does the product take these shapes as they are (equal batch dims, or a 2-D b)?
bool is_direct_product(const Shape& a, const Shape& b) {
  if (a.size() < 2 || b.size() < 2) return false;
  if (b.size() == 2) return true;
  return a.size() == b.size() && std::equal(a.begin(), a.end() - 2, b.begin());
}

template <class S>
Var<S> batched_product(const Var<S>& a, const Var<S>& b, bool ta, bool tb);

// torch.matmul's 1-D operands and broadcast batch dims, around the product.
template <class S>
Var<S> broadcast_matmul(const Var<S>& a, const Var<S>& b, bool ta, bool tb) {
  const Shape sa = a.shape(), sb = b.shape();
  if ((sa.size() < 2 && ta) || (sb.size() < 2 && tb))
    throw std::invalid_argument(fmt::format("matmul: a {} and b {}: the {} operand is read transposed, which needs it "
                                            "2-D or more",
                                            shape_str(sa), shape_str(sb), sa.size() < 2 && ta ? "first" : "second"));
  if (sa.empty() || sb.empty())
    throw std::invalid_argument(
        fmt::format("matmul: a {} and b {}: both operands need at least 1 dimension", shape_str(sa), shape_str(sb)));
  const bool row = sa.size() == 1, column = sb.size() == 1;
  Var<S> x = row ? reshape(a, {1, static_cast<long>(sa[0])}) : a;
  Var<S> y = column ? reshape(b, {static_cast<long>(sb[0]), 1}) : b;
  const Shape sx = x.shape(), sy = y.shape();
  if (!is_direct_product(sx, sy)) {  // broadcast the batch dims: [..., M, K] and [..., K, N] (or transposed)
    const Shape bx(sx.begin(), sx.end() - 2), by(sy.begin(), sy.end() - 2);
    Shape batch;
    try {
      batch = broadcast_shapes(bx, by, "matmul");
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(fmt::format("matmul: a {} and b {}: the batch dimensions {} and {} do not broadcast",
                                              shape_str(sa), shape_str(sb), shape_str(bx), shape_str(by)));
    }
    auto stretched = [&](const Var<S>& v, const Shape& s) {
      std::vector<long> sizes(batch.begin(), batch.end());
      sizes.push_back(static_cast<long>(s[s.size() - 2]));
      sizes.push_back(static_cast<long>(s[s.size() - 1]));
      return Shape(sizes.begin(), sizes.end()) == s ? v : expand(v, sizes);
    };
    x = stretched(x, sx);
    if (shape_numel(Shape(sy.begin(), sy.end() - 2)) == 1)  // b [1,..,1,K,N]: shared by every entry, no copy
      y = reshape(y, {static_cast<long>(sy[sy.size() - 2]), static_cast<long>(sy[sy.size() - 1])});
    else
      y = stretched(y, sy);
  }
  Var<S> out = batched_product(x, y, ta, tb);
  if (!row && !column) return out;
  std::vector<long> shape;  // the result without the row's or the column's dim of 1
  const Shape so = out.shape();
  for (std::size_t i = 0; i < so.size(); ++i) {
    if ((row && i == so.size() - 2) || (column && i == so.size() - 1)) continue;
    shape.push_back(static_cast<long>(so[i]));
  }
  return reshape(out, shape);
}

}  // namespace

template <class S>
Var<S> matmul(const Var<S>& a, const Var<S>& b, bool ta, bool tb) {
  check_input(a, "matmul", "a");
  check_input(b, "matmul", "b");
  if (is_direct_product(a.shape(), b.shape())) return batched_product(a, b, ta, tb);
  return broadcast_matmul(a, b, ta, tb);
}

namespace {

template <class S>
Var<S> batched_product(const Var<S>& a, const Var<S>& b, bool ta, bool tb) {
  const MatmulPlan p = plan_matmul(a.shape(), b.shape(), ta, tb);
  Array<S> out = Array<S>::from_shape(p.out_shape);
  const std::size_t sa = p.m * p.k, sb = p.shared_b ? 0 : p.k * p.n, sc = p.m * p.n;
  if (p.shared_b && !ta)  // rows of every batch entry stacked: one [batch*M, K] x [K, N] product
    gemm<S>(false, tb, {p.batch * p.m, p.n, p.k}, S(1), a.value().data(), b.value().data(), S(0), out.data());
  else
    batched_gemm<S>(p.batch, ta, tb, {p.m, p.n, p.k}, S(1), a.value().data(), sa, b.value().data(), sb, S(0),
                    out.data(), sc);

  return make_result<S>(
      std::move(out), {a, b},
      [p, ta, tb, sa, sb, sc](Node<S>& self) {
        Node<S>& A = *self.inputs[0];
        Node<S>& B = *self.inputs[1];
        const S* dC = self.grad.data();
        if (A.requires_grad) {
          Array<S> dA = Array<S>::from_shape(A.value.shape());
          if (p.shared_b && !ta)  // [batch*M, K] = dC [batch*M, N] op(B)^T
            gemm<S>(false, !tb, {p.batch * p.m, p.k, p.n}, S(1), dC, B.value.data(), S(0), dA.data());
          else if (!ta)  // dA [M,K] = dC [M,N] op(B)^T [N,K]
            batched_gemm<S>(p.batch, false, !tb, {p.m, p.k, p.n}, S(1), dC, sc, B.value.data(), sb, S(0), dA.data(),
                            sa);
          else  // dA [K,M] = op(B) [K,N] dC^T [N,M]
            batched_gemm<S>(p.batch, tb, true, {p.k, p.m, p.n}, S(1), B.value.data(), sb, dC, sc, S(0), dA.data(), sa);
          accumulate_grad(A, dA);
        }
        if (B.requires_grad) {
          Array<S> dB = Array<S>::from_shape(B.value.shape());
          const std::size_t stride_dB = p.k * p.n;
          if (p.shared_b && !ta) {  // sum over every row of every batch entry in one product
            if (!tb)                // dB [K,N] = A^T [K, batch*M] dC [batch*M, N]
              gemm<S>(true, false, {p.k, p.n, p.batch * p.m}, S(1), A.value.data(), dC, S(0), dB.data());
            else  // dB [N,K] = dC^T [N, batch*M] A [batch*M, K]
              gemm<S>(true, false, {p.n, p.k, p.batch * p.m}, S(1), dC, A.value.data(), S(0), dB.data());
          } else {
            for (std::size_t i = 0; i < p.batch; ++i) {
              const S beta = (p.shared_b && i > 0) ? S(1) : S(0);  // a shared b sums its batch contributions
              S* dBi = dB.data() + (p.shared_b ? 0 : i * stride_dB);
              const S* Ai = A.value.data() + i * sa;
              const S* dCi = dC + i * sc;
              if (!tb)  // dB [K,N] = op(A)^T [K,M] dC [M,N]
                gemm<S>(!ta, false, {p.k, p.n, p.m}, S(1), Ai, dCi, beta, dBi);
              else  // dB [N,K] = dC^T [N,M] op(A) [M,K]
                gemm<S>(true, ta, {p.n, p.k, p.m}, S(1), dCi, Ai, beta, dBi);
            }
          }
          accumulate_grad(B, dB);
        }
      },
      "matmul");
}

}  // namespace

template Var<float> matmul<float>(const Var<float>&, const Var<float>&, bool, bool);
template Var<double> matmul<double>(const Var<double>&, const Var<double>&, bool, bool);

}  // namespace tf
