#pragma once
// The numbers a notebook printed, read straight from the printed text, and checks of computed values
// against them to the precision that the printing implies.
//
//   check_printed(weights, "[1.57823895e-01 1.10228985e-13 ...]", Printed::NumPy);
//
// Numbers are read in order (row-major, as NumPy and PyTorch print); words, brackets, commas and
// "array(" / "tensor(" around them are skipped. "-inf" is read as -infinity and must match exactly.
#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tinyformer/tensor/tensor.hpp"

namespace tf::seeds {

// How a number was printed, which fixes how far the value may be from what is shown.
enum class Printed {
  // A NumPy float array with default print options (precision 8, floatmode "maxprec"). Fixed notation shows
  // at most 8 fractional digits and drops trailing zeros ("0.2766341", "1."), so every fixed-notation entry
  // is within 5e-9 of the value; scientific notation shows 8 mantissa digits: 5e-9 * 10^exponent.
  NumPy,
  // A PyTorch float tensor with default print options (precision 4): within 5e-5 (scientific:
  // 5e-5 * 10^exponent). An all-integral tensor prints as "1." and is checked to the same 5e-5.
  Torch,
  // A plain Python float repr (shortest round-trip digits), e.g. the result of round(x, 3) printed as
  // 0.281: the value is exactly the double nearest to the digits shown. Pass an extra tolerance to check a
  // value before such rounding (5e-4 for round(x, 3)).
  Exact,
};
// In every mode, a number without '.' or exponent comes from an integer array and must match exactly.

struct PrintedNumber {
  std::string text;  // as printed
  double value;
  double tolerance;  // |computed - value| allowed by the printing
};

namespace detail {

inline bool is_digit_at(const std::string& s, std::size_t i) {
  return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
}

// A number may not start inside a word ("MmBackward0", "x^1" are not numbers of the output).
inline bool word_before(const std::string& s, std::size_t i) {
  if (i == 0) return false;
  const char c = s[i - 1];
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '^';
}

inline double printed_tolerance(const std::string& token, bool has_dot, int fraction_digits, bool has_exponent,
                                int exponent, Printed how) {
  if (!has_dot && !has_exponent) return 0.0;  // an integer array entry
  switch (how) {
    case Printed::NumPy:
      if (fraction_digits > 8)
        throw std::invalid_argument("printed: '" + token +
                                    "' has more than 8 fractional digits, so it is not NumPy's default array "
                                    "printing; use Printed::Exact");
      return 0.5e-8 * std::pow(10.0, exponent);
    case Printed::Torch:
      if (fraction_digits > 4)
        throw std::invalid_argument("printed: '" + token +
                                    "' has more than 4 fractional digits, so it is not PyTorch's default tensor "
                                    "printing; use Printed::Exact");
      return 0.5e-4 * std::pow(10.0, exponent);
    case Printed::Exact:
      return 0.0;
  }
  return 0.0;
}

}  // namespace detail

// Every number in `text`, in order, with the tolerance its printing implies.
inline std::vector<PrintedNumber> parse_printed(const std::string& text, Printed how) {
  std::vector<PrintedNumber> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (detail::word_before(text, i)) {
      ++i;
      continue;
    }
    const bool minus = text[i] == '-';
    const std::size_t len = minus ? 4 : 3;
    if (text.compare(i + (minus ? 1 : 0), 3, "inf") == 0 &&
        !(i + len < text.size() && std::isalnum(static_cast<unsigned char>(text[i + len])))) {
      const double inf = std::numeric_limits<double>::infinity();
      out.push_back({text.substr(i, len), minus ? -inf : inf, 0.0});
      i += len;
      continue;
    }
    const bool signed_number = (text[i] == '-' || text[i] == '+') && detail::is_digit_at(text, i + 1);
    if (!signed_number && !detail::is_digit_at(text, i)) {
      ++i;
      continue;
    }
    std::size_t j = signed_number ? i + 1 : i;
    while (detail::is_digit_at(text, j)) ++j;
    bool has_dot = false, has_exponent = false;
    int fraction_digits = 0, exponent = 0;
    if (j < text.size() && text[j] == '.') {
      has_dot = true;
      ++j;
      while (detail::is_digit_at(text, j)) ++j, ++fraction_digits;
    }
    if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
      std::size_t k = j + 1;
      if (k < text.size() && (text[k] == '-' || text[k] == '+')) ++k;
      if (detail::is_digit_at(text, k)) {
        has_exponent = true;
        while (detail::is_digit_at(text, k)) ++k;
        exponent = std::atoi(text.substr(j + 1, k - j - 1).c_str());
        j = k;
      }
    }
    const std::string token = text.substr(i, j - i);
    out.push_back({token, std::strtod(token.c_str(), nullptr),
                   detail::printed_tolerance(token, has_dot, fraction_digits, has_exponent, exponent, how)});
    i = j;
  }
  return out;
}

// The printed numbers as an array of `shape`, for notebooks whose inputs are known only as printed.
inline Array<double> printed_array(const std::string& text, Printed how, const Shape& shape) {
  const auto numbers = parse_printed(text, how);
  if (numbers.size() != shape_numel(shape))
    throw std::invalid_argument("printed_array: the text holds " + std::to_string(numbers.size()) +
                                " numbers but shape " + shape_str(shape) + " needs " +
                                std::to_string(shape_numel(shape)));
  Array<double> out = Array<double>::from_shape(shape);
  std::size_t i = 0;
  for (auto& v : out) v = numbers[i++].value;
  return out;
}

inline bool within_printed(double computed, const PrintedNumber& p, double extra_tolerance) {
  if (std::isinf(p.value)) return computed == p.value;
  return std::abs(computed - p.value) <= p.tolerance + extra_tolerance;
}

// True when every element of `computed` (row-major) shows as printed. No assertion: for tests that expect
// a mismatch.
inline bool matches_printed(const Array<double>& computed, const std::string& text, Printed how,
                            double extra_tolerance = 0.0) {
  const auto printed = parse_printed(text, how);
  if (printed.size() != computed.size()) return false;
  std::size_t i = 0;
  for (const double c : computed)
    if (!within_printed(c, printed[i++], extra_tolerance)) return false;
  return true;
}

// Checks each element of `computed` (row-major) against the printed numbers. `extra_tolerance` is for
// values computed from printed (rounded) inputs: the rounding of the inputs carried to the output.
inline void check_printed(const Array<double>& computed, const std::string& text, Printed how,
                          double extra_tolerance = 0.0) {
  const auto printed = parse_printed(text, how);
  INFO("printed: " << text);
  REQUIRE(computed.size() == printed.size());
  std::size_t i = 0;
  for (const double c : computed) {
    const PrintedNumber& p = printed[i];
    std::ostringstream what;
    what << std::setprecision(17) << "element " << i << ": printed " << p.text << ", computed " << c
         << ", |difference| " << std::abs(c - p.value) << ", allowed " << p.tolerance + extra_tolerance;
    INFO(what.str());
    CHECK(within_printed(c, p, extra_tolerance));
    ++i;
  }
}

}  // namespace tf::seeds
