// The --pipeline-model-parallel-layout patterns the planner tries for a
// model with MTP layers (search_space.h): the embedding, each MTP layer and
// the loss written as their own entries ('E', 'm', 'L'), the decoder layers
// ('t') spread over the PP x VPP virtual stages, the MTP layers in the last
// (Megatron-Core's validate_layer_layout wants them after every decoder
// layer, in the last virtual stage of a pipeline rank).
#ifndef OOMGUARD_PLANNER_MTP_LAYOUTS_H_
#define OOMGUARD_PLANNER_MTP_LAYOUTS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace oomguard {

// One layout of `layers` decoder layers and `mtp` MTP layers over `pp`
// stages of `vpp` virtual stages each, with the decoder layers of a middle
// virtual stage (what sizes block recompute).
struct MtpLayout {
  std::string pattern;
  int64_t middle_layers = 0;
};

// The layouts of `layers` and `mtp` over pp x vpp = S >= 2 virtual stages,
// distinct, in this order:
//   counted: every virtual stage holds c = (layers + 2 + mtp) / S entries
//     when S divides it: the first "E" and c - 1 decoder layers, the middle
//     c each, the last c - 1 - mtp, the MTP layers and the loss (DeepSeek-V3
//     on PP 8 x VPP 4: "Et|(tt|)*30mL");
//   lighter ends: the middle virtual stages c = ceil(layers / S) decoder
//     layers each, the first the embedding and min(c, rest) of the rest, the
//     last what remains (fewer) with the MTP layers and the loss (DeepSeek-V3
//     on PP 2 x VPP 8: "Etttt|(tttt|)*14tmL", Megatron-Bridge's
//     `Et*4|(t*4|)*14tmL`).
// None where the stages outnumber what they can hold, or a pattern would be
// longer than Megatron-Core's grammar takes here (kMaxLayoutChars).
std::vector<MtpLayout> MtpLayouts(int64_t layers, int64_t mtp, int64_t pp, int64_t vpp);

}  // namespace oomguard

#endif  // OOMGUARD_PLANNER_MTP_LAYOUTS_H_
