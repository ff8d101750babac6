// torch.einsum, composed of ops whose backwards are theirs (sum, permute, reshape, matmul):
//   one operand      sum over the labels the output lacks, then permute into the output's order;
//   two operands     each first sums the labels that neither the other nor the output has; the rest are batch labels
//                    (both and the output), contracted ones (both, not the output) and each operand's own: a as
//                    [batch, own, contracted], b as [batch, contracted, own], one batched matmul, then the output's
//                    order;
//   more operands    left to right, each intermediate keeping the labels still needed (by the output or an operand
//                    to come).
// Labels are letters; without "->" the output is the labels used once, in alphabetical order (as torch). "..." stands
// for an operand's remaining dims, right-aligned across operands and broadcast where one has length 1 (torch's
// rule); without "->" they lead the output. Not here: a label repeated within one operand (a diagonal), refused.
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

// The operands' labels: the text before "->", split at ','. std::invalid_argument (`fail`) unless there are `operands`.
template <class Fail>
std::vector<Labels> operand_labels(const std::string& text, std::size_t operands, const Fail& fail) {
  const std::string lhs = text.substr(0, text.find("->"));
  std::vector<Labels> inputs;
  for (std::size_t start = 0;;) {
    const std::size_t comma = lhs.find(',', start);
    inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (inputs.size() != operands)
    throw fail(fmt::format("it names {} operands and {} were given", inputs.size(), operands));
  return inputs;
}

// The equation without spaces, each "..." written out as letters the equation does not use, for operands of these
// ranks: the operand with the most dims under "..." takes them all, the others the last ones (right-aligned).
struct Written {
  std::string equation;
  Labels spread;  // the letters "..." became: their length-1 dims broadcast, and they lead an implicit output
};

Written without_ellipsis(const std::string& equation, const std::vector<std::size_t>& ranks) {
  std::string text;
  for (const char c : equation)
    if (c != ' ') text += c;
  if (text.find("...") == std::string::npos) return {text, ""};
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("einsum '{}': {}", equation, why));
  };
  const std::vector<Labels> inputs = operand_labels(text, ranks.size(), fail);
  std::vector<std::size_t> spans(inputs.size(), 0);
  std::size_t widest = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const std::size_t at = inputs[k].find("...");
    if (at == std::string::npos) continue;
    if (inputs[k].find("...", at + 3) != std::string::npos) throw fail(fmt::format("'...' twice in '{}'", inputs[k]));
    const std::size_t named = inputs[k].size() - 3;
    if (ranks[k] < named)
      throw fail(fmt::format("operand {} has {} dims and '{}' names {} besides '...'", k, ranks[k], inputs[k], named));
    spans[k] = ranks[k] - named;
    widest = std::max(widest, spans[k]);
  }
  std::string spare;
  for (const char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
    if (text.find(c) == std::string::npos) spare += c;
  if (spare.size() < widest) throw fail("'...' stands for more dims than there are unused letters");
  const Labels all = spare.substr(0, widest);
  std::string out;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Labels in = inputs[k];
    if (const std::size_t at = in.find("..."); at != std::string::npos)
      in.replace(at, 3, all.substr(widest - spans[k]));
    out += (k ? "," : "") + in;
  }
  if (const std::size_t arrow = text.find("->"); arrow != std::string::npos) {
    std::string rhs = text.substr(arrow + 2);
    if (const std::size_t at = rhs.find("..."); at != std::string::npos) rhs.replace(at, 3, all);
    out += "->" + rhs;
  }
  return {out, all};
}

// `text`: the equation as without_ellipsis wrote it, `spread` the letters "..." became; `equation`: as given (for the
// messages).
Equation parse(const std::string& text, const Labels& spread, const std::string& equation, std::size_t operands) {
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("einsum '{}': {}", equation, why));
  };
  const std::size_t arrow = text.find("->");
  Equation e;
  if (text.find('.') != std::string::npos) throw fail("'.' outside '...'");
  for (const char c : text)
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != ',' && c != '-' && c != '>')
      throw fail(fmt::format("'{}' is not a label: labels are letters, operands separated by ',' and the output "
                             "after '->'",
                             c));
  e.inputs = operand_labels(text, operands, fail);
  std::map<char, int> uses;
  for (const Labels& in : e.inputs) {
    for (const char c : in) {
      if (std::count(in.begin(), in.end(), c) > 1)
        throw fail(fmt::format("'{}' appears twice in the operand '{}' (a diagonal is not supported here)", c, in));
      ++uses[c];
    }
  }
  if (arrow == std::string::npos) {
    e.output = spread;  // "..."'s dims first, then the labels used once, alphabetical (std::map), as torch
    for (const auto& [c, n] : uses)
      if (n == 1 && spread.find(c) == std::string::npos) e.output += c;
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

// The contractions of an equation's operands, left to right.
template <class S>
Var<S> contract_all(const Equation& e, const std::vector<Var<S>>& operands, const std::map<char, std::size_t>& sizes) {
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

}  // namespace

template <class S>
Var<S> einsum(const std::string& equation, const std::vector<Var<S>>& operands) {
  if (operands.empty()) throw std::invalid_argument(fmt::format("einsum '{}': give at least one operand", equation));
  std::vector<std::size_t> ranks;
  for (const Var<S>& op : operands) {
    check_input(op, "einsum", "operand");
    ranks.push_back(op.dim());
  }
  const Written written = without_ellipsis(equation, ranks);
  const Equation e = parse(written.equation, written.spread, equation, operands.size());
  // Each label's length: the same in every operand, except that a dim of "..." broadcasts from length 1.
  std::map<char, std::size_t> sizes;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const Labels& in = e.inputs[k];
    if (in.size() != operands[k].dim())
      throw std::invalid_argument(fmt::format("einsum '{}': operand {} has {} dims and '{}' names {}", equation, k,
                                              operands[k].dim(), in, in.size()));
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::size_t n = operands[k].shape()[i];
      const auto [it, fresh] = sizes.emplace(in[i], n);
      if (fresh || it->second == n) continue;
      if (!has(written.spread, in[i]) || (it->second != 1 && n != 1))
        throw std::invalid_argument(fmt::format("einsum '{}': '{}' is {} in one operand and {} in operand {}", equation,
                                                in[i], it->second, n, k));
      it->second = std::max(it->second, n);
    }
  }
  std::vector<Var<S>> stretched = operands;  // where a dim of "..." of length 1 meets a longer one
  for (std::size_t k = 0; k < stretched.size(); ++k) {
    std::vector<long> full;
    bool same = true;
    for (std::size_t i = 0; i < e.inputs[k].size(); ++i) {
      full.push_back(static_cast<long>(sizes.at(e.inputs[k][i])));
      same = same && sizes.at(e.inputs[k][i]) == stretched[k].shape()[i];
    }
    if (!same) stretched[k] = expand(stretched[k], full);
  }
  return contract_all(e, stretched, sizes);
}

template Var<float> einsum<float>(const std::string&, const std::vector<Var<float>>&);
template Var<double> einsum<double>(const std::string&, const std::vector<Var<double>>&);

}  // namespace tf
