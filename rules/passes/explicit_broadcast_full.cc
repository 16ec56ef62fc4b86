#include "rules/passes/explicit_broadcast_full.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/graph_walk.h"
#include "ir/op_groups.h"

namespace ovfix::rules {

Tensor BroadcastTensor(const Tensor& t, const std::vector<int64_t>& dims) {
  Tensor out(t.type(), dims);
  const size_t size = ElementSize(t.type());
  const size_t rank = dims.size();
  const size_t offset = rank - t.rank();
  // Strides of `t` in elements, 0 along broadcast dims.
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = t.rank(); i-- > 0;) {
    strides[offset + i] = t.dim(i) == 1 ? 0 : stride;
    stride *= t.dim(i);
  }
  std::vector<int64_t> index(rank, 0);
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  const int64_t n = out.numel();
  int64_t from = 0;
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(dst + k * size, src + from * size, size);
    for (size_t d = rank; d-- > 0;) {  // odometer step
      ++index[d];
      from += strides[d];
      if (index[d] < dims[d]) break;
      from -= strides[d] * index[d];
      index[d] = 0;
    }
  }
  return out;
}

namespace {

// Expands the inputs of `g`'s element-wise nodes to their output's shape.
int ExpandGraph(PassContext& ctx, Graph& g, const std::string& pass) {
  int rewritten = 0;
  for (Node* n : g.NodeList()) {
    if (!InOpGroup("broadcasting", n->domain(), n->op_type()) || n->output(0) == nullptr) {
      continue;
    }
    std::optional<std::vector<int64_t>> out = n->output(0)->static_shape();
    if (!out) {
      ctx.log(absl::StrCat(pass, ": ", n->Describe(), " skipped: output shape not static"));
      continue;
    }
    std::vector<size_t> differing;
    bool known = true;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const Value* in = n->input(i);
      if (in == nullptr) continue;
      std::optional<std::vector<int64_t>> s = in->static_shape();
      if (!s || s->size() > out->size()) {
        known = false;
        break;
      }
      if (*s != *out) differing.push_back(i);
    }
    if (!known || differing.empty()) continue;
    ctx.rewriter.Begin(pass, {n});
    const Tensor target =
        Tensor::FromVector<int64_t>(DataType::kInt64, {static_cast<int64_t>(out->size())}, *out);
    Value* shape = nullptr;
    for (size_t i : differing) {
      Value* in = n->input(i);
      const bool constant = in->is_initializer() && !in->is_graph_input() &&
                            in->tensor().type() != DataType::kString &&
                            Tensor::NumElements(*out) <= ctx.options.fold_size_limit;
      if (constant) {
        Value* c = ctx.rewriter.CreateInitializer(g, in->name() + "_expanded",
                                                  BroadcastTensor(in->tensor(), *out));
        ctx.rewriter.SetInput(n, i, c);
        continue;
      }
      if (shape == nullptr) {
        shape =
            ctx.rewriter.CreateInitializer(g, absl::StrCat(n->output(0)->name(), "_shape"), target);
      }
      Node* expand = ctx.rewriter.CreateNode(g, "Expand", {in, shape}, {in->name() + "_expanded"},
                                             n, in->name() + "/expand");
      ctx.rewriter.SetInput(n, i, expand->output(0));
    }
    if (FinishRewrite(ctx)) ++rewritten;
  }
  return rewritten;
}

}  // namespace

absl::StatusOr<int> ExpandBroadcastsFull(PassContext& ctx) {
  // Runs only when the option asks for it: the pass manager decides (converter/pass_manager.cc).
  int rewritten = 0;
  VisitGraphs(ctx.model.graph(),
              [&](Graph& g) { rewritten += ExpandGraph(ctx, g, kExplicitBroadcastFull); });
  return rewritten;
}

}  // namespace ovfix::rules
