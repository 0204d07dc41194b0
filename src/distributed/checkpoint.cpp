#include "ember/distributed/checkpoint.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "core/json_string.h"
#include "core/read_file.h"
#include "ember/autograd/autograd.h"
#include "ember/ops.h"
#include "ember/serialize/serialize.h"
#include "serialize/json.h"

namespace ember::distributed::checkpoint {
namespace fs = std::filesystem;

ShardedTensor ShardedTensor::replicated(const Tensor& t) {
  return {t, Shape(t.sizes().begin(), t.sizes().end()), Shape(size_t(t.dim()), 0)};
}

namespace {

constexpr const char* kMeta = ".metadata";

std::string join(const Shape& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

Shape split_ints(const std::string& s) {
  Shape out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(std::stoll(item));
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string line; std::getline(ss, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// Every rank's string, in rank order (lengths first, then the bytes padded to the longest).
std::vector<std::string> all_gather_strings(ProcessGroup& g, const std::string& mine) {
  const int n = g.size();
  Tensor len = full({1}, Scalar(int64_t(mine.size())), {.dtype = kInt64});
  Tensor lens = empty({n}, {.dtype = kInt64});
  g.all_gather_into(lens, len)->wait();
  int64_t longest = 1;
  for (int r = 0; r < n; ++r) longest = std::max(longest, lens[r].item<int64_t>());
  Tensor buf = zeros({longest}, {.dtype = kUInt8});
  std::memcpy(buf.data_ptr(), mine.data(), mine.size());
  Tensor all = empty({n * longest}, {.dtype = kUInt8});
  g.all_gather_into(all, buf)->wait();
  std::vector<std::string> out;
  const auto* p = static_cast<const char*>(all.data_ptr());
  for (int r = 0; r < n; ++r) out.emplace_back(p + r * longest, size_t(lens[r].item<int64_t>()));
  return out;
}

std::string piece_name(const std::string& key, const Shape& offsets) { return key + "@" + join(offsets); }

Shape sizes_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }

std::string random_id() {
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 12; ++i) id += "0123456789abcdef"[rd() % 16];
  return id;
}

Tensor window(Tensor t, const Shape& offsets, const Shape& sizes) {
  for (size_t d = 0; d < offsets.size(); ++d) t = t.narrow(int64_t(d), offsets[d], sizes[d]);
  return t;
}

void append_ints(std::string& out, const Shape& v) { out += "[" + join(v) + "]"; }

}  // namespace

void save(const DistStateDict& state, const std::string& dir, ProcessGroup& group) {
  const int rank = group.rank();
  std::string offer;
  for (const auto& [key, st] : state) {
    EMBER_CHECK_VALUE(key.find('\t') == std::string::npos && key.find('\n') == std::string::npos,
                      "distributed checkpoint: key ", key, " may not contain tabs or newlines");
    EMBER_CHECK_VALUE(st.offsets.size() == st.global_shape.size() && int64_t(st.offsets.size()) == st.local.dim(),
                      "distributed checkpoint: ", key, ": offsets, global shape and local tensor disagree in rank");
    offer += key + "\t" + join(st.offsets) + "\t" + join(sizes_of(st.local)) + "\t" + join(st.global_shape) + "\t" +
             dtype_name(st.local.dtype()) + "\n";
  }
  const std::vector<std::string> offers = all_gather_strings(group, offer);
  // the writer of each piece: the lowest rank that has it
  std::map<std::pair<std::string, std::string>, int> writer;
  std::map<std::string, std::vector<std::string>> info;  // key -> global shape, dtype
  std::vector<std::string> order;
  for (int r = 0; r < int(offers.size()); ++r)
    for (const auto& line : lines(offers[size_t(r)])) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
      f.resize(5);
      writer.emplace(std::make_pair(f[0], f[1] + "\t" + f[2]), r);
      if (!info.count(f[0])) order.push_back(f[0]);
      info.emplace(f[0], std::vector<std::string>{f[3], f[4]});
    }
  if (rank == 0) fs::create_directories(dir);
  group.barrier()->wait();  // the directory exists before anyone writes into it
  std::vector<std::pair<std::string, Tensor>> mine;
  for (const auto& [key, st] : state)
    if (writer.at({key, join(st.offsets) + "\t" + join(sizes_of(st.local))}) == rank)
      mine.emplace_back(piece_name(key, st.offsets), st.local.detach().cpu().contiguous());
  const std::string file = "__" + std::to_string(rank) + "_" + random_id() + ".safetensors";
  if (!mine.empty()) safetensors::save(mine, (fs::path(dir) / file).string());
  const std::vector<std::string> written = all_gather_strings(group, mine.empty() ? "" : file);  // and a barrier
  if (rank == 0) {
    std::string meta = "{\"version\": 1, \"save_id\": ";
    append_json_string(meta, file);
    meta += ", \"world_size\": " + std::to_string(group.size()) + ", \"tensors\": {";
    std::set<std::string> keep;
    for (size_t k = 0; k < order.size(); ++k) {
      const std::string& key = order[k];
      if (k) meta += ", ";
      append_json_string(meta, key);
      meta += ": {\"shape\": ";
      append_ints(meta, split_ints(info[key][0]));
      meta += ", \"dtype\": ";
      append_json_string(meta, info[key][1]);
      meta += ", \"chunks\": [";
      bool first = true;
      for (const auto& [piece, r] : writer) {
        if (piece.first != key) continue;
        const auto tab = piece.second.find('\t');
        const Shape offsets = split_ints(piece.second.substr(0, tab)), sizes = split_ints(piece.second.substr(tab + 1));
        meta += first ? "{\"offsets\": " : ", {\"offsets\": ";
        first = false;
        append_ints(meta, offsets);
        meta += ", \"sizes\": ";
        append_ints(meta, sizes);
        meta += ", \"file\": ";
        append_json_string(meta, written[size_t(r)]);
        keep.insert(written[size_t(r)]);
        meta += ", \"name\": ";
        append_json_string(meta, piece_name(key, offsets));
        meta += "}";
      }
      meta += "]}";
    }
    meta += "}, \"values\": {}}";
    atomic_write_file((fs::path(dir) / kMeta).string(), meta);  // the commit
    for (const auto& entry : fs::directory_iterator(dir)) {  // the previous save's pieces, and a crashed one's
      const std::string name = entry.path().filename().string();
      if (name.rfind("__", 0) == 0 && entry.path().extension() == ".safetensors" && !keep.count(name)) {
        std::error_code ec;
        fs::remove(entry.path(), ec);
      }
    }
  }
  group.barrier()->wait();  // no rank returns before the checkpoint is complete
}

void load(DistStateDict& state, const std::string& dir) {
  const std::string meta_path = (fs::path(dir) / kMeta).string();
  EMBER_CHECK(fs::exists(meta_path), "distributed checkpoint: ", dir, " has no ", kMeta,
              " (no complete checkpoint there)");
  const std::string text = read_whole_file(meta_path, "distributed checkpoint");
  const json::Json root = json::JsonParser(text, meta_path + ": invalid JSON").parse_document();
  const json::Json* tensors = root.kind == json::Json::Object ? json::member(root, "tensors") : nullptr;
  const json::Json* version = root.kind == json::Json::Object ? json::member(root, "version") : nullptr;
  EMBER_CHECK(tensors && tensors->kind == json::Json::Object && version && version->text == "1",
              "distributed checkpoint: ", meta_path, " is not a version-1 ember checkpoint");
  auto ints = [&](const json::Json* v, const std::string& what) {
    EMBER_CHECK(v && v->kind == json::Json::Array, "distributed checkpoint: ", meta_path, ": bad ", what);
    Shape out;
    for (const auto& x : v->arr) {
      EMBER_CHECK(x.kind == json::Json::Number, "distributed checkpoint: ", meta_path, ": bad ", what);
      out.push_back(std::stoll(x.text));
    }
    return out;
  };
  auto str = [&](const json::Json* v, const std::string& what) {
    EMBER_CHECK(v && v->kind == json::Json::String, "distributed checkpoint: ", meta_path, ": bad ", what);
    return v->text;
  };
  std::map<std::string, std::map<std::string, Tensor>> files;
  autograd::NoGradGuard no_grad;
  for (auto& [key, st] : state) {
    const json::Json* t = json::member(*tensors, key);
    EMBER_CHECK(t && t->kind == json::Json::Object, "distributed checkpoint: ", dir, " has no tensor '", key, "'");
    const Shape shape = ints(json::member(*t, "shape"), key + ".shape");
    EMBER_CHECK(shape == st.global_shape, "distributed checkpoint: ", key, " has shape ", IntArrayRef(shape),
                " in the checkpoint, but ", IntArrayRef(st.global_shape), " in the state dict being loaded");
    const json::Json* chunks = json::member(*t, "chunks");
    EMBER_CHECK(chunks && chunks->kind == json::Json::Array, "distributed checkpoint: ", meta_path, ": bad chunks of ",
                key);
    const Shape sizes = sizes_of(st.local);
    int64_t covered = 0;
    for (const auto& c : chunks->arr) {
      const Shape off = ints(json::member(c, "offsets"), key + " offsets"), sz = ints(json::member(c, "sizes"), key + " sizes");
      EMBER_CHECK(off.size() == shape.size() && sz.size() == shape.size(), "distributed checkpoint: ", meta_path,
                  ": a piece of ", key, " has the wrong rank");
      Shape lo(shape.size()), extent(shape.size());
      bool overlap = true;
      int64_t n = 1;
      for (size_t d = 0; d < shape.size(); ++d) {
        lo[d] = std::max(st.offsets[d], off[d]);
        const int64_t hi = std::min(st.offsets[d] + sizes[d], off[d] + sz[d]);
        extent[d] = hi - lo[d];
        overlap = overlap && extent[d] > 0;
        n *= std::max<int64_t>(extent[d], 0);
      }
      if (!overlap && !shape.empty()) continue;
      const std::string file = fs::path(str(json::member(c, "file"), key + " file")).filename().string();
      if (!files.count(file)) {
        const std::string path = (fs::path(dir) / file).string();
        EMBER_CHECK(fs::exists(path), "distributed checkpoint: ", path, ", named in ", kMeta, ", is missing");
        for (auto& [name, tensor] : safetensors::load(path)) files[file][name] = tensor;
      }
      const std::string name = str(json::member(c, "name"), key + " name");
      auto it = files[file].find(name);
      EMBER_CHECK(it != files[file].end() && sizes_of(it->second) == sz, "distributed checkpoint: ", file, " lacks ",
                  name, " of shape ", IntArrayRef(sz));
      Shape src_off(shape.size()), dst_off(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) {
        src_off[d] = lo[d] - off[d];
        dst_off[d] = lo[d] - st.offsets[d];
      }
      window(st.local, dst_off, extent).copy_(window(it->second, src_off, extent));
      covered += n;
    }
    EMBER_CHECK(covered == st.local.numel(), "distributed checkpoint: the saved pieces of ", key, " cover ", covered,
                " of the ", st.local.numel(), " elements this rank needs");
  }
}

}  // namespace ember::distributed::checkpoint
