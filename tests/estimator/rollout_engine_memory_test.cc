// The rollout engine's memory per GPU (estimator/rollout_engine_memory.h)
// against values derived here by hand: a small dense model (h 1024, 16
// heads, 4 KV heads of 64, SwiGLU FFN 4096, 4 layers, vocabulary 32001,
// RMSNorm, untied) and Qwen3-30B-A3B (the preset) under vLLM at 0.5 x 80 GiB,
// SGLang with others resident, Megatron sharing the trainer's weights; each
// sleep level; FP8 weights; DeepSeek-V3's latent KV cache; each failure and
// each refused value.
//
// Notation: 2 bytes per bf16 element; GiB = 2^30. Forward workspace at T
// tokens = T x h x 2 x 3 (residual, hidden, normed) + max(attention: T x 2 x
// (2 x heads/TP + 2 x KV heads per rank) x head dim, MLP: T x 2 x 3 x FFN/TP;
// MoE: T x top-k x 2 x (3 x expert FFN / ETP + h) + T x experts x 4).
#include "estimator/rollout_engine_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "jobspec/presets.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t k80GiB = 80 * kGiB;
// The TP > 1 runtime: 1666 MiB (NeMo-RL #223).
constexpr uint64_t kRuntime = uint64_t{1666} << 20;

// The small dense model on 8 GPUs at trainer TP 2, engine TP 2, 0.5 of the
// GPU, eager, max_num_seqs 256, max_num_batched_tokens 8192, prompt 1024 +
// response 16384.
v1::RlJobSpec DenseJob(v1::RolloutEngine engine = v1::ROLLOUT_ENGINE_VLLM) {
  v1::RlJobSpec job;
  v1::ModelSpec* m = job.mutable_actor()->mutable_model();
  m->set_num_layers(4);
  m->set_hidden_size(1024);
  m->set_ffn_hidden_size(4096);
  m->set_num_attention_heads(16);
  m->set_num_query_groups(4);
  m->set_kv_channels(64);
  m->set_vocab_size(32001);
  m->set_activation(v1::ACTIVATION_SWIGLU);
  m->set_normalization(v1::NORMALIZATION_RMS_NORM);
  m->set_position_embedding(v1::POSITION_EMBEDDING_ROPE);
  m->set_add_bias_linear(false);
  m->set_untie_embeddings_and_output_weights(true);
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(8);
  job.mutable_actor()->mutable_parallelism()->set_tensor_model_parallel_size(2);
  job.mutable_actor()->mutable_training()->set_micro_batch_size(1);
  job.mutable_actor()->mutable_training()->set_seq_length(4096);
  v1::RolloutEngineSpec* r = job.mutable_rollout();
  r->set_engine(engine);
  if (engine != v1::ROLLOUT_ENGINE_MEGATRON) r->set_tensor_parallel(2);
  r->set_memory_fraction(0.5);
  r->set_cuda_graphs(false);
  r->set_max_num_seqs(256);
  r->set_max_num_batched_tokens(8192);
  job.set_max_prompt_length(1024);
  job.set_max_response_length(16384);
  job.set_colocated(true);
  return job;
}

// Per GPU at TP 2: a layer holds QKV 1024 x (16 + 2 x 4) x 64 / 2 = 786432,
// the output projection 1024 x 1024 / 2 = 524288, fc1 1024 x 2 x 4096 / 2 =
// 4194304, fc2 4096 x 1024 / 2 = 2097152 and two norms of 1024: 7604224; four
// layers 30416896. The vocabulary padded to 64: 32064, 16032 rows a GPU:
// embedding and output layer 16032 x 1024 = 16416768 each; final norm 1024.
constexpr uint64_t kDenseLinears = 4 * (786432 + 524288 + 4194304 + 2097152);
constexpr uint64_t kDenseNorms = 4 * 2048 + 1024;
constexpr uint64_t kDenseVocab = 2 * 16032 * 1024;
constexpr uint64_t kDenseWeights = 2 * (kDenseLinears + kDenseNorms + kDenseVocab);
// 2 x 4 layers x 2 KV heads per rank x 64 x 2 B.
constexpr uint64_t kDenseKvPerToken = 2 * 4 * 2 * 64 * 2;
// Forward at 8192 tokens: 8192 x 1024 x 6 = 50331648 + max(attention 8192 x
// 2 x (16 + 4) x 64 = 20971520, MLP 8192 x 2 x 3 x 2048 = 100663296); the
// sampler's 256 x 32001 x 14 = 114691584 is less.
constexpr uint64_t kDenseActivation = 50331648 + 100663296;

TEST(RolloutEngineMemory, VllmDenseHalfOf80GiB) {
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(DenseJob(), k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->weight_bytes, kDenseWeights);
  EXPECT_EQ(m->kv_bytes_per_token, kDenseKvPerToken);
  EXPECT_EQ(m->activation_bytes, kDenseActivation);
  EXPECT_EQ(m->activation_sd_bytes, kDenseActivation / 2);
  EXPECT_EQ(m->cuda_graph_bytes, 0u);
  EXPECT_EQ(m->runtime_bytes, kRuntime);
  // KV = 0.5 x 80 GiB - weights - activation, in blocks of 16 tokens.
  const uint64_t available = 40 * kGiB - kDenseWeights - kDenseActivation;
  const uint64_t tokens = available / kDenseKvPerToken / 16 * 16;
  EXPECT_EQ(m->kv_tokens, tokens);
  EXPECT_EQ(m->kv_pool_bytes, tokens * kDenseKvPerToken);
  EXPECT_EQ(m->GenerateBytes(),
            kDenseWeights + tokens * kDenseKvPerToken + kDenseActivation + kRuntime);
  EXPECT_TRUE(m->failure.empty()) << m->failure;
  // Newest vLLM sleeps at level 2: graphs (none) and runtime stay.
  EXPECT_EQ(m->sleep, v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_EQ(m->asleep_bytes, kRuntime);
  EXPECT_EQ(m->host_bytes, 0u);
  EXPECT_THAT(m->kv_basis, HasSubstr("determine_available_memory"));
}

// Graphs at max_num_seqs 256: the largest captured size min(2 x 256, 512,
// 8192) = 512; the pool twice one layer's forward there: 2 x (512 x 1024 x 6
// = 3145728 + MLP 512 x 2 x 6144 = 6291456).
constexpr uint64_t kDenseGraphs = 2 * (3145728 + 6291456);

TEST(RolloutEngineMemory, VllmGraphsInsideTheBudgetFrom021) {
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_cuda_graphs(true);
  absl::StatusOr<EngineMemory> newest = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->cuda_graph_bytes, kDenseGraphs);
  EXPECT_EQ(newest->kv_tokens, (40 * kGiB - kDenseWeights - kDenseActivation - kDenseGraphs) /
                                   kDenseKvPerToken / 16 * 16);
  // Inside the budget the activation and graphs only move the pool: the
  // total spreads by the runtime's (4952 / 2 MiB) alone.
  EXPECT_EQ(newest->generate_sd_bytes, uint64_t{2476} << 20);
  // Before 0.21 the graphs come on top of the budget.
  job.mutable_rollout()->set_version("0.20.2");
  absl::StatusOr<EngineMemory> old = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->kv_tokens,
            (40 * kGiB - kDenseWeights - kDenseActivation) / kDenseKvPerToken / 16 * 16);
  // Asleep (level 2): graphs and runtime.
  EXPECT_EQ(old->asleep_bytes, kDenseGraphs + kRuntime);
  // The graphs outside the budget spread the total by half their bytes.
  const double graph_sd = kDenseGraphs / 2, runtime_sd = 2476.0 * (1 << 20);
  EXPECT_EQ(old->generate_sd_bytes,
            static_cast<uint64_t>(std::llround(std::hypot(graph_sd, runtime_sd))));
  EXPECT_EQ(old->asleep_sd_bytes, old->generate_sd_bytes);
}

TEST(RolloutEngineMemory, SleepLevels) {
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_cuda_graphs(true);
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_NONE);
  absl::StatusOr<EngineMemory> none = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->asleep_bytes, none->weight_bytes + none->kv_pool_bytes + kDenseGraphs + kRuntime);
  EXPECT_EQ(none->host_bytes, 0u);

  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_LEVEL_1);
  absl::StatusOr<EngineMemory> one = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->asleep_bytes, kDenseGraphs + kRuntime);
  EXPECT_EQ(one->host_bytes, kDenseWeights);

  // Unspecified before vLLM 0.8.5: level 1.
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_UNSPECIFIED);
  job.mutable_rollout()->set_version("0.8.4");
  absl::StatusOr<EngineMemory> old = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->sleep, v1::ROLLOUT_SLEEP_LEVEL_1);
  EXPECT_EQ(old->host_bytes, kDenseWeights);
  job.mutable_rollout()->set_version("0.8.5");
  absl::StatusOr<EngineMemory> newer = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(newer.ok()) << newer.status();
  EXPECT_EQ(newer->sleep, v1::ROLLOUT_SLEEP_LEVEL_2);
}

// Engine PP 3 over 4 layers: vLLM's get_pp_indices gives [1, 2, 1] (the
// remainder on the stage before the last). Stage 0 holds a layer and the
// embedding, stage 1 two layers (7604224 elements each at TP 2), stage 2 a
// layer, the final norm and the output layer. The KV pool holds the same
// tokens on every stage, the fewest any stage fits: stage 1's, whose two
// layers take 2 x 2 x 2 KV heads x 64 x 2 B = 1024 B a token (the others
// 512). It is the busiest GPU: its pool is twice the others', whose weights
// are only 18 MB more.
TEST(RolloutEngineMemory, VllmPipelineStagesShareOneTokenCount) {
  v1::RlJobSpec job = DenseJob();
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(12);
  job.mutable_rollout()->set_pipeline_parallel(3);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  const uint64_t layer = 786432 + 524288 + 4194304 + 2097152 + 2048;
  EXPECT_EQ(m->weight_bytes, 2 * 2 * layer);
  EXPECT_EQ(m->kv_bytes_per_token, 2u * 2 * 2 * 64 * 2);
  const uint64_t tokens = (40 * kGiB - 2 * 2 * layer - kDenseActivation) / 1024 / 16 * 16;
  EXPECT_EQ(m->kv_tokens, tokens);
  EXPECT_EQ(m->kv_pool_bytes, tokens * 1024);
  EXPECT_THAT(m->weight_basis, HasSubstr("on engine pipeline stage 1 of 3"));
  // PP 3 x TP 2 does not divide 8 GPUs.
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(8);
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().message(),
            "rollout.tensor_parallel: TP 2 x PP 3 does not divide the 8 GPUs");
}

// FP8 weights: the linears at 1 byte, the embedding, output layer and norms
// at 2.
TEST(RolloutEngineMemory, Fp8Weights) {
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_weight_dtype(v1::DTYPE_FP8);
  job.mutable_rollout()->set_kv_cache_dtype(v1::DTYPE_FP8);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->weight_bytes, kDenseLinears + 2 * (kDenseNorms + kDenseVocab));
  EXPECT_EQ(m->kv_bytes_per_token, kDenseKvPerToken / 2);
}

// TP 8 over 4 KV heads: vLLM replicates them, one per rank. Per GPU a layer
// holds QKV 1024 x (16 + 2 x 8) x 64 / 8 = 262144, projection 131072, fc1
// 1048576, fc2 524288, norms 2048; vocabulary 32064 / 8 = 4008 rows.
TEST(RolloutEngineMemory, KvHeadsReplicatedPastTheirCount) {
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_tensor_parallel(8);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->weight_bytes,
            2 * (4 * (262144 + 131072 + 1048576 + 524288 + 2048) + 2 * 4008 * 1024 + 1024));
  EXPECT_EQ(m->kv_bytes_per_token, 2u * 4 * 1 * 64 * 2);
}

// SGLang: weights + KV = 0.5 x (80 GiB - 20 GiB others - its runtime).
TEST(RolloutEngineMemory, SglangWithOthersResident) {
  absl::StatusOr<EngineMemory> m =
      EstimateEngineMemory(DenseJob(v1::ROLLOUT_ENGINE_SGLANG), k80GiB, 20 * kGiB);
  ASSERT_TRUE(m.ok()) << m.status();
  const uint64_t free = 60 * kGiB - kRuntime;
  const uint64_t tokens = (free / 2 - kDenseWeights) / kDenseKvPerToken;
  EXPECT_EQ(m->kv_tokens, tokens);
  EXPECT_EQ(m->kv_pool_bytes, tokens * kDenseKvPerToken);
  EXPECT_EQ(m->sleep, v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_TRUE(m->failure.empty()) << m->failure;
  // More held by others: a smaller pool.
  absl::StatusOr<EngineMemory> crowded =
      EstimateEngineMemory(DenseJob(v1::ROLLOUT_ENGINE_SGLANG), k80GiB, 40 * kGiB);
  ASSERT_TRUE(crowded.ok());
  EXPECT_EQ(crowded->kv_tokens, (20 * kGiB - kRuntime / 2 - kDenseWeights) / kDenseKvPerToken);
}

// slime runs SGLang in processes of their own: a CUDA context more (774
// MiB), allocated before SGLang measures the free memory.
TEST(RolloutEngineMemory, EngineInItsOwnProcessAddsACudaContext) {
  v1::RlJobSpec job = DenseJob(v1::ROLLOUT_ENGINE_SGLANG);
  job.set_framework(v1::RL_FRAMEWORK_SLIME);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 20 * kGiB);
  ASSERT_TRUE(m.ok()) << m.status();
  const uint64_t context = uint64_t{774} << 20;
  EXPECT_EQ(m->runtime_bytes, kRuntime + context);
  EXPECT_EQ(m->kv_tokens,
            ((60 * kGiB - kRuntime - context) / 2 - kDenseWeights) / kDenseKvPerToken);
  EXPECT_EQ(m->asleep_bytes, kRuntime + context);
  // veRL's engine shares the trainer's process.
  job.set_framework(v1::RL_FRAMEWORK_VERL);
  absl::StatusOr<EngineMemory> verl = EstimateEngineMemory(job, k80GiB, 20 * kGiB);
  ASSERT_TRUE(verl.ok());
  EXPECT_EQ(verl->runtime_bytes, kRuntime);
}

TEST(RolloutEngineMemory, SglangFailsWithoutRoomForItsPool) {
  absl::StatusOr<EngineMemory> m =
      EstimateEngineMemory(DenseJob(v1::ROLLOUT_ENGINE_SGLANG), k80GiB, 79 * kGiB);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_tokens, 0u);
  EXPECT_EQ(m->kv_pool_bytes, 0u);
  EXPECT_EQ(m->failure,
            "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
            "mem_fraction_static=0.5");
}

// Megatron at the trainer's layout: the trainer's weights, a 40 GiB KV
// buffer kept while training (persist), graphs deleted on suspend.
TEST(RolloutEngineMemory, MegatronSharesTheTrainersWeights) {
  v1::RlJobSpec job = DenseJob(v1::ROLLOUT_ENGINE_MEGATRON);
  job.mutable_rollout()->set_cuda_graphs(true);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->shares_trainer_weights);
  EXPECT_EQ(m->weight_bytes, 0u);
  EXPECT_EQ(m->runtime_bytes, 0u);
  EXPECT_EQ(m->kv_pool_bytes, 40 * kGiB);
  EXPECT_EQ(m->kv_tokens, 40 * kGiB / kDenseKvPerToken);
  EXPECT_EQ(m->sleep, v1::ROLLOUT_SLEEP_NONE);
  EXPECT_EQ(m->asleep_bytes, 40 * kGiB);
  // --rl-persist-cuda-graphs keeps them.
  job.mutable_rollout()->set_persist_cuda_graphs(true);
  job.mutable_rollout()->set_kv_buffer_bytes(8 * kGiB);
  absl::StatusOr<EngineMemory> kept = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->asleep_bytes, 8 * kGiB + kept->cuda_graph_bytes);
  EXPECT_GT(kept->cuda_graph_bytes, 0u);
  // A separate inference model at TP 4 (the trainer's is 2): its own weights.
  job.mutable_rollout()->set_tensor_parallel(4);
  absl::StatusOr<EngineMemory> own = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE(own->shares_trainer_weights);
  // At TP 4 a layer holds 786432 x 2 / 4 = 393216 + 262144 + 2097152 +
  // 1048576 + 2048 norms = 3803136; Megatron pads the vocabulary to 128 x 4:
  // 32256, 8064 rows a GPU.
  EXPECT_EQ(own->weight_bytes, 2 * (4 * 3803136 + 2 * 8064 * 1024 + 1024));
  EXPECT_EQ(own->runtime_bytes, kRuntime);
  // Offload mode: the 8 GiB buffer to the host; the inference model's
  // weights, its graphs and runtime stay.
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_LEVEL_1);
  absl::StatusOr<EngineMemory> offload = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(offload.ok()) << offload.status();
  EXPECT_EQ(offload->host_bytes, 8 * kGiB);
  EXPECT_EQ(offload->asleep_bytes,
            offload->weight_bytes + offload->cuda_graph_bytes + offload->runtime_bytes);
}

TEST(RolloutEngineMemory, VllmRefusesToStartWhenOthersHoldTooMuch) {
  // Free = 80 - 45 GiB - 1666 MiB = 33.37 GiB < 40 GiB requested.
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(DenseJob(), k80GiB, 45 * kGiB);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->failure,
            "Free memory on device (33.37/80.00 GiB) on startup is less than desired GPU memory "
            "utilization (0.5, 40.00 GiB). Decrease GPU memory utilization or reduce GPU memory "
            "used by other processes.");
}

TEST(RolloutEngineMemory, VllmFailsWithoutRoomForTheCache) {
  // 0.003 x 80 GiB = 257698037 B < weights + activation = 277497856 B.
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_memory_fraction(0.003);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_pool_bytes, 0u);
  EXPECT_THAT(m->failure, HasSubstr("No available memory for the cache blocks."));
}

TEST(RolloutEngineMemory, VllmFailsBelowOneMaxModelLenSequence) {
  // 0.0035 x 80 GiB = 300647710 B; less 277497856 B: 23149854 B = 11303
  // tokens of 2048 B, 11296 in blocks of 16 < 17408 = 1024 + 16384.
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_memory_fraction(0.0035);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_tokens, 11296u);
  EXPECT_EQ(m->failure,
            "To serve at least one request with the model's max seq len (17408), (0.03 GiB KV "
            "cache is needed, which is larger than the available KV cache memory (0.02 GiB). "
            "Based on the available memory, the estimated maximum model length is 11296. Try "
            "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
            "the engine.");
}

// Qwen3-30B-A3B (48 layers, h 2048, 32 heads, 4 KV heads of 128, 128
// experts of 768, top-8, qk-norm, vocabulary 151936 untied) at vLLM TP 2,
// experts split by TP. Per GPU a layer holds QKV 2048 x 5120 / 2 =
// 5242880, projection 4096 x 2048 / 2 = 4194304, q/k norms 2 x 128, two
// norms of 2048, the router 128 x 2048 = 262144 and the experts 128 x 3 x
// 2048 x 768 / 2 = 301989888: 311693568; the vocabulary (a multiple of 64)
// 75968 rows: 2 x 155582464; final norm 2048.
TEST(RolloutEngineMemory, Qwen3MoeUnderVllm) {
  v1::RlJobSpec job = DenseJob();
  absl::StatusOr<v1::ModelSpec> model = FindPreset("qwen3-30b-a3b");
  ASSERT_TRUE(model.ok()) << model.status();
  *job.mutable_actor()->mutable_model() = *model;
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(32);
  job.mutable_actor()->mutable_parallelism()->set_expert_model_parallel_size(8);
  job.mutable_actor()->mutable_parallelism()->set_sequence_parallel(true);
  job.mutable_rollout()->set_cuda_graphs(true);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  const uint64_t layer = 5242880 + 4194304 + 256 + 4096 + 262144 + 301989888;
  const uint64_t weights = 2 * (48 * layer + 2 * 155582464 + 2048);
  EXPECT_EQ(m->weight_bytes, weights);
  // 2 x 48 x 2 KV heads x 128 x 2 B.
  EXPECT_EQ(m->kv_bytes_per_token, 49152u);
  // Forward at 8192: 8192 x 2048 x 6 = 100663296 + MoE 8192 x 8 x 2 x (1152
  // + 2048) + 8192 x 128 x 4 = 423624704 (attention 75497472 is less); the
  // sampler's 256 x 151936 x 14 = 544538624 is more.
  EXPECT_EQ(m->activation_bytes, 544538624u);
  // Graphs at 512: twice 512 x 2048 x 6 + 512 x 8 x 2 x 3200 + 512 x 128 x 4
  // = 32768000.
  EXPECT_EQ(m->cuda_graph_bytes, 2u * 32768000u);
  const uint64_t available = 40 * kGiB - weights - 544538624 - 2 * 32768000;
  EXPECT_EQ(m->kv_tokens, available / 49152 / 16 * 16);
  EXPECT_TRUE(m->failure.empty()) << m->failure;

  // EP 2 (enable_expert_parallel): 64 whole experts a GPU, the same bytes;
  // vLLM 0.10 with EP > 1 sleeps at level 1: the weights go to the host.
  job.mutable_rollout()->set_expert_parallel(2);
  job.mutable_rollout()->set_version("0.10.2");
  absl::StatusOr<EngineMemory> ep = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->weight_bytes, weights);
  EXPECT_EQ(ep->sleep, v1::ROLLOUT_SLEEP_LEVEL_1);
  EXPECT_EQ(ep->host_bytes, weights);
  job.mutable_rollout()->set_version("0.11.0");
  absl::StatusOr<EngineMemory> ep11 = EstimateEngineMemory(job, k80GiB, 0);
  ASSERT_TRUE(ep11.ok());
  EXPECT_EQ(ep11->sleep, v1::ROLLOUT_SLEEP_LEVEL_2);
}

// DeepSeek-V3's latent cache: (kv_lora_rank 512 + RoPE key 64) x 61 layers x
// 2 B per token, whole on every rank whatever the TP.
TEST(RolloutEngineMemory, LatentAttentionCacheIsNotSplitByTp) {
  v1::RlJobSpec job = DenseJob();
  absl::StatusOr<v1::ModelSpec> model = FindPreset("deepseek-v3");
  ASSERT_TRUE(model.ok()) << model.status();
  *job.mutable_actor()->mutable_model() = *model;
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(64);
  job.mutable_actor()->mutable_parallelism()->set_tensor_model_parallel_size(8);
  job.mutable_actor()->mutable_parallelism()->set_expert_model_parallel_size(8);
  job.mutable_actor()->mutable_parallelism()->set_expert_tensor_parallel_size(1);
  job.mutable_actor()->mutable_parallelism()->set_sequence_parallel(true);
  job.mutable_rollout()->set_tensor_parallel(8);
  job.mutable_rollout()->set_expert_parallel(8);
  job.mutable_rollout()->set_weight_dtype(v1::DTYPE_FP8);
  job.mutable_rollout()->set_memory_fraction(0.9);
  absl::StatusOr<EngineMemory> m = EstimateEngineMemory(job, 141 * kGiB, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_bytes_per_token, (512u + 64u) * 61 * 2);
  EXPECT_EQ(m->kv_pool_bytes, m->kv_tokens * m->kv_bytes_per_token);
  // 671B less the MTP layer's, FP8, over 8 GPUs: about 80 GiB each.
  EXPECT_GT(m->weight_bytes, 75 * kGiB);
  EXPECT_LT(m->weight_bytes, 90 * kGiB);
  // Against Megatron's own inference model at the same layout (its expert
  // TP the trainer's, 1), vLLM adds the
  // absorbed 16-bit kv_b_proj copies, 61 x 512 x 128 heads / 8 x (128 + 128)
  // x 2 B = 255852544, and pads the vocabulary 129280 to 64 (itself) where
  // Megatron pads it to 128 x 8 (130048): 768 / 8 rows x 7168 x 2 tensors x
  // 2 B = 2752512 fewer.
  job.mutable_rollout()->set_engine(v1::ROLLOUT_ENGINE_MEGATRON);
  absl::StatusOr<EngineMemory> megatron = EstimateEngineMemory(job, 141 * kGiB, 0);
  ASSERT_TRUE(megatron.ok()) << megatron.status();
  EXPECT_FALSE(megatron->shares_trainer_weights);
  EXPECT_EQ(m->weight_bytes - megatron->weight_bytes, 255852544u - 2752512u);
}

TEST(RolloutEngineMemory, RefusesValuesNamingTheField) {
  v1::RlJobSpec job = DenseJob();
  job.mutable_rollout()->set_memory_fraction(1.5);
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().message(),
            "rollout.memory_fraction: expected a number in (0, 1], got 1.5");
  job = DenseJob();
  job.mutable_rollout()->set_tensor_parallel(3);
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().message(),
            "rollout.tensor_parallel: 3 does not divide the 16 attention heads");
  job = DenseJob();
  job.mutable_rollout()->set_version("0.x");
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().message(),
            "rollout.version: expected MAJOR.MINOR[.PATCH], got \"0.x\"");
  job = DenseJob();
  job.mutable_rollout()->set_weight_dtype(v1::DTYPE_FP32);
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().message(),
            "rollout.weight_dtype: expected DTYPE_BF16, DTYPE_FP16 or DTYPE_FP8, got DTYPE_FP32");
  job = DenseJob();
  job.set_max_response_length(0);
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  job = DenseJob();
  job.mutable_rollout()->set_engine(v1::ROLLOUT_ENGINE_UNSPECIFIED);
  EXPECT_THAT(EstimateEngineMemory(job, k80GiB, 0).status().message(), HasSubstr("rollout.engine"));
  job = DenseJob();
  absl::StatusOr<v1::ModelSpec> model = FindPreset("qwen3-30b-a3b");
  ASSERT_TRUE(model.ok());
  *job.mutable_actor()->mutable_model() = *model;
  job.mutable_actor()->mutable_parallelism()->set_num_gpus(32);
  job.mutable_actor()->mutable_parallelism()->set_sequence_parallel(true);
  job.mutable_rollout()->set_expert_parallel(3);
  EXPECT_EQ(EstimateEngineMemory(job, k80GiB, 0).status().message(),
            "rollout.expert_parallel: 3 does not divide the 128 experts");
  job = DenseJob();
  job.mutable_actor()->mutable_model()->set_num_layers(0);
  EXPECT_THAT(EstimateEngineMemory(job, k80GiB, 0).status().message(), HasSubstr("actor."));
}

}  // namespace
}  // namespace oomguard
