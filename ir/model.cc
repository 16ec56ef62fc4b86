#include "ir/model.h"

namespace ovfix {
namespace {
bool SameDomain(std::string_view a, std::string_view b) {
  auto norm = [](std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; };
  return norm(a) == norm(b);
}
}  // namespace

int64_t Model::OpsetVersion(std::string_view domain) const {
  for (const auto& o : extras_.opset_import()) {
    if (SameDomain(o.domain(), domain)) return o.version();
  }
  return -1;
}

void Model::SetOpsetVersion(std::string_view domain, int64_t version) {
  for (auto& o : *extras_.mutable_opset_import()) {
    if (SameDomain(o.domain(), domain)) {
      o.set_version(version);
      return;
    }
  }
  auto* o = extras_.add_opset_import();
  o->set_domain(std::string(domain));
  o->set_version(version);
}

}  // namespace ovfix
