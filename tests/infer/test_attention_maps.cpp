// infer::probe_attention (what `tinyformer attention` writes) against the hooks' cache: the same weights.
#include <catch2/catch.hpp>

#include <xtensor/xview.hpp>

#include "support/configs.hpp"
#include "tinyformer/infer/attention_maps.hpp"
#include "tinyformer/nn/hooks.hpp"

using namespace tf;

TEST_CASE("infer: the cached hook_pattern of each layer is probe_attention's layer, bit for bit with composed "
          "attention",
          "[infer][hooks]") {
  for (auto impl : {config::AttentionImpl::composed, config::AttentionImpl::fused})
    for (auto position : {config::Position::learned, config::Position::rope}) {
      INFO((impl == config::AttentionImpl::fused ? "fused" : "composed")
           << (position == config::Position::rope ? ", rope" : ""));
      config::ModelConfig cfg = test::model(7, 6, 16, 4, 3);
      cfg.attention = impl;
      cfg.position = position;
      nn::GPT<float> model(cfg, 5);
      IndexArray ids = IndexArray::from_shape({6});
      for (std::size_t t = 0; t < 6; ++t) ids(t) = static_cast<Index>((5 * t + 1) % 7);
      const Array<float> maps = infer::probe_attention(model, ids);  // [L,H,T,T]
      IndexArray batch = ids;
      batch.reshape({1, 6});
      model.eval();
      nn::ActivationCache<float> cache;
      model.run_with_cache(batch, cache);
      for (std::size_t l = 0; l < cfg.n_layer; ++l) {
        INFO("layer " << l);
        const Array<float> pattern = xt::view(cache.at("blocks." + std::to_string(l) + ".attn.hook_pattern"), 0);
        const Array<float> layer = xt::view(maps, l);
        if (impl == config::AttentionImpl::composed)
          CHECK((pattern == layer));
        else  // the hooks take the composed ops, the fused kernel rounds otherwise
          CHECK(xt::allclose(pattern, layer, 1e-5, 1e-6));
      }
    }
}
