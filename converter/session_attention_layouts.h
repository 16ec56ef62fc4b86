// The data movement exporters write around attention, read in place by the session graph's
// ovfix.fused.Attention (exec/cpu/fused_attention.cc) instead of copied by a node of its own:
//   Transpose(X, perm) as Q, K or V                 -> X with q_perm / k_perm / v_perm
//     (BERT's heads, [batch, tokens, heads, depth] permuted [0, 2, 1, 3]; K often [0, 2, 3, 1]);
//   Gather(Transpose(X, perm), i, axis = 0)         -> X with the perm and q/k/v_index = i
//     (a qkv projection split into heads: Reshape, Transpose [2, 0, 3, 1, 4], then q, k, v
//     picked by Gather; Swin's, torch's MultiheadAttention's);
//   Mul(Q, c), c a float scalar constant            -> Q with q_scale = c (Swin scales q);
//   Transpose(Attention(...), perm) read by nothing else -> Attention<output_perm = perm>
//     (the heads merged back: [0, 2, 1, 3] before the Reshape to [batch, tokens, width]).
// Each value taken in must have no other reader (a Transpose that several Gathers read goes
// when its last Gather does); the Attention reads the elements the nodes would have copied,
// and Q's are scaled as the Mul rounds them, so the outputs stay those of the fused node.
// A native pass: the attributes compose what several nodes of any of these forms did, which a
// rule's replacement cannot compute.
#pragma once

#include "absl/status/statusor.h"
#include "rules/pass.h"

namespace ovfix::converter {

inline constexpr char kReadAttentionLayouts[] = "read_attention_layouts";

// Takes the Transposes, Gathers and q scales around each ovfix.fused.Attention of the main
// graph into it; returns how many Attention nodes changed.
absl::StatusOr<int> ReadAttentionLayouts(rules::PassContext& ctx);

}  // namespace ovfix::converter
