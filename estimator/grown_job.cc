// A job grown along one size (see grown_job.h).
#include "estimator/grown_job.h"

#include <limits>

namespace oomguard {
namespace {

// `value` x `factor` into `set`, when the product fits 32 bits.
template <typename Set>
bool Multiply(uint32_t value, uint32_t factor, Set set) {
  const uint64_t product = uint64_t{value} * factor;
  if (value == 0 || product > std::numeric_limits<uint32_t>::max()) return false;
  set(static_cast<uint32_t>(product));
  return true;
}

}  // namespace

const char* GrowthName(Growth growth) {
  switch (growth) {
    case Growth::kMicroBatch:
      return "training.micro_batch_size";
    case Growth::kSequence:
      return "training.seq_length";
    case Growth::kLayers:
      return "model.num_layers";
    case Growth::kHidden:
      return "model.hidden_size";
    case Growth::kExperts:
      return "model.num_experts";
  }
  return "";
}

std::optional<v1::JobSpec> GrownJob(const v1::JobSpec& job, Growth growth, uint32_t factor) {
  if (factor < 2) return std::nullopt;
  v1::JobSpec grown = job;
  v1::TrainingSpec& t = *grown.mutable_training();
  v1::ModelSpec& m = *grown.mutable_model();
  bool ok = false;
  switch (growth) {
    case Growth::kMicroBatch:
      ok = Multiply(t.micro_batch_size(), factor, [&](uint32_t v) { t.set_micro_batch_size(v); });
      if (ok && t.has_global_batch_size()) {
        ok = Multiply(t.global_batch_size(), factor,
                      [&](uint32_t v) { t.set_global_batch_size(v); });
      }
      break;
    case Growth::kSequence:
      ok = Multiply(t.seq_length(), factor, [&](uint32_t v) { t.set_seq_length(v); });
      if (ok && m.has_max_position_embeddings()) {
        ok = Multiply(m.max_position_embeddings(), factor,
                      [&](uint32_t v) { m.set_max_position_embeddings(v); });
      }
      break;
    case Growth::kLayers:
      // More of the same layers: a model whose MoE layers follow a pattern
      // grows by whole periods of it, or its last layers would change kind.
      if (m.moe_layer_pattern_size() > 0) return std::nullopt;
      if (m.moe_layer_freq() > 1 && m.num_layers() % m.moe_layer_freq() != 0) return std::nullopt;
      ok = Multiply(m.num_layers(), factor, [&](uint32_t v) { m.set_num_layers(v); });
      break;
    case Growth::kHidden:
      ok = Multiply(m.hidden_size(), factor, [&](uint32_t v) { m.set_hidden_size(v); });
      break;
    case Growth::kExperts:
      ok = Multiply(m.num_experts(), factor, [&](uint32_t v) { m.set_num_experts(v); });
      break;
  }
  if (!ok) return std::nullopt;
  return grown;
}

}  // namespace oomguard
