// Named groups of ONNX ops (default domain), defined once here and read by everything that
// needs such a list: rule files use a group as a pattern's op or in `for` (docs/rules.md), the
// rules' native passes ask whether a node is in one, and the OpenCL kernel table registers
// its element-wise and reduction kernels from them. Each member carries the op versions for
// which the group's meaning holds: Add broadcasts numpy-style from version 7 (before, only
// with its `broadcast` attribute), so `broadcasting` has Add from 7.
#pragma once

#include <limits>
#include <string_view>
#include <vector>

namespace ovfix {

// The upper end of a range that is open ("7.."): every later version.
inline constexpr int kOpenVersion = std::numeric_limits<int>::max();

struct OpGroupMember {
  std::string_view op_type;
  int since_version = 1;
  int until_version = kOpenVersion;
};

struct OpGroup {
  std::string_view name;  // lower case, '_' between words: "broadcasting", "comparison"
  std::string_view description;
  std::vector<OpGroupMember> members;
};

// Every group, in a fixed order.
const std::vector<OpGroup>& AllOpGroups();
// nullptr when there is no group of that name.
const OpGroup* FindOpGroup(std::string_view name);
// The member of `group` for `op_type`, or nullptr (also when the group does not exist).
const OpGroupMember* FindOpGroupMember(std::string_view group, std::string_view op_type);
// Whether the op (`domain` "" or "ai.onnx") belongs to `group`, at any version.
bool InOpGroup(std::string_view group, std::string_view domain, std::string_view op_type);

}  // namespace ovfix
