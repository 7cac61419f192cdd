// The compiler's passes over the emitted step list: dead-step removal and
// fusion (detail/passes.h).
#include "executor/detail/passes.h"

#include <utility>

namespace hotpath::executor::detail {
namespace {

int32_t OutputOf(StepArgs& args) {
  int32_t out = -1;
  ForEachOperand(args, [&](Operand& op, bool is_output) {
    if (is_output) out = op.value;
  });
  return out;
}

bool HasNoActivation(const StepArgs& args) {
  if (const auto* gemm = std::get_if<GemmStep>(&args)) return gemm->activation.kind == Activation::kNone;
  if (const auto* binary = std::get_if<BinaryStep>(&args)) return binary->activation.kind == Activation::kNone;
  return false;
}

ActivationParams* ActivationOf(StepArgs& args) {
  if (auto* gemm = std::get_if<GemmStep>(&args)) return &gemm->activation;
  if (auto* binary = std::get_if<BinaryStep>(&args)) return &binary->activation;
  return nullptr;
}

Operand* FusedOutput(StepArgs& args) {
  if (auto* gemm = std::get_if<GemmStep>(&args)) return &gemm->c;
  if (auto* binary = std::get_if<BinaryStep>(&args)) return &binary->out;
  return nullptr;
}

// Who reads what, over the live steps.
struct Usage {
  std::vector<uint32_t> reads;      // per value: step operands, live aliases, graph outputs
  std::vector<bool> graph_output;   // per value
  std::vector<int32_t> first_read;  // per value: first step reading it, -1 if none
  std::vector<int32_t> producer;    // per root value: last step writing it (Concat writes several times)
};

Usage CountUsage(GraphBuilder& b, const std::vector<bool>& live) {
  const size_t n = b.values().size();
  Usage u{std::vector<uint32_t>(n, 0), std::vector<bool>(n, false), std::vector<int32_t>(n, -1),
          std::vector<int32_t>(n, -1)};
  for (size_t v = 0; v < n; ++v) {
    const Value& value = b.values()[v];
    if (value.kind == Value::Kind::kAlias && live[v]) ++u.reads[static_cast<size_t>(value.alias_of)];
  }
  for (int32_t t : b.plan().outputs) {
    ++u.reads[static_cast<size_t>(t)];
    u.graph_output[static_cast<size_t>(t)] = true;
  }
  std::vector<Step>& steps = b.steps();
  for (size_t s = 0; s < steps.size(); ++s) {
    ForEachOperand(steps[s].args, [&](Operand& op, bool is_output) {
      const size_t v = static_cast<size_t>(op.value);
      if (is_output) {
        u.producer[v] = static_cast<int32_t>(s);
        return;
      }
      ++u.reads[v];
      if (u.first_read[v] < 0) u.first_read[v] = static_cast<int32_t>(s);
    });
  }
  return u;
}

// True when `v` is available before step `s` runs: an input or constant, or
// produced by an earlier step.
bool ReadyBefore(GraphBuilder& b, const Usage& u, int32_t v, size_t s) {
  const int32_t root = b.Root(v);
  const Value::Kind kind = b.value(root).kind;
  if (kind != Value::Kind::kRuntime) return true;
  return u.producer[static_cast<size_t>(root)] >= 0 &&
         static_cast<size_t>(u.producer[static_cast<size_t>(root)]) < s;
}

// Gemm (no bias yet) followed by Add(result, bias) where the bias is a row
// [N] (in any rank that broadcasts so) or a scalar: the Add becomes the GEMM's
// epilogue.
bool TryFuseBias(GraphBuilder& b, const Usage& u, std::vector<Step>& steps, size_t s, size_t j) {
  auto* gemm = std::get_if<GemmStep>(&steps[s].args);
  auto* add = std::get_if<BinaryStep>(&steps[j].args);
  if (gemm == nullptr || add == nullptr || gemm->bias_kind != BiasKind::kNone ||
      add->op != BinaryOp::kAdd || add->activation.kind != Activation::kNone) {
    return false;
  }
  const int32_t v = gemm->c.value;
  const int32_t bias = add->a.value == v ? add->b.value : add->a.value;
  if (bias == v || !ReadyBefore(b, u, bias, s)) return false;
  const Shape& out = b.value(v).dims;
  if (!(b.value(add->out.value).dims == out) || out.empty()) return false;
  const Shape& bd = b.value(bias).dims;
  BiasKind kind = BiasKind::kNone;
  if (Numel(bd).is_const(1)) {
    kind = BiasKind::kScalar;
  } else if (!bd.empty() && bd.back() == gemm->n && out.back() == gemm->n && bd.size() <= out.size()) {
    kind = BiasKind::kRow;
    for (size_t i = 0; i + 1 < bd.size(); ++i) kind = bd[i].is_const(1) ? kind : BiasKind::kNone;
  }
  if (kind == BiasKind::kNone) return false;
  gemm->bias.value = bias;
  gemm->bias_kind = kind;
  gemm->beta = 1.0f;
  gemm->bias_stride = Fixed(0);
  gemm->c.value = add->out.value;
  return true;
}

// Gemm or Binary (no activation yet) followed by an activation of its result.
bool TryFuseActivation(std::vector<Step>& steps, size_t s, size_t j) {
  auto* act = std::get_if<ActivationStep>(&steps[j].args);
  if (act == nullptr || !HasNoActivation(steps[s].args)) return false;
  *ActivationOf(steps[s].args) = act->activation;
  FusedOutput(steps[s].args)->value = act->out.value;
  return true;
}

}  // namespace

std::vector<bool> LiveValues(GraphBuilder& b) {
  std::vector<bool> live(b.values().size(), false);
  for (int32_t t : b.plan().outputs) live[static_cast<size_t>(t)] = true;
  std::vector<Step>& steps = b.steps();
  // Aliases may point either way in step order, so iterate to a fixpoint
  // (two rounds for ordinary graphs).
  for (bool changed = true; changed;) {
    changed = false;
    auto mark = [&](int32_t v) {
      if (!live[static_cast<size_t>(v)]) live[static_cast<size_t>(v)] = changed = true;
    };
    for (size_t v = 0; v < live.size(); ++v) {
      const Value& value = b.values()[v];
      if (live[v] && value.kind == Value::Kind::kAlias) mark(value.alias_of);
    }
    for (size_t s = steps.size(); s-- > 0;) {
      if (!live[static_cast<size_t>(OutputOf(steps[s].args))]) continue;
      ForEachOperand(steps[s].args, [&](Operand& op, bool is_output) {
        if (!is_output) mark(op.value);
      });
    }
  }
  return live;
}

void RemoveDeadSteps(GraphBuilder& b) {
  const std::vector<bool> live = LiveValues(b);
  std::vector<Step> kept;
  for (Step& step : b.steps()) {
    if (live[static_cast<size_t>(OutputOf(step.args))]) kept.push_back(std::move(step));
  }
  b.steps() = std::move(kept);
}

void FuseSteps(GraphBuilder& b) {
  std::vector<Step>& steps = b.steps();
  for (bool fused = true; fused;) {
    fused = false;
    const Usage u = CountUsage(b, LiveValues(b));
    for (size_t s = 0; s < steps.size() && !fused; ++s) {
      Operand* out = FusedOutput(steps[s].args);
      if (out == nullptr) continue;
      const size_t v = static_cast<size_t>(out->value);
      if (u.reads[v] != 1 || u.graph_output[v] || u.first_read[v] < 0) continue;
      const size_t j = static_cast<size_t>(u.first_read[v]);
      if (TryFuseBias(b, u, steps, s, j) || TryFuseActivation(steps, s, j)) {
        steps[s].label += " + " + steps[j].label;
        steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(j));
        fused = true;  // usage changed: recount before the next match
      }
    }
  }
}

}  // namespace hotpath::executor::detail
