#include "model/config/model_weights.h"

#include <fmt/format.h>

#include "model/config/first_error.h"

namespace wb::model {

namespace {

Expected<LayerWeights> BindLayer(const ModelConfig& c, const WeightSource& s, int layer) {
  const uint64_t h = c.hidden, q = c.qWidth(), kv = c.kvWidth();
  auto name = [layer](std::string_view rest) { return fmt::format("blk.{}.{}", layer, rest); };
  FirstError e;
  LayerWeights w;
  w.attnNorm = e.Take(s.Norm(name("attn_norm.weight"), h, c.normShift));
  w.q = e.Take(s.Matrix(name("attn_q.weight"), q, h));
  w.k = e.Take(s.Matrix(name("attn_k.weight"), kv, h));
  w.v = e.Take(s.Matrix(name("attn_v.weight"), kv, h));
  w.o = e.Take(s.Matrix(name("attn_output.weight"), h, q));
  if (c.qkvBias) {
    w.qBias = e.Take(s.Vector(name("attn_q.bias"), q));
    w.kBias = e.Take(s.Vector(name("attn_k.bias"), kv));
    w.vBias = e.Take(s.Vector(name("attn_v.bias"), kv));
  }
  if (c.outputBias) w.oBias = e.Take(s.Vector(name("attn_output.bias"), h));
  if (c.qkNorm != QkNorm::kNone) {
    const bool perHead = c.qkNorm == QkNorm::kPerHead;
    w.qNorm = e.Take(s.Norm(name("attn_q_norm.weight"), perHead ? c.headDim : q, c.normShift));
    w.kNorm = e.Take(s.Norm(name("attn_k_norm.weight"), perHead ? c.headDim : kv, c.normShift));
  }
  if (c.blockNorms == BlockNorms::kSandwich) {
    w.postAttnNorm = e.Take(s.Norm(name("post_attention_norm.weight"), h, c.normShift));
    w.postFfnNorm = e.Take(s.Norm(name("post_ffw_norm.weight"), h, c.normShift));
  }
  w.ffnNorm = e.Take(s.Norm(name("ffn_norm.weight"), h, c.normShift));
  if (!c.layers[layer].moe) {
    w.gate = e.Take(s.Matrix(name("ffn_gate.weight"), c.ffn, h));
    w.up = e.Take(s.Matrix(name("ffn_up.weight"), c.ffn, h));
    w.down = e.Take(s.Matrix(name("ffn_down.weight"), h, c.ffn));
  } else {
    w.router = e.Take(s.Matrix(name("ffn_gate_inp.weight"), c.experts, h));
    for (int x = 0; x < c.experts && e.ok(); ++x) {
      ExpertWeights expert;
      expert.gate = e.Take(s.Expert(name("ffn_gate_exps.weight"), x, c.expertFfn, h));
      expert.up = e.Take(s.Expert(name("ffn_up_exps.weight"), x, c.expertFfn, h));
      expert.down = e.Take(s.Expert(name("ffn_down_exps.weight"), x, h, c.expertFfn));
      w.experts.push_back(std::move(expert));
    }
  }
  if (!e.ok()) return e.error();
  return w;
}

}  // namespace

Expected<ModelWeights> BindWeights(const ModelConfig& c, const WeightSource& s) {
  FirstError e;
  ModelWeights w;
  w.embedding = e.Take(s.Matrix("token_embd.weight", c.vocab, c.hidden));
  for (int layer = 0; layer < c.layerCount() && e.ok(); ++layer) w.layers.push_back(e.Take(BindLayer(c, s, layer)));
  w.outputNorm = e.Take(s.Norm("output_norm.weight", c.hidden, c.normShift));
  w.head = c.tiedHead ? w.embedding : e.Take(s.Matrix("output.weight", c.vocab, c.hidden));
  if (!e.ok()) return e.error();
  return w;
}

}  // namespace wb::model
