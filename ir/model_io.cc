#include "ir/model_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "ir/atomic_file.h"
#include "ir/external_data.h"
#include "ir/graph_walk.h"
#include "ir/mapped_file.h"
#include "ir/model_check.h"
#include "ir/piece_streamer.h"
#include "ir/status_macros.h"
#include "ir/tensor_proto.h"
#include "ir/type_check.h"

namespace ovfix {

// Friend of Graph, Node and Value: the one place that converts between protos and the IR.
class ModelIO {
 public:
  // ---- loading ----
  static absl::Status BuildGraph(onnx::GraphProto& gp, Graph& g, ExternalDataFiles& files) {
    g.name_ = gp.name();
    auto duplicate = [](const std::string& name) {
      return absl::InvalidArgumentError(absl::StrCat("duplicate value name '", name, "'"));
    };
    for (auto& tp : *gp.mutable_initializer()) {
      if (tp.name().empty()) return absl::InvalidArgumentError("an initializer has no name");
      if (g.FindValue(tp.name()) != nullptr) return duplicate(tp.name());
      absl::StatusOr<Tensor> tensor;
      if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
        if (!IsKnownDataType(tp.data_type()) || tp.data_type() == 8) {
          return absl::InvalidArgumentError(
              absl::StrCat("tensor '", tp.name(), "': bad external data type"));
        }
        int64_t n = 1;
        for (int64_t d : tp.dims()) {
          if (d < 0)
            return absl::InvalidArgumentError(
                absl::StrCat("tensor '", tp.name(), "': negative dim"));
          n *= d;
        }
        const auto type = static_cast<DataType>(tp.data_type());
        OVFIX_ASSIGN_OR_RETURN(auto buffer, files.Resolve(tp, StorageBytes(type, n)));
        tensor = Tensor(type, {tp.dims().begin(), tp.dims().end()}, std::move(buffer));
      } else {
        tensor = TensorFromProtoMove(tp);
      }
      if (!tensor.ok()) return tensor.status();
      Value* v = g.NewValue(tp.name());
      v->set_tensor(*std::move(tensor));
      v->source_bytes_ = v->tensor().buffer() ? v->tensor().buffer()->address() : nullptr;
      v->source_proto_ = std::make_shared<onnx::TensorProto>(std::move(tp));
      // raw_data (if any) was moved into the tensor; the field stays set but empty.
      g.initializers_.push_back(v);
    }
    for (auto& vi : *gp.mutable_input()) {
      Value* v = g.FindValue(vi.name());
      if (v == nullptr) {
        v = g.NewValue(vi.name());
      } else if (!v->is_initializer() || v->graph_input_) {
        return duplicate(vi.name());
      }
      if (!v->is_initializer() || vi.has_type()) *v->mutable_type() = vi.type();
      v->doc_string_ = vi.doc_string();
      g.AddInput(v);
    }
    // Outputs of all nodes first, so a file whose nodes are out of order still loads.
    std::vector<Node*> nodes;
    for (auto& np : *gp.mutable_node()) {
      std::vector<Value*> outputs;
      for (const auto& name : np.output()) {
        if (name.empty()) {
          outputs.push_back(nullptr);
          continue;
        }
        if (g.FindValue(name) != nullptr) return duplicate(name);
        outputs.push_back(g.NewValue(name));
      }
      Node* n = g.AddNodeWithOutputs(np.op_type(), {}, outputs, np.name(), np.domain());
      n->doc_string_ = np.doc_string();
      nodes.push_back(n);
    }
    for (int i = 0; i < gp.node_size(); ++i) {
      auto& np = *gp.mutable_node(i);
      Node* n = nodes[i];
      for (const auto& name : np.input()) {
        if (name.empty()) {
          n->AddInput(nullptr);
          continue;
        }
        Value* v = g.LookupValue(name);
        if (v == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat("node ", n->Describe(), " uses undefined value '", name, "'"));
        }
        n->AddInput(v);
      }
      for (auto& attr : *np.mutable_attribute()) {
        if (attr.has_g()) {
          Subgraph s{attr.name(), -1, std::make_unique<Graph>(&g, n)};
          OVFIX_RETURN_IF_ERROR(BuildGraph(*attr.mutable_g(), *s.graph, files));
          attr.clear_g();
          n->subgraphs_.push_back(std::move(s));
        }
        for (int k = 0; k < attr.graphs_size(); ++k) {
          Subgraph s{attr.name(), k, std::make_unique<Graph>(&g, n)};
          OVFIX_RETURN_IF_ERROR(BuildGraph(*attr.mutable_graphs(k), *s.graph, files));
          n->subgraphs_.push_back(std::move(s));
        }
        attr.clear_graphs();
        n->attributes_.push_back(std::move(attr));
      }
    }
    for (auto& vi : *gp.mutable_output()) {
      Value* v = g.LookupValue(vi.name());
      if (v == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", vi.name(), "' is not produced by any node"));
      }
      if (v->owner() == &g) {
        // An output without a type, or with one that names no element type (`type {}`,
        // `elem_type: 0`), says nothing of its value: a graph input passed through keeps the
        // type its input entry declared (the load_model fuzzer found it lost, then replaced by
        // the output's unknown one, which the saved file's input then declared).
        const bool declared_elsewhere = v->is_initializer() || v->is_graph_input();
        const onnx::TypeProto& t = vi.type();
        const bool unknown = !vi.has_type() || t.value_case() == onnx::TypeProto::VALUE_NOT_SET ||
                             (t.has_tensor_type() && t.tensor_type().elem_type() == 0);
        if (!unknown || !declared_elsewhere) *v->mutable_type() = t;
        v->doc_string_ = vi.doc_string();
      }
      g.AddOutput(v);
    }
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> dangling;
    for (auto& vi : *gp.mutable_value_info()) {
      Value* v = g.FindValue(vi.name());
      if (v == nullptr) {
        *dangling.Add() = std::move(vi);  // kept as read
        continue;
      }
      *v->mutable_type() = vi.type();
      v->doc_string_ = vi.doc_string();
      g.value_info_.push_back(v);
    }
    gp.clear_node();
    gp.clear_initializer();
    gp.clear_input();
    gp.clear_output();
    gp.clear_value_info();
    gp.clear_name();
    gp.mutable_value_info()->Swap(&dangling);
    g.extras_ = std::move(gp);
    return g.TopologicalSort();
  }

  // ---- saving ----
  struct Writer {
    // Strings lent to the proto by the IR, to be taken back after serialization.
    std::vector<std::pair<std::string*, std::string*>> lent;
    // External data being written, or -1.
    int data_fd = -1;
    uint64_t data_offset = 0;
    std::string data_location;
    size_t threshold = 1024;
    bool copy_weights = false;  // ModelToProto: never lend
    // CopyModel: tensors of at least this many bytes are written as empty placeholders whose
    // doc_string indexes `shared`, and get their tensors back after the copy is built.
    size_t share_at_least = SIZE_MAX;
    // CopyGraphSharingWeights: every tensor is shared, and the copy's value gets the form it
    // was read in as well (its source proto), so that it is written as the original is.
    bool share_all = false;
    struct Shared {
      Tensor tensor;
      std::shared_ptr<onnx::TensorProto> source_proto;
      const void* source_bytes = nullptr;
    };
    std::vector<Shared> shared;
    absl::Status status;
    std::unique_ptr<PieceStreamer> streamer;  // WritePieces', made with the first lazy tensor
    std::function<void(uint64_t, uint64_t)> progress;
    uint64_t bytes_written = 0, bytes_total = 0;
    // The external tensors, placed by WriteGraph and written by WriteData: the model file is
    // complete before the data file's bytes are.
    struct Placed {
      Tensor tensor;
      uint64_t offset;
    };
    std::vector<Placed> placed;

    ~Writer() { GiveBack(); }
    void GiveBack() {
      for (auto& [field, owned] : lent) field->swap(*owned);
      lent.clear();
    }

    void WriteTensor(Value* v, onnx::TensorProto* tp) {
      const Tensor& t = v->tensor();
      if ((share_all || t.nbytes() >= share_at_least) && t.type() != DataType::kString) {
        tp->set_name(v->name());
        tp->set_data_type(static_cast<int32_t>(t.type()));
        tp->add_dims(0);
        tp->set_doc_string(absl::StrCat(kSharedMark, shared.size()));
        if (share_all) {
          shared.push_back({t, v->source_proto_, v->source_bytes_});
        } else {
          shared.push_back({t});
        }
        return;
      }
      const bool pending = t.buffer() != nullptr && t.buffer()->is_pending();
      const bool unchanged =
          v->source_proto_ && !pending &&
          (t.buffer() ? t.buffer()->address() : nullptr) == v->source_bytes_ &&
          static_cast<int32_t>(t.type()) == v->source_proto_->data_type() &&
          std::equal(t.dims().begin(), t.dims().end(), v->source_proto_->dims().begin(),
                     v->source_proto_->dims().end());
      if (unchanged) {
        *tp = *v->source_proto_;
      } else {
        tp->set_name(v->name());
        tp->set_data_type(static_cast<int32_t>(t.type()));
        for (int64_t d : t.dims()) tp->add_dims(d);
      }
      const bool was_external =
          unchanged && v->source_proto_->data_location() == onnx::TensorProto::EXTERNAL;
      const bool typed_fields = unchanged && !was_external && !v->source_proto_->has_raw_data();
      if (t.type() == DataType::kString) {
        if (!unchanged) {
          for (const auto& s : t.strings()) tp->add_string_data(s);
        }
        return;
      }
      if (data_fd >= 0 && t.nbytes() >= threshold) {
        WriteExternal(t, tp);
        return;
      }
      if (was_external) {
        tp->clear_external_data();
        tp->clear_data_location();
      } else if (typed_fields) {
        return;  // kept in its typed fields as read
      }
      std::string* owned = t.buffer() ? t.buffer()->owned_string() : nullptr;
      // A short string keeps its bytes inside the std::string object: a swap would move them
      // away from where this tensor (and any tensor sharing its buffer) points.
      const bool bytes_inside =
          owned != nullptr &&
          reinterpret_cast<const char*>(owned->data()) >= reinterpret_cast<const char*>(owned) &&
          reinterpret_cast<const char*>(owned->data()) < reinterpret_cast<const char*>(owned + 1);
      if (owned != nullptr && !bytes_inside && !copy_weights && owned->size() == t.nbytes()) {
        tp->mutable_raw_data()->swap(*owned);
        lent.emplace_back(tp->mutable_raw_data(), owned);
      } else if (pending) {
        // Made straight into the message: the tensor stays unmade.
        tp->mutable_raw_data()->resize(t.nbytes());
        t.buffer()->Read(0, t.nbytes(),
                         reinterpret_cast<std::byte*>(tp->mutable_raw_data()->data()));
      } else {
        tp->set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
      }
    }

    void WriteExternal(const Tensor& t, onnx::TensorProto* tp) {
      tp->clear_raw_data();
      tp->clear_float_data();
      tp->clear_int32_data();
      tp->clear_int64_data();
      tp->clear_double_data();
      tp->clear_uint64_data();
      tp->clear_external_data();
      const uint64_t offset = (data_offset + 63) / 64 * 64;
      placed.push_back({t, offset});
      data_offset = offset + t.nbytes();
      tp->set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char* key, std::string value) {
        auto* e = tp->add_external_data();
        e->set_key(key);
        e->set_value(std::move(value));
      };
      add("location", data_location);
      add("offset", std::to_string(offset));
      add("length", std::to_string(t.nbytes()));
    }

    // Writes the placed tensors to `data_fd` in order (64-byte aligned, zeros between),
    // telling `written` (when given) how far the file is written.
    void WriteData(WriteProgress* written) {
      static const char zeros[64] = {};
      uint64_t at = 0;
      for (const Placed& p : placed) {
        if (p.offset > at) WriteAll(zeros, p.offset - at);
        const Tensor& t = p.tensor;
        if (t.buffer() != nullptr && t.buffer()->is_pending()) {
          WritePieces(*t.buffer());
        } else {
          WriteAll(t.raw(), t.nbytes());
        }
        if (!status.ok()) return;
        at = p.offset + t.nbytes();
        if (written != nullptr) written->Advance(at);
        if (progress) progress(bytes_written += t.nbytes(), bytes_total);
      }
    }

    // A lazy tensor made and written a piece at a time: only two pieces are ever in memory,
    // the next made while the last is written.
    void WritePieces(const Buffer& b) {
      if (streamer == nullptr) streamer = std::make_unique<PieceStreamer>();
      streamer->Stream(b, [&](const std::byte* piece, size_t n) {
        WriteAll(piece, n);
        return status.ok();
      });
    }

    void WriteAll(const void* data, size_t n) {
      const char* p = static_cast<const char*>(data);
      while (n > 0 && status.ok()) {
        const ssize_t w = ::write(data_fd, p, std::min<size_t>(n, 1 << 30));
        if (w < 0) {
          if (errno == EINTR) continue;
          status =
              absl::InternalError(absl::StrCat("writing external data: ", std::strerror(errno)));
          return;
        }
        p += w;
        n -= static_cast<size_t>(w);
      }
    }

    static void WriteValueInfo(const Value* v, onnx::ValueInfoProto* out) {
      out->set_name(v->name());
      if (v->type().value_case() != onnx::TypeProto::VALUE_NOT_SET || v->type().has_denotation()) {
        *out->mutable_type() = v->type();
      }
      if (!v->doc_string().empty()) out->set_doc_string(v->doc_string());
    }

    void WriteGraph(const Graph& g, onnx::GraphProto* out) {
      *out = g.extras_;
      if (!g.name_.empty()) out->set_name(g.name_);
      for (const auto& node : g.nodes_) {
        const Node* n = node.get();
        auto* np = out->add_node();
        for (const Value* v : n->inputs_) np->add_input(v != nullptr ? v->name() : "");
        for (const Value* v : n->outputs_) np->add_output(v != nullptr ? v->name() : "");
        if (!n->name_.empty()) np->set_name(n->name_);
        np->set_op_type(n->op_type_);
        if (!n->domain_.empty()) np->set_domain(n->domain_);
        if (!n->doc_string_.empty()) np->set_doc_string(n->doc_string_);
        for (const auto& a : n->attributes_) {
          auto* ap = np->add_attribute();
          *ap = a;
          for (const auto& s : n->subgraphs_) {
            if (s.attribute != a.name()) continue;
            WriteGraph(*s.graph, s.index < 0 ? ap->mutable_g() : ap->add_graphs());
          }
        }
      }
      for (Value* v : g.initializers_) WriteTensor(v, out->add_initializer());
      for (const Value* v : g.inputs_) WriteValueInfo(v, out->add_input());
      for (const Value* v : g.outputs_) WriteValueInfo(v, out->add_output());
      for (const Value* v : g.value_info_) WriteValueInfo(v, out->add_value_info());
    }
  };

  // A NUL first keeps the mark apart from any doc string a file can hold as text.
  static constexpr absl::string_view kSharedMark{"\0ovfix-shared:", 14};

  // CopyModel's placeholders get the tensors they stand for.
  static void RestoreShared(Graph& g, const std::vector<Writer::Shared>& shared) {
    for (Value* v : g.initializers_) {
      const std::string* doc = v->source_proto_ ? &v->source_proto_->doc_string() : nullptr;
      size_t index = 0;
      if (doc == nullptr || !absl::StartsWith(*doc, kSharedMark) ||
          !absl::SimpleAtoi(doc->substr(kSharedMark.size()), &index) || index >= shared.size()) {
        continue;
      }
      v->set_tensor(shared[index].tensor);
      v->source_proto_ = shared[index].source_proto;
      v->source_bytes_ = shared[index].source_bytes;
    }
    for (auto& node : g.nodes_) {
      for (auto& s : node->subgraphs_) RestoreShared(*s.graph, shared);
    }
  }

  static absl::StatusOr<std::unique_ptr<Model>> Copy(const Model& model, size_t share_at_least,
                                                     bool share_all = false) {
    onnx::ModelProto proto = model.extras();
    Writer writer;
    writer.copy_weights = true;
    writer.share_at_least = share_at_least;
    writer.share_all = share_all;
    writer.WriteGraph(model.graph(), proto.mutable_graph());
    std::string bytes;
    if (!proto.SerializeToString(&bytes)) {
      return absl::InternalError("the model does not serialize (over 2 GB: use --external-data)");
    }
    proto.Clear();
    if (!proto.ParseFromString(bytes)) {
      return absl::InternalError("the serialized model does not parse back");
    }
    bytes.clear();
    bytes.shrink_to_fit();
    absl::StatusOr<std::unique_ptr<Model>> copy =
        ModelFromProto(std::move(proto), model.base_dir(), "the serialized model");
    if (copy.ok()) RestoreShared((*copy)->graph(), writer.shared);
    return copy;
  }

  // ---- graph internals that ir/graph_walk.h exposes (ModelIO is the IR's friend) ----
  static void ListInValueInfo(Graph& g, std::span<Value* const> values) {
    absl::flat_hash_set<const Value*> listed(g.value_info_.begin(), g.value_info_.end());
    for (Value* v : values) {
      if (v != nullptr && listed.insert(v).second) g.value_info_.push_back(v);
    }
  }
  static Node* NextNode(const Node& n) {
    auto next = std::next(n.position_);
    return next == n.owner_->nodes_.end() ? nullptr : next->get();
  }
};

namespace {

absl::Status Prefixed(const std::string& path, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
}

// Parses the model file open at `fd` from its start.
bool ParseModelFile(int fd, onnx::ModelProto& proto) {
  if (::lseek(fd, 0, SEEK_SET) != 0) return false;
  google::protobuf::io::FileInputStream stream(fd);
  return proto.ParseFromZeroCopyStream(&stream);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> ModelFromProto(onnx::ModelProto&& proto,
                                                      const std::string& base_dir,
                                                      const std::string& source) {
  ExternalDataFiles files(base_dir);
  return ModelFromProto(std::move(proto), base_dir, source, files);
}

absl::StatusOr<std::unique_ptr<Model>> ModelFromProto(onnx::ModelProto&& proto,
                                                      const std::string& base_dir,
                                                      const std::string& source,
                                                      ExternalDataFiles& files) {
  if (!proto.has_graph()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not an ONNX model (no graph)"));
  }
  // onnx 1.12's inference and checker trust declared types: a malformed one stops here.
  if (auto s = CheckDeclaredTypes(proto.graph()); !s.ok()) return Prefixed(source, s);
  auto model = std::make_unique<Model>();
  model->set_base_dir(base_dir);
  onnx::GraphProto graph;
  graph.Swap(proto.mutable_graph());
  proto.clear_graph();
  if (auto s = ModelIO::BuildGraph(graph, model->graph(), files); !s.ok()) {
    return Prefixed(source, s);
  }
  model->set_external_data_files(files.paths());
  model->extras() = std::move(proto);
  return model;
}

absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& path) {
  if (IsTemporaryFileName(std::filesystem::path(path).filename().string())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": an unfinished temporary file of an interrupted write, not a model"));
  }
  // O_NONBLOCK: opening a FIFO would wait for a writer; it is refused below instead.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  const bool stated = ::fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, stated && S_ISDIR(st.st_mode)
                                                             ? ": is a folder, not a file"
                                                             : ": not a regular file"));
  }
  if (st.st_size == 0) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty file, not an ONNX model"));
  }
  unsigned char first = 0;
  if (::pread(fd, &first, 1, 0) != 1) first = 0;
  onnx::ModelProto proto;
  const bool parsed = ParseModelFile(fd, proto);
  ::close(fd);
  // A ModelProto starts with ir_version (field 1, varint: byte 0x08) as every exporter writes.
  if (!parsed) {
    return absl::InvalidArgumentError(
        first == 0x08
            ? absl::StrCat(path, ": truncated or corrupt ONNX model (protobuf parse failed)")
            : absl::StrCat(path, ": not an ONNX model (protobuf parse failed)"));
  }
  if (!proto.has_graph() || proto.ir_version() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not an ONNX model (", proto.has_graph() ? "no ir_version" : "no graph", ")"));
  }
  if (auto s = RequireInputTypes(proto.graph()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  if (std::string why = UnsupportedVersions(proto.ir_version(), proto.opset_import());
      !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  return ModelFromProto(std::move(proto), dir, path);
}

onnx::ModelProto ModelToProto(const Model& model) {
  onnx::ModelProto proto = model.extras();
  ModelIO::Writer writer;
  writer.copy_weights = true;
  writer.WriteGraph(model.graph(), proto.mutable_graph());
  return proto;
}

absl::StatusOr<std::unique_ptr<Model>> CopyModel(const Model& model, size_t share_at_least) {
  return ModelIO::Copy(model, share_at_least);
}

absl::StatusOr<std::unique_ptr<Model>> CopyGraphSharingWeights(const Model& model) {
  return ModelIO::Copy(model, SIZE_MAX, /*share_all=*/true);
}

onnx::GraphProto GraphToProto(const Graph& graph) {
  onnx::GraphProto proto;
  ModelIO::Writer writer;
  writer.copy_weights = true;
  writer.WriteGraph(graph, &proto);
  return proto;
}

namespace {

// Protobuf's 2 GB, less room for the graph itself.
constexpr int64_t kProtobufLimit = (int64_t{1} << 31) - (int64_t{64} << 20);

// The folder a save to `path` writes into: that of the file a link leads to.
std::string WriteFolder(const std::string& path) {
  const std::filesystem::path target(WriteTarget(path));
  return target.has_parent_path() ? target.parent_path().string() : ".";
}

// The data file's name in the model's folder; beside the file a link leads to, since that is
// where the model is written.
std::string DataLocation(const std::string& path, const SaveOptions& options) {
  if (!options.external_location.empty()) return options.external_location;
  return std::filesystem::path(WriteTarget(path)).filename().string() + ".data";
}

}  // namespace

absl::StatusOr<std::string> ExternalDataFile(const std::string& path, const SaveOptions& options) {
  return ExternalDataPath(WriteFolder(path), DataLocation(path, options));
}

bool WritesExternalData(const Model& model, const SaveOptions& options) {
  return options.external_data == ExternalDataMode::kAlways ||
         (options.external_data == ExternalDataMode::kAuto &&
          (model.loaded_with_external_data() || WeightBytes(model.graph()) > kProtobufLimit));
}

namespace {

// The model a save has just written to `fd` (the model file, complete, not yet renamed to
// `path`), its external weights views of `data` (the data file, at `data_path`, still being
// written when `data` has progress).
absl::StatusOr<std::unique_ptr<Model>> ReadBack(int fd, const std::string& path,
                                                const std::string& data_path,
                                                std::shared_ptr<const MappedFile> data) {
  onnx::ModelProto proto;
  if (!ParseModelFile(fd, proto)) {
    return absl::InternalError(absl::StrCat(path, ": the file written does not parse"));
  }
  const std::string dir = WriteFolder(path);
  ExternalDataFiles files(dir);
  if (data != nullptr) files.Provide(data_path, std::move(data));
  return ModelFromProto(std::move(proto), dir, path, files);
}

}  // namespace

absl::Status SaveModel(Model& model, const std::string& path, const SaveOptions& options) {
  return SaveModelAndRead(model, path, options, nullptr);
}

absl::Status SaveModelAndRead(Model& model, const std::string& path, const SaveOptions& options,
                              const WrittenModelReader& read) {
  const int64_t weight_bytes = WeightBytes(model.graph());
  const bool external = WritesExternalData(model, options);
  if (!external && weight_bytes > kProtobufLimit) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", weight_bytes >> 20,
                                                   " MB of weights do not fit in one protobuf file "
                                                   "(2 GB at most); they need external data"));
  }
  ModelIO::Writer writer;
  writer.threshold = options.external_threshold;
  writer.progress = options.progress;
  writer.bytes_total =
      static_cast<uint64_t>(WeightBytes(model.graph(), options.external_threshold));
  std::string data_path;
  // Writes the model file to `fd`, then the external data (placed by WriteGraph) to
  // `data_fd`; `read` runs on the files as they are written, beside the data's write.
  auto write_model = [&](int fd, int data_fd) -> absl::Status {
    writer.data_fd = data_fd;
    onnx::ModelProto proto = model.extras();
    writer.WriteGraph(model.graph(), proto.mutable_graph());
    if (!writer.status.ok()) return writer.status;
    google::protobuf::io::FileOutputStream stream(fd);
    bool ok;
    {
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      ok = proto.SerializeToCodedStream(&coded) && !coded.HadError();
    }
    ok = stream.Flush() && ok;
    writer.GiveBack();  // before `proto`, which holds the lent bytes, goes away
    if (!ok) return absl::InternalError("cannot write (disk full?)");
    proto.Clear();
    if (data_fd < 0) {
      if (read) read(ReadBack(fd, path, data_path, nullptr));
      return absl::OkStatus();
    }
    // The data file has its full size first, so that a reader can map it whole.
    if (::ftruncate(data_fd, static_cast<off_t>(writer.data_offset)) != 0) {
      return absl::InternalError(absl::StrCat("writing external data: ", std::strerror(errno)));
    }
    if (!read) {
      writer.WriteData(nullptr);
      return writer.status;
    }
    auto written = std::make_shared<WriteProgress>();
    std::thread data_writer([&] {
      try {
        writer.WriteData(written.get());
      } catch (const std::exception& e) {  // std::bad_alloc making a piece: the save's error
        writer.status =
            absl::ResourceExhaustedError(absl::StrCat("writing external data: ", e.what()));
      }
      written->Finish();
    });
    // Joined also when `read` throws (std::bad_alloc): the writer never waits for it.
    absl::Cleanup join = [&] { data_writer.join(); };
    absl::StatusOr<std::shared_ptr<const MappedFile>> data =
        MappedFile::MapBeingWritten(data_fd, writer.data_offset, data_path, written);
    read(data.ok() ? ReadBack(fd, path, data_path, *std::move(data)) : data.status());
    std::move(join).Invoke();
    return writer.status;
  };
  absl::Status status;
  if (external) {
    writer.data_location = DataLocation(path, options);
    absl::StatusOr<std::string> data_file = ExternalDataFile(path, options);
    if (!data_file.ok()) return Prefixed(path, data_file.status());
    data_path = *data_file;
    if (SameFile(data_path, path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": the external data file '", writer.data_location, "' is the model itself"));
    }
    status = WriteFileAtomicallyFd(data_path, [&](int data_fd) -> absl::Status {
      return WriteFileAtomicallyFd(path, [&](int fd) { return write_model(fd, data_fd); });
    });
  } else {
    status = WriteFileAtomicallyFd(path, [&](int fd) { return write_model(fd, -1); });
  }
  writer.GiveBack();
  return status.ok() || absl::StartsWith(status.message(), path) ? status : Prefixed(path, status);
}

void ListInValueInfo(Graph& g, std::span<Value* const> values) {
  ModelIO::ListInValueInfo(g, values);
}

Node* NextNode(const Node& n) { return ModelIO::NextNode(n); }

int64_t WeightBytes(const Graph& g, size_t at_least) {
  int64_t total = 0;
  for (const Value* v : g.initializers()) {
    if (v->tensor().nbytes() >= at_least) total += static_cast<int64_t>(v->tensor().nbytes());
  }
  for (const Node* n : g.nodes()) {
    for (const Subgraph& s : n->subgraphs()) total += WeightBytes(*s.graph, at_least);
  }
  return total;
}

}  // namespace ovfix
