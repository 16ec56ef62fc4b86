#include "ir/op_groups.h"

#include <algorithm>

namespace ovfix {
namespace {

std::vector<OpGroupMember> Join(std::initializer_list<const std::vector<OpGroupMember>*> parts,
                                std::initializer_list<OpGroupMember> more = {}) {
  std::vector<OpGroupMember> out;
  for (const auto* part : parts) out.insert(out.end(), part->begin(), part->end());
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

std::vector<OpGroup> MakeGroups() {
  // Versions: the first version with the meaning the group stands for. Binary ops broadcast
  // numpy-style from 7 (Max/Min/Sum/Mean from 8, when they started to broadcast at all);
  // unary ops from 6, when the legacy `consumed_inputs` attribute went.
  const std::vector<OpGroupMember> arithmetic = {
      {"Add", 7}, {"Sub", 7}, {"Mul", 7}, {"Div", 7}, {"Pow", 7}, {"Mod", 10}, {"BitShift", 11}};
  const std::vector<OpGroupMember> comparison = {
      {"Equal", 7}, {"Less", 7}, {"LessOrEqual", 12}, {"Greater", 7}, {"GreaterOrEqual", 12}};
  const std::vector<OpGroupMember> logical = {{"And", 7}, {"Or", 7}, {"Xor", 7}};
  const std::vector<OpGroupMember> variadic = {{"Max", 8}, {"Min", 8}, {"Sum", 8}, {"Mean", 8}};
  const std::vector<OpGroupMember> commutative = {{"Add"},  {"Mul"},   {"Max"}, {"Min"}, {"Sum"},
                                                  {"Mean"}, {"Equal"}, {"And"}, {"Or"},  {"Xor"}};
  const std::vector<OpGroupMember> unary_math = {
      {"Abs", 6},        {"Neg", 6},   {"Exp", 6},  {"Log", 6},   {"Sqrt", 6},
      {"Reciprocal", 6}, {"Floor", 6}, {"Ceil", 6}, {"Erf", 9},   {"Sin", 7},
      {"Cos", 7},        {"Tan", 7},   {"Sign", 9}, {"Round", 11}};
  const std::vector<OpGroupMember> activation = {
      {"Relu", 6},       {"LeakyRelu", 6}, {"Sigmoid", 6}, {"Tanh", 6},     {"HardSigmoid", 6},
      {"HardSwish", 14}, {"Elu", 6},       {"Selu", 6},    {"Softplus", 1}, {"Softsign", 1},
      {"Clip", 6},       {"Mish", 18},     {"Gelu", 20},   {"Swish", 24}};
  const std::vector<OpGroupMember> reduction = {
      {"ReduceSum"}, {"ReduceMean"}, {"ReduceMax"},    {"ReduceMin"},       {"ReduceProd"},
      {"ReduceL1"},  {"ReduceL2"},   {"ReduceLogSum"}, {"ReduceLogSumExp"}, {"ReduceSumSquare"}};
  return {
      {"arithmetic", "binary arithmetic with numpy broadcasting", arithmetic},
      {"comparison", "comparisons with numpy broadcasting (bool output)", comparison},
      {"logical", "logical and/or/xor of bools with numpy broadcasting", logical},
      {"variadic", "element-wise ops of any number of inputs, broadcast together", variadic},
      {"broadcasting",
       "every element-wise op whose inputs broadcast: arithmetic, comparison, logical, variadic, "
       "PRelu (its slope), Where and the bitwise ops",
       Join({&arithmetic, &comparison, &logical, &variadic}, {{"PRelu", 7},
                                                              {"Where", 9},
                                                              {"BitwiseAnd", 18},
                                                              {"BitwiseOr", 18},
                                                              {"BitwiseXor", 18}})},
      {"commutative", "ops whose inputs may be read in any order", commutative},
      {"unary_math", "element-wise math of one input", unary_math},
      {"activation", "element-wise activations of one input (attributes or bounds aside)",
       activation},
      {"reduction", "reductions over axes (ReduceSum, ReduceMean, ...)", reduction},
  };
}

}  // namespace

const std::vector<OpGroup>& AllOpGroups() {
  static const std::vector<OpGroup>* groups = new std::vector<OpGroup>(MakeGroups());
  return *groups;
}

const OpGroup* FindOpGroup(std::string_view name) {
  for (const OpGroup& g : AllOpGroups()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

const OpGroupMember* FindOpGroupMember(std::string_view group, std::string_view op_type) {
  const OpGroup* g = FindOpGroup(group);
  if (g == nullptr) return nullptr;
  auto it = std::find_if(g->members.begin(), g->members.end(),
                         [&](const OpGroupMember& m) { return m.op_type == op_type; });
  return it == g->members.end() ? nullptr : &*it;
}

bool InOpGroup(std::string_view group, std::string_view domain, std::string_view op_type) {
  return (domain.empty() || domain == "ai.onnx") && FindOpGroupMember(group, op_type) != nullptr;
}

}  // namespace ovfix
