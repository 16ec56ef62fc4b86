// Small models whose values overflow fp16, shared by the fp16-safe rewrite tests, the
// shifted-softmax test and the command line's --precision fp16-all test.
#pragma once

namespace ovfix::testing {

// A softmax written out by hand over rows of 8 (channels), as exporters of attention and
// segmentation heads leave it: Exp of scaled logits over ReduceSum. Logits beyond ~11
// overflow fp16 in the Exp.
inline constexpr char kHandWrittenSoftmax[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float[1, 8, 4, 4] x) => (float[1, 8, 4, 4] y) {
      scale = Constant <value = float {0.05}> ()
      logits = Mul(x, scale)
      axes = Constant <value = int64[1] {1}> ()
      e = Exp(logits)
      s = ReduceSum <keepdims = 1> (e, axes)
      y = Div(e, s)
    })";

// A float16 model with an fp32 island (Casts around it) whose middle value, x * 1000, is
// beyond fp16 for |x| > 65.5: right where the island is honoured, inf where every float is
// rounded to fp16.
inline constexpr char kFloat16ModelWithIsland[] = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    m (float16[4] x) => (float16[4] y) {
      xf = Cast <to = 1> (x)
      big = Constant <value = float {1000}> ()
      up = Mul(xf, big)
      down = Div(up, big)
      y = Cast <to = 10> (down)
    })";

}  // namespace ovfix::testing
