// torch.einsum, composed of ops whose backwards are theirs (sum, permute, reshape, matmul):
//   one operand      sum over the labels the output lacks, then permute into the output's order;
//   two operands     each first sums the labels that neither the other nor the output has; the rest are batch labels
//                    (both and the output), contracted ones (both, not the output) and each operand's own: a as
//                    [batch, own, contracted], b as [batch, contracted, own], one batched matmul, then the output's
//                    order;
//   more operands    left to right, each intermediate keeping the labels still needed (by the output or an operand
//                    to come).
// Labels are letters; without "->" the output is the labels used once, in alphabetical order (as torch). Not here:
// "..." and a label repeated within one operand (a diagonal), both refused.
#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "tinyformer/ops/ops.hpp"

namespace tf {

namespace {

using Labels = std::string;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

Equation parse(const std::string& equation, std::size_t operands) {
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("einsum '{}': {}", equation, why));
  };
  std::string text;
  for (const char c : equation)
    if (c != ' ') text += c;
  const std::size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  Equation e;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = lhs.find(',', start);
    e.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (text.find("...") != std::string::npos) throw fail("'...' is not supported here; name every dim with a letter");
  for (const char c : text)
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != ',' && c != '-' && c != '>')
      throw fail(fmt::format("'{}' is not a label: labels are letters, operands separated by ',' and the output "
                             "after '->'",
                             c));
  if (e.inputs.size() != operands)
    throw fail(fmt::format("it names {} operands and {} were given", e.inputs.size(), operands));
  std::map<char, int> uses;
  for (const Labels& in : e.inputs) {
    for (const char c : in) {
      if (std::count(in.begin(), in.end(), c) > 1)
        throw fail(fmt::format("'{}' appears twice in the operand '{}' (a diagonal is not supported here)", c, in));
      ++uses[c];
    }
  }
  if (arrow == std::string::npos) {
    for (const auto& [c, n] : uses)
      if (n == 1) e.output += c;  // std::map: alphabetical, as torch
  } else {
    e.output = text.substr(arrow + 2);
    for (const char c : e.output) {
      if (std::count(e.output.begin(), e.output.end(), c) > 1)
        throw fail(fmt::format("'{}' appears twice in the output", c));
      if (!uses.count(c)) throw fail(fmt::format("the output's '{}' is in no operand", c));
    }
  }
  return e;
}

bool has(const Labels& labels, char c) { return labels.find(c) != std::string::npos; }

// a (labels `from`) summed over the labels not in `keep`, then permuted into `keep`'s order (every label of `keep`
// must be in `from`).
template <class S>
Var<S> reduce_to(const Var<S>& a, const Labels& from, const Labels& keep) {
  std::vector<long> axes;
  Labels left;
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (has(keep, from[i]))
      left += from[i];
    else
      axes.push_back(static_cast<long>(i));
  }
  Var<S> out = axes.empty() ? a : sum(a, axes);
  if (left == keep) return out;
  std::vector<std::size_t> perm;
  for (const char c : keep) perm.push_back(left.find(c));
  return permute(out, perm);
}

// The product of the sizes of `labels` in `sizes`, as a long for reshape.
long size_of(const Labels& labels, const std::map<char, std::size_t>& sizes) {
  long n = 1;
  for (const char c : labels) n *= static_cast<long>(sizes.at(c));
  return n;
}

// a (labels la) and b (lb) contracted into the labels `out` (each in la or lb; the labels of both that `out` lacks
// are summed).
template <class S>
Var<S> contract(const Var<S>& a, const Labels& la, const Var<S>& b, const Labels& lb, const Labels& out,
                const std::map<char, std::size_t>& sizes) {
  Labels batch, own_a, own_b, inner;
  for (const char c : la) {
    if (has(lb, c))
      (has(out, c) ? batch : inner) += c;
    else if (has(out, c))
      own_a += c;
  }
  for (const char c : lb)
    if (!has(la, c) && has(out, c)) own_b += c;
  const Var<S> x = reshape(reduce_to(a, la, batch + own_a + inner),
                           {size_of(batch, sizes), size_of(own_a, sizes), size_of(inner, sizes)});
  const Var<S> y = reshape(reduce_to(b, lb, batch + inner + own_b),
                           {size_of(batch, sizes), size_of(inner, sizes), size_of(own_b, sizes)});
  const Labels got = batch + own_a + own_b;
  std::vector<long> shape;
  for (const char c : got) shape.push_back(static_cast<long>(sizes.at(c)));
  return reduce_to(reshape(matmul(x, y), shape), got, out);
}

}  // namespace

template <class S>
Var<S> einsum(const std::string& equation, const std::vector<Var<S>>& operands) {
  if (operands.empty()) throw std::invalid_argument(fmt::format("einsum '{}': give at least one operand", equation));
  const Equation e = parse(equation, operands.size());
  std::map<char, std::size_t> sizes;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    check_input(operands[k], "einsum", "operand");
    const Labels& in = e.inputs[k];
    if (in.size() != operands[k].dim())
      throw std::invalid_argument(fmt::format("einsum '{}': operand {} has {} dims and '{}' names {}", equation, k,
                                              operands[k].dim(), in, in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::size_t n = operands[k].shape()[i];
      const auto [it, fresh] = sizes.emplace(in[i], n);
      if (!fresh && it->second != n)
        throw std::invalid_argument(fmt::format("einsum '{}': '{}' is {} in one operand and {} in operand {}", equation,
                                                in[i], it->second, n, k));
    }
  }
  Var<S> acc = operands[0];
  Labels held = e.inputs[0];
  if (operands.size() == 1) return reduce_to(acc, held, e.output);
  for (std::size_t k = 1; k < operands.size(); ++k) {
    Labels needed = e.output;  // the labels of the output and of the operands after k
    for (std::size_t j = k + 1; j < operands.size(); ++j) needed += e.inputs[j];
    Labels keep;
    for (const char c : held + e.inputs[k])
      if (has(needed, c) && !has(keep, c)) keep += c;
    if (k + 1 == operands.size()) keep = e.output;
    acc = contract(acc, held, operands[k], e.inputs[k], keep, sizes);
    held = keep;
  }
  return acc;
}

template Var<float> einsum<float>(const std::string&, const std::vector<Var<float>>&);
template Var<double> einsum<double>(const std::string&, const std::vector<Var<double>>&);

}  // namespace tf
