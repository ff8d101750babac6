#pragma once
// Gradient norms and clipping, and finding the first non-finite gradient or value.
#include "tinyformer/optim/optimizer.hpp"

namespace tf::optim {

// torch.nn.utils.clip_grad_norm_ with the 2-norm:
//   total = sqrt(sum of g^2 over every element of every gradient)   float64, parameters in order, each in a fixed
//                                                                    order of blocks and lanes (any thread count)
//   coef  = max_norm / (total + 1e-6);  every gradient *= coef (rounded to S) when coef < 1
// (torch multiplies by min(coef, 1): the same result). So gradients change once total > max_norm - 1e-6.
// Parameters without a gradient are skipped and a Var listed twice counts once; with no gradient at all the
// result is 0. A non-finite total (inf/NaN gradients) is returned and the gradients are left as they are,
// so the caller can skip the step or stop (torch would turn them into NaN or 0).
// Throws std::invalid_argument unless max_norm is finite and > 0.
template <class S>
double clip_grad_norm(const std::vector<Var<S>>& params, double max_norm);
// The total above without clipping (for logging when clipping is off); NaN/inf propagate.
template <class S>
double grad_norm(const std::vector<Var<S>>& params);
template <class S>
double grad_norm(const NamedVars<S>& params);
template <class S>
double clip_grad_norm(const NamedVars<S>& params, double max_norm);
// The 2-norm of the parameters' values, sqrt(sum of w^2 over every element of every parameter), float64, each Var
// once (a tied weight counts once): the weight norm that weight decay shrinks (logged as weight_norm).
template <class S>
double weight_norm(const NamedVars<S>& params);
// For the message when training meets a NaN or an infinity: the name of the first parameter (in order) whose
// gradient (parameters without one are skipped), or whose value, holds one; "" when there is none.
template <class S>
std::string first_nonfinite_grad(const NamedVars<S>& params);
template <class S>
std::string first_nonfinite_value(const NamedVars<S>& params);

}  // namespace tf::optim
