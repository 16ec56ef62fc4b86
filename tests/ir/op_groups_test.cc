// The op groups: their members and versions are onnx's, and the unions hold what they say.
#include "ir/op_groups.h"

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "ir/op_schemas.h"

namespace ovfix {
namespace {

// Every member's first version is a version ONNX defines for the op (at it, the op's schema
// starts; onnx 1.12's schemas and ovfix's for opsets 18-26), so a group never names an op or a
// version that does not exist.
TEST(OpGroups, MembersAreOnnxOpsAtRealVersions) {
  for (const OpGroup& group : AllOpGroups()) {
    for (const OpGroupMember& m : group.members) {
      const auto* schema = FindSchema(m.op_type, m.since_version, "");
      ASSERT_NE(schema, nullptr) << group.name << ": " << m.op_type;
      if (m.since_version > 1) {
        EXPECT_EQ(schema->SinceVersion(), m.since_version) << group.name << ": " << m.op_type;
      }
    }
  }
}

TEST(OpGroups, BroadcastingIsTheTwentyFourElementWiseOps) {
  const OpGroup* b = FindOpGroup("broadcasting");
  ASSERT_NE(b, nullptr);
  std::set<std::string> ops;
  for (const OpGroupMember& m : b->members) ops.emplace(m.op_type);
  EXPECT_EQ(ops, (std::set<std::string>{
                     "Add",      "Sub",   "Mul",   "Div",         "Pow",       "Mod",
                     "BitShift", "Equal", "Less",  "LessOrEqual", "Greater",   "GreaterOrEqual",
                     "And",      "Or",    "Xor",   "Max",         "Min",       "Sum",
                     "Mean",     "PRelu", "Where", "BitwiseAnd",  "BitwiseOr", "BitwiseXor"}));
  EXPECT_EQ(FindOpGroupMember("broadcasting", "Add")->since_version, 7);
  EXPECT_EQ(FindOpGroupMember("broadcasting", "Max")->since_version, 8);
  EXPECT_EQ(FindOpGroupMember("broadcasting", "Where")->since_version, 9);
  EXPECT_EQ(FindOpGroupMember("broadcasting", "Relu"), nullptr);
}

TEST(OpGroups, MembershipIsOfTheDefaultDomain) {
  EXPECT_TRUE(InOpGroup("commutative", "", "Add"));
  EXPECT_TRUE(InOpGroup("commutative", "ai.onnx", "Mul"));
  EXPECT_FALSE(InOpGroup("commutative", "", "Sub"));
  EXPECT_FALSE(InOpGroup("commutative", "com.microsoft", "Add"));
  EXPECT_FALSE(InOpGroup("no_such_group", "", "Add"));
  EXPECT_EQ(FindOpGroup("no_such_group"), nullptr);
}

}  // namespace
}  // namespace ovfix
