// Phase change, grokking marks and the Fourier spectrum of an embedding: the definitions are in circuits.hpp.
#include "tinyformer/analysis/circuits.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace tf::analysis {

namespace {

constexpr double kPi = 3.14159265358979323846;

double score_at(const std::vector<std::vector<double>>& table, std::size_t l, std::size_t h) {
  return l < table.size() && h < table[l].size() ? table[l][h] : std::numeric_limits<double>::quiet_NaN();
}

// The head of a layer >= 1 with the highest finite score in the last point that has scores.
void best_later_head(const std::vector<EvalPoint>& points, PhaseChange& pc) {
  for (auto p = points.rbegin(); p != points.rend(); ++p) {
    if (p->score.size() < 2) continue;
    double best = -1.0;
    for (std::size_t l = 1; l < p->score.size(); ++l)
      for (std::size_t h = 0; h < p->score[l].size(); ++h)
        if (std::isfinite(p->score[l][h]) && p->score[l][h] > best) best = p->score[l][h], pc.layer = l, pc.head = h;
    return;
  }
}

// The score of (layer, head) at `step`, NaN when that evaluation has none.
double score_at_step(const std::vector<EvalPoint>& points, long step, std::size_t l, std::size_t h) {
  for (const auto& p : points)
    if (p.step == step) return score_at(p.score, l, h);
  return std::numeric_limits<double>::quiet_NaN();
}

void previous_token_head(const std::vector<EvalPoint>& points, double threshold, PhaseChange& pc) {
  for (const auto& p : points) {
    if (p.previous_token.empty()) continue;
    for (std::size_t h = 0; h < p.previous_token[0].size(); ++h)
      if (std::isfinite(p.previous_token[0][h]) && p.previous_token[0][h] >= threshold) {
        pc.previous_token_step = p.step;
        pc.previous_token_head = h;
        pc.previous_token_score = p.previous_token[0][h];
        return;
      }
  }
}

}  // namespace

PhaseChange find_phase_change(const std::vector<EvalPoint>& points, const PhaseChangeCriteria& criteria) {
  PhaseChange pc;
  std::vector<const EvalPoint*> finite;
  for (const auto& p : points)
    if (std::isfinite(p.loss)) finite.push_back(&p);
  best_later_head(points, pc);
  previous_token_head(points, criteria.head_threshold, pc);
  if (finite.size() < 2) return pc;
  const double span = static_cast<double>(finite.back()->step - finite.front()->step);
  const double max_window = criteria.max_window_fraction * span;
  double lowest = finite.front()->loss;
  for (const EvalPoint* p : finite) lowest = std::min(lowest, p->loss);
  const double total_fall = finite.front()->loss - lowest;
  double best_fall = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < finite.size(); ++i)
    for (std::size_t j = i + 1; j < finite.size(); ++j) {
      if (static_cast<double>(finite[j]->step - finite[i]->step) > max_window) break;
      ++pc.windows;
      const double before = finite[i]->loss, after = finite[j]->loss, fall = before - after;
      const bool qualifies = fall > 0 && fall >= criteria.min_share_of_total * total_fall &&
                             after <= (1.0 - criteria.min_relative_drop) * before;
      // a qualifying window beats any other; among windows of the same kind, the larger fall (the earlier on ties)
      if ((qualifies && !pc.found) || ((qualifies == pc.found) && fall > best_fall)) {
        pc.found = qualifies;
        best_fall = fall;
        pc.start_step = finite[i]->step, pc.end_step = finite[j]->step;
        pc.loss_before = before, pc.loss_after = after;
        const double halfway = before - fall / 2;
        for (std::size_t k = i; k <= j; ++k)
          if (finite[k]->loss <= halfway) {
            pc.step = finite[k]->step;
            break;
          }
      }
    }
  if (pc.layer && pc.windows > 0) {
    pc.score_before = score_at_step(points, pc.start_step, *pc.layer, *pc.head);
    pc.score_after = score_at_step(points, pc.end_step, *pc.layer, *pc.head);
  } else {
    pc.score_before = pc.score_after = std::numeric_limits<double>::quiet_NaN();  // no window: nothing before or after
  }
  return pc;
}

GrokkingMarks find_grokking(const std::vector<long>& steps, const std::vector<double>& train_accuracy,
                            const std::vector<double>& held_out_accuracy) {
  if (steps.size() != train_accuracy.size() || steps.size() != held_out_accuracy.size())
    throw std::invalid_argument(fmt::format("find_grokking: {} steps, {} train and {} held-out accuracies: give one "
                                            "of each per evaluation",
                                            steps.size(), train_accuracy.size(), held_out_accuracy.size()));
  GrokkingMarks g;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const double train = train_accuracy[i], held_out = held_out_accuracy[i];
    if (std::isfinite(held_out)) g.best_held_out = std::max(g.best_held_out, held_out);
    if (!std::isfinite(train) || !std::isfinite(held_out)) continue;
    if (!g.memorised && train >= 0.99 && held_out <= 0.5) {
      g.memorised = steps[i];
      g.train_at_memorised = train, g.held_out_at_memorised = held_out;
    } else if (g.memorised && !g.grokked && held_out >= 0.95) {
      g.grokked = steps[i];
      g.held_out_at_grokked = held_out;
    }
  }
  return g;
}

std::vector<double> fourier_spectrum(const Array<float>& embedding) {
  if (embedding.dimension() != 2 || embedding.shape(0) < 2)
    throw std::invalid_argument(fmt::format("fourier_spectrum: the embedding must be [p, C] with p >= 2 rows, got {}",
                                            shape_str(to_shape(embedding.shape()))));
  const std::size_t p = embedding.shape(0), C = embedding.shape(1), K = p / 2;
  std::vector<double> power(K + 1, 0.0);
  const double two_pi_over_p = 2.0 * kPi / static_cast<double>(p);
  for (std::size_t k = 0; k <= K; ++k) {
    // the unit vectors of frequency k: the constant for k = 0, cos alone at the Nyquist frequency of an even p
    const bool has_sin = k != 0 && 2 * k != p;
    const double cos_norm2 = k == 0 || 2 * k == p ? static_cast<double>(p) : static_cast<double>(p) / 2;
    const double sin_norm2 = static_cast<double>(p) / 2;
    for (std::size_t c = 0; c < C; ++c) {
      double dot_cos = 0.0, dot_sin = 0.0;
      for (std::size_t x = 0; x < p; ++x) {
        const double angle = two_pi_over_p * static_cast<double>(k * x % p);
        dot_cos += static_cast<double>(embedding(x, c)) * std::cos(angle);
        dot_sin += static_cast<double>(embedding(x, c)) * std::sin(angle);
      }
      power[k] += dot_cos * dot_cos / cos_norm2 + (has_sin ? dot_sin * dot_sin / sin_norm2 : 0.0);
    }
  }
  double total = 0.0;
  for (const double v : power) total += v;
  if (total > 0)
    for (double& v : power) v /= total;
  return power;
}

}  // namespace tf::analysis
