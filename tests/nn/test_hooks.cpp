// nn::Hooks: the GPT's forward passes each activation under TransformerLens' name (nn/hooks.hpp) to hooks that read
// or replace it. The names come in the forward's order, with their shapes; each cached value is where its name says
// (checked against its neighbours); hooks that return their input leave the logits unchanged, bit for bit where the
// path is the same; zeroing a head's z is the existing head ablation; a wrong shape or name throws naming it. A
// backward hook gets the loss's gradient at its point (float64 central differences) and what it leaves flows on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "support/configs.hpp"
#include "tinyformer/nn/gpt.hpp"
#include "tinyformer/nn/hooks.hpp"
#include "tinyformer/ops/ops.hpp"

using namespace tf;
using namespace tf::nn;

namespace {

using config::AttentionImpl;

// Variants of a small GPT (V 7, T 5, C 8, H 2, L 2): learned positions or rope, full or grouped-query attention.
struct Variant {
  const char* name;
  config::ModelConfig cfg;
};

std::vector<Variant> variants(AttentionImpl impl) {
  std::vector<Variant> out;
  config::ModelConfig learned = test::tiny_model();
  learned.attention = impl;
  out.push_back({"learned positions", learned});
  config::ModelConfig rope = learned;
  rope.position = config::Position::rope;
  rope.n_head = 4;
  rope.n_kv_head = 2;
  out.push_back({"rope, n_head 4, n_kv_head 2", rope});
  config::ModelConfig mqa = learned;
  mqa.n_kv_head = 1;
  mqa.tie_weights = true;
  out.push_back({"multi-query, tied", mqa});
  config::ModelConfig attn_only = learned;  // model.mlp none and model.norm none: no resid_mid, mlp_out, ln_final
  attn_only.mlp = config::Mlp::none;
  attn_only.norm = config::Norm::none;
  out.push_back({"attention-only, no norms", attn_only});
  return out;
}

IndexArray prompt(std::size_t B, std::size_t T, Index first) {
  IndexArray ids = IndexArray::from_shape({B, T});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) ids(b, t) = static_cast<Index>((first + 3 * b + 2 * t) % 7);
  return ids;
}

// A model in eval mode, its weights drawn from seed 3 (dropout would differ from run to run otherwise).
std::unique_ptr<GPT<float>> make_model(const config::ModelConfig& cfg) {
  auto model = std::make_unique<GPT<float>>(cfg, 3);
  model->eval();
  return model;
}

Array<float> plus(const Array<float>& a, const Array<float>& b) { return add(Var<float>(a), Var<float>(b)).value(); }

// hook_embed [B,T,C] + hook_pos_embed [1,T,C], as GPT::embed adds them (the positions as [T,C])
Array<float> embedded(const ActivationCache<float>& c) {
  if (!c.count("hook_pos_embed")) return c.at("hook_embed");
  const Array<float>& pos = c.at("hook_pos_embed");
  const long T = long(pos.shape()[1]), C = long(pos.shape()[2]);
  return add(Var<float>(c.at("hook_embed")), reshape(Var<float>(pos), {T, C})).value();
}

}  // namespace

TEST_CASE("nn: hooks see every name of hook_names once, in the forward's order, with TransformerLens' shapes",
          "[nn][hooks]") {
  for (const auto& [what, cfg] : variants(AttentionImpl::fused)) {
    INFO(what);
    auto model = make_model(cfg);
    const std::size_t B = 2, T = 5, C = cfg.d_model, H = cfg.n_head, D = C / H,
                      Hkv = cfg.n_kv_head == 0 ? H : cfg.n_kv_head;
    std::vector<std::string> seen;
    Hooks<float> hooks;
    ActivationCache<float> cache;
    for (const auto& name : model->hook_names())
      hooks.add(name, [&](const Var<float>& x, const std::string& n) {
        seen.push_back(n);
        return x;
      });
    hooks.cache_into(cache);
    model->forward(prompt(B, T, 1), hooks);
    CHECK(seen == model->hook_names());
    REQUIRE(cache.size() == model->hook_names().size());
    for (const auto& [name, value] : cache) {
      INFO(name);
      const auto ends = [&hook = name](const std::string& leaf) {  // C++17 lambdas cannot capture a binding itself
        return hook.size() >= leaf.size() && hook.compare(hook.size() - leaf.size(), leaf.size(), leaf) == 0;
      };
      Shape expected{B, T, C};
      if (ends("hook_q") || ends("hook_z")) expected = {B, T, H, D};
      if (ends("hook_k") || ends("hook_v")) expected = {B, T, Hkv, D};
      if (ends("hook_attn_scores") || ends("hook_pattern")) expected = {B, H, T, T};
      if (ends("mlp.hook_pre") || ends("mlp.hook_pre_linear") || ends("mlp.hook_post"))
        expected = {B, T, mlp_hidden(cfg)};
      if (ends("hook_scale")) expected = {B, T, 1};
      if (name == "hook_pos_embed") expected = {1, T, C};
      CHECK(to_shape(value.shape()) == expected);
    }
    CHECK((cfg.position == config::Position::rope) == (cache.count("hook_pos_embed") == 0));
  }
}

TEST_CASE("nn: each cached activation is where its name says: sums of its neighbours, softmax of the scores, ...",
          "[nn][hooks]") {
  for (auto impl : {AttentionImpl::fused, AttentionImpl::composed})
    for (const auto& [what, cfg] : variants(impl)) {
      INFO(what << (impl == AttentionImpl::fused ? ", fused" : ", composed"));
      auto model = make_model(cfg);
      ActivationCache<float> c;
      const Array<float> logits = model->run_with_cache(prompt(2, 5, 2), c).value();
      CHECK((c.at("blocks.0.hook_resid_pre") == embedded(c)));
      for (std::size_t l = 0; l < cfg.n_layer; ++l) {
        const std::string b = "blocks." + std::to_string(l) + ".";
        if (cfg.mlp == config::Mlp::none) {
          CHECK(c.count(b + "hook_resid_mid") + c.count(b + "hook_mlp_out") == 0);
          CHECK((c.at(b + "hook_resid_post") == plus(c.at(b + "hook_resid_pre"), c.at(b + "hook_attn_out"))));
        } else {
          CHECK((c.at(b + "hook_resid_mid") == plus(c.at(b + "hook_resid_pre"), c.at(b + "hook_attn_out"))));
          CHECK((c.at(b + "hook_resid_post") == plus(c.at(b + "hook_resid_mid"), c.at(b + "hook_mlp_out"))));
          // the neurons: post = gelu(pre) (tiny_model's MLP), mlp_out = c_proj(post)
          CHECK((c.at(b + "mlp.hook_post") == gelu(Var<float>(c.at(b + "mlp.hook_pre"))).value()));
          const Array<float> out = model->block(l).mlp->c_proj.forward(Var<float>(c.at(b + "mlp.hook_post"))).value();
          CHECK((c.at(b + "hook_mlp_out") == out));
        }
        if (cfg.norm != config::Norm::none) {  // ln1's output is the fused norm's, to rounding; its scale by hand
          const Array<float>& pre = c.at(b + "hook_resid_pre");
          const Array<float> fused = model->block(l).ln_1.forward(Var<float>(pre)).value();
          CHECK(xt::allclose(c.at(b + "ln1.hook_normalized"), fused, 1e-5, 1e-6));
          double mean = 0, var = 0;
          const std::size_t C = pre.shape()[2];
          for (std::size_t i = 0; i < C; ++i) mean += pre(1, 2, i) / double(C);
          for (std::size_t i = 0; i < C; ++i) var += (pre(1, 2, i) - mean) * (pre(1, 2, i) - mean) / double(C);
          CHECK(std::abs(c.at(b + "ln1.hook_scale")(1, 2, 0) - std::sqrt(var + 1e-5)) < 1e-5);
        }
        if (l + 1 < cfg.n_layer)
          CHECK((c.at(b + "hook_resid_post") == c.at("blocks." + std::to_string(l + 1) + ".hook_resid_pre")));
        CHECK((c.at(b + "attn.hook_pattern") == softmax(Var<float>(c.at(b + "attn.hook_attn_scores"))).value()));
        // z [B,T,H,D] = pattern [B,H,T,T] v (v's head g serving q heads g G .. g G + G - 1)
        const Array<float>&p = c.at(b + "attn.hook_pattern"), &v = c.at(b + "attn.hook_v"),
              &z = c.at(b + "attn.hook_z");
        const std::size_t H = p.shape()[1], T = p.shape()[2], D = z.shape()[3], G = H / v.shape()[2];
        double worst = 0;
        for (std::size_t i = 0; i < 2; ++i)
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
              for (std::size_t d = 0; d < D; ++d) {
                double want = 0;
                for (std::size_t j = 0; j < T; ++j) want += double(p(i, h, t, j)) * v(i, j, h / G, d);
                worst = std::max(worst, std::abs(want - z(i, t, h, d)));
              }
        CHECK(worst < 1e-5);
        // the scores are q k^T / sqrt(D) below the diagonal (q and k after rope: not checked with rope)
        if (cfg.position == config::Position::learned) {
          const Array<float>&q = c.at(b + "attn.hook_q"), &k = c.at(b + "attn.hook_k"),
                &s = c.at(b + "attn.hook_attn_scores");
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
              for (std::size_t j = 0; j < T; ++j) {
                double dot = 0;
                for (std::size_t d = 0; d < D; ++d) dot += double(q(1, t, h, d)) * k(1, j, h / G, d);
                if (j <= t)
                  CHECK(std::abs(dot / std::sqrt(double(D)) - s(1, h, t, j)) < 1e-5);
                else
                  CHECK(std::isinf(s(1, h, t, j)));
              }
        }
      }
      // the logits are ln_final's output (without norms: the last block's resid_post) times the unembedding
      Var<float> unembed = model->named_parameters().back().second;  // lm_head.weight, or wte tied
      if (cfg.tie_weights) unembed = model->named_parameters().front().second;
      const std::string last = "blocks." + std::to_string(cfg.n_layer - 1) + ".hook_resid_post";
      CHECK((cfg.norm == config::Norm::none) == (c.count("ln_final.hook_normalized") == 0));
      const Array<float>& final_resid = cfg.norm == config::Norm::none ? c.at(last) : c.at("ln_final.hook_normalized");
      const Array<float> expected = matmul(Var<float>(final_resid), unembed, false, true).value();
      CHECK(xt::allclose(logits, expected, 1e-5, 1e-6));
    }
}

TEST_CASE("nn: hooks that return their input leave the logits bit for bit as the plain forward's", "[nn][hooks]") {
  auto identity = [](const Var<float>& x, const std::string&) { return x; };
  for (auto impl : {AttentionImpl::fused, AttentionImpl::composed})
    for (const auto& [what, cfg] : variants(impl)) {
      INFO(what << (impl == AttentionImpl::fused ? ", fused" : ", composed"));
      auto model = make_model(cfg);
      const IndexArray ids = prompt(3, 5, 4);
      const Array<float> plain = model->forward(ids).value();
      Hooks<float> outside_attention, everywhere;
      for (const auto& name : model->hook_names()) {
        everywhere.add(name, identity);
        if (name.find(".attn.") == std::string::npos) outside_attention.add(name, identity);
      }
      // hooks outside attention keep the model's own attention (the fused kernel or the composed ops)
      CHECK((model->forward(ids, outside_attention).value() == plain));
      const Array<float> hooked = model->forward(ids, everywhere).value();
      if (impl == AttentionImpl::composed)
        CHECK((hooked == plain));
      else  // hooks inside attention take the composed ops, which round otherwise than the fused kernel
        CHECK(xt::allclose(hooked, plain, 1e-5, 1e-6));
      CHECK((model->forward(ids).value() == plain));  // nothing stays behind
    }
}

TEST_CASE("nn: a hook that zeroes a head's z changes the logits exactly as ablate_head does", "[nn][hooks]") {
  for (auto impl : {AttentionImpl::composed, AttentionImpl::fused})
    for (const auto& [what, cfg] : variants(impl))
      for (std::size_t layer = 0; layer < cfg.n_layer; ++layer)
        for (std::size_t head = 0; head < cfg.n_head; ++head) {
          INFO(what << (impl == AttentionImpl::fused ? ", fused" : ", composed") << ", layer " << layer << " head "
                    << head);
          auto model = make_model(cfg);
          const IndexArray ids = prompt(2, 5, 3);
          const Array<float> intact = model->forward(ids).value();
          model->block(layer).attn.ablate_head(head);
          const Array<float> ablated = model->forward(ids).value();
          model->block(layer).attn.clear_ablation();
          Hooks<float> hooks;
          hooks.add("blocks." + std::to_string(layer) + ".attn.hook_z",
                    [head](const Var<float>& z, const std::string&) {
                      Array<float> zeroed = z.value();  // [B,T,H,D]
                      xt::view(zeroed, xt::all(), xt::all(), head, xt::all()) = 0.0f;
                      return Var<float>(zeroed);
                    });
          const Array<float> hooked = model->forward(ids, hooks).value();
          CHECK(xt::amax(xt::abs(ablated - intact))() > 1e-4);  // the head matters
          if (impl == AttentionImpl::composed)
            CHECK((hooked == ablated));
          else
            CHECK(xt::allclose(hooked, ablated, 1e-5, 1e-6));
        }
}

TEST_CASE("nn: patching resid_pre with another prompt's cached one gives that prompt's logits from there on",
          "[nn][hooks]") {
  for (const auto& [what, cfg] : variants(AttentionImpl::fused)) {
    INFO(what);
    auto model = make_model(cfg);
    const IndexArray clean = prompt(1, 5, 1), corrupted = prompt(1, 5, 5);
    ActivationCache<float> clean_cache;
    const Array<float> clean_logits = model->run_with_cache(clean, clean_cache).value();
    const Array<float> corrupted_logits = model->forward(corrupted).value();
    REQUIRE((clean_logits != corrupted_logits));
    for (std::size_t l = 0; l < cfg.n_layer; ++l) {
      const std::string name = "blocks." + std::to_string(l) + ".hook_resid_pre";
      Hooks<float> patch;
      patch.add(name, [&](const Var<float>&, const std::string& n) { return Var<float>(clean_cache.at(n)); });
      // the whole residual stream patched: the rest of the forward is the clean run's (composed vs fused: rounding)
      CHECK(xt::allclose(model->forward(corrupted, patch).value(), clean_logits, 1e-5, 1e-6));
    }
  }
}

TEST_CASE("nn: a hook's result of another shape, and a name the model does not have, throw naming them",
          "[nn][hooks]") {
  for (const auto& [what, cfg] : variants(AttentionImpl::fused)) {
    INFO(what);
    auto model = make_model(cfg);
    const IndexArray ids = prompt(2, 4, 1);
    const Array<float> plain = model->forward(ids).value();
    ActivationCache<float> probe;
    model->run_with_cache(ids, probe);
    for (const auto& name : model->hook_names()) {
      const Shape shape = to_shape(probe.at(name).shape());
      for (int wrong = 0; wrong < 3; ++wrong) {
        Shape got = shape;
        if (wrong == 0) got.back() += 1;             // one more column
        if (wrong == 1) got.erase(got.begin());      // a dimension less
        if (wrong == 2) got.insert(got.begin(), 1);  // one more
        INFO(name << " returning " << shape_str(got));
        Hooks<float> hooks;
        hooks.add(name, [&](const Var<float>&, const std::string&) {
          return Var<float>(Array<float>(xt::zeros<float>(got)));
        });
        CHECK_THROWS_WITH(model->forward(ids, hooks), Catch::Contains("hook " + name + " returned " + shape_str(got) +
                                                                      ", the activation is " + shape_str(shape)));
      }
    }
    const std::vector<std::string> unknown{"blocks.2.hook_resid_pre", "blocks.0.hook_q", "hook_resid_pre", "",
                                           cfg.position == config::Position::rope ? "hook_pos_embed" : "hook_pos"};
    for (const auto& name : unknown) {
      Hooks<float> hooks;
      hooks.add(name, [](const Var<float>& x, const std::string&) { return x; });
      CHECK_THROWS_WITH(model->forward(ids, hooks), Catch::Contains("unknown hook name '" + name + "'"));
    }
    CHECK((model->forward(ids).value() == plain));  // a refused forward leaves nothing behind
  }
}

TEST_CASE("nn: a cache of named activations holds only those and keeps the fused kernels outside them", "[nn][hooks]") {
  for (const auto& [what, cfg] : variants(AttentionImpl::fused)) {
    INFO(what);
    auto model = make_model(cfg);
    const IndexArray ids = prompt(2, 5, 1);
    const Array<float> plain = model->forward(ids).value();
    ActivationCache<float> all, some;
    model->run_with_cache(ids, all);
    Hooks<float> hooks;
    hooks.cache_into(some, {"hook_embed", "blocks.1.hook_resid_post"});
    CHECK((model->forward(ids, hooks).value() == plain));  // no name inside attention or the MLP: bit for bit
    REQUIRE(some.size() == 2);
    CHECK(xt::allclose(some.at("blocks.1.hook_resid_post"), all.at("blocks.1.hook_resid_post"), 1e-5, 1e-6));
    CHECK((some.at("hook_embed") == all.at("hook_embed")));
    ActivationCache<float> z;
    Hooks<float> inside;
    inside.cache_into(z, {"blocks.0.attn.hook_z"});
    model->forward(ids, inside);
    CHECK((z.size() == 1 && (z.at("blocks.0.attn.hook_z") == all.at("blocks.0.attn.hook_z"))));
    Hooks<float> wrong;
    wrong.cache_into(z, {"blocks.7.hook_z"});
    CHECK_THROWS_WITH(model->forward(ids, wrong), Catch::Contains("unknown hook name 'blocks.7.hook_z'"));
  }
}

TEST_CASE("nn: a backward hook gets the loss's gradient at its hook point, as float64 central differences give it",
          "[nn][hooks]") {
  const config::ModelConfig cfg = variants(AttentionImpl::fused).front().cfg;  // learned positions, both MLP and norms
  GPT<double> model(cfg, 3);
  model.eval();
  const IndexArray ids = prompt(2, 5, 4), targets = prompt(2, 5, 1);
  for (const char* name :
       {"hook_embed", "hook_pos_embed", "blocks.0.attn.hook_q", "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z",
        "blocks.1.hook_resid_mid", "blocks.1.mlp.hook_post", "ln_final.hook_normalized"}) {
    INFO(name);
    Array<double> grad;
    int calls = 0;
    Hooks<double> hooks;
    hooks.add_backward(name, [&](Array<double>& g, const std::string& at) {
      CHECK(at == name);
      grad = g;
      ++calls;
    });
    cross_entropy(model.forward(ids, hooks), targets).backward();
    REQUIRE(calls == 1);
    // The loss along a direction d added to the activation there: (L(+eps) - L(-eps)) / 2 eps = <grad, d>
    Array<double> d = Array<double>::from_shape(grad.shape());
    for (std::size_t i = 0; i < d.size(); ++i) d.flat(i) = std::sin(0.7 * double(i) + 1.0);
    const auto loss_along = [&](double eps) {
      Hooks<double> shift;
      shift.add(name, [&](const Var<double>& x, const std::string&) { return Var<double>(x.value() + eps * d); });
      NoGradGuard no_grad;
      return cross_entropy(model.forward(ids, shift), targets).item();
    };
    // eps 1e-6: the embeddings are small (std 0.02), so the norms after them curve sharply and the differences' error,
    // which falls as eps^2, is still 2e-6 of the value at eps 1e-5
    const double eps = 1e-6;
    const double differences = (loss_along(eps) - loss_along(-eps)) / (2 * eps);
    CHECK(double(xt::sum(grad * d)()) == Approx(differences).epsilon(1e-6).margin(1e-10));
  }
}

TEST_CASE("nn: what a backward hook leaves is the gradient the layers before it get", "[nn][hooks]") {
  const config::ModelConfig cfg = variants(AttentionImpl::fused).front().cfg;
  auto model = make_model(cfg);
  const IndexArray ids = prompt(2, 5, 4), targets = prompt(2, 5, 1);
  Hooks<float> zero;  // nothing reaches the embeddings but through block 0's input
  zero.add_backward("blocks.0.hook_resid_pre", [](Array<float>& g, const std::string&) { g.fill(0.0F); });
  cross_entropy(model->forward(ids, zero), targets).backward();
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    REQUIRE(p.has_grad());
    const bool embedding = name.find("wte") != std::string::npos || name.find("wpe") != std::string::npos;
    CHECK((xt::amax(xt::abs(p.grad()))() == 0.0F) == embedding);
  }
  model->zero_grad();
  Hooks<float> scale;  // the same backward with a gradient doubled at hook_embed: wte's doubles, nothing else moves
  scale.add_backward("hook_embed", [](Array<float>& g, const std::string&) { g *= 2.0F; });
  cross_entropy(model->forward(ids), targets).backward();
  std::map<std::string, Array<float>> plain;
  for (const auto& [name, p] : model->named_parameters()) plain[name] = p.grad();
  model->zero_grad();
  cross_entropy(model->forward(ids, scale), targets).backward();
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    const Array<float> expected = name == "transformer.wte.weight" ? Array<float>(2.0F * plain[name]) : plain[name];
    CHECK(xt::allclose(p.grad(), expected, 1e-6, 1e-7));
  }
}
