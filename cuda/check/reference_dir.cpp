// ReferenceDir: reading op_reference.py's manifest, shapes and raw tensors.
#include "cuda/check/reference_dir.h"

#include <fstream>
#include <sstream>

namespace leap::cuda::check {

namespace {

template <class E>
Expected<std::vector<E>> read_raw(const std::string& path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": missing; rerun benchmarks/gpu/op_reference.py");
  std::vector<E> v(count);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(E)));
  if (static_cast<size_t>(in.gcount()) != count * sizeof(E)) {
    return invalid_input(path + ": shorter than the " + std::to_string(count) +
                         " entries manifest.txt gives; rerun op_reference.py");
  }
  return v;
}

}  // namespace

Expected<ReferenceDir> ReferenceDir::load(const std::string& dir) {
  ReferenceDir r;
  r.dir_ = dir;
  std::ifstream man(dir + "/manifest.txt");
  if (!man)
    return not_found(dir + "/manifest.txt: missing; run benchmarks/gpu/op_reference.py DIR");
  std::string name, kind;
  size_t count = 0;
  while (man >> name >> kind >> count) r.manifest_[name] = {kind, count};
  std::ifstream shapes(dir + "/shapes.txt");
  if (!shapes) return not_found(dir + "/shapes.txt: missing; rerun op_reference.py");
  std::string line;
  while (std::getline(shapes, line)) {
    std::istringstream words(line);
    std::string case_name, kv;
    if (!(words >> case_name)) continue;
    while (words >> kv) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos) {
        return invalid_input(dir + "/shapes.txt: '" + kv + "' is not key=value");
      }
      r.shapes_[case_name][kv.substr(0, eq)] = std::stod(kv.substr(eq + 1));
    }
  }
  return r;
}

Expected<std::vector<float>> ReferenceDir::f32(const std::string& name) const {
  auto it = manifest_.find(name);
  if (it == manifest_.end() || it->second.first != "f32") {
    return not_found(dir_ + "/manifest.txt: no f32 tensor '" + name + "'");
  }
  return read_raw<float>(dir_ + "/" + name + ".bin", it->second.second);
}

Expected<std::vector<int32_t>> ReferenceDir::i32(const std::string& name) const {
  auto it = manifest_.find(name);
  if (it == manifest_.end() || it->second.first != "i32") {
    return not_found(dir_ + "/manifest.txt: no i32 tensor '" + name + "'");
  }
  return read_raw<int32_t>(dir_ + "/" + name + ".bin", it->second.second);
}

Expected<double> ReferenceDir::dim(const std::string& case_name, const std::string& key) const {
  auto c = shapes_.find(case_name);
  if (c == shapes_.end() || !c->second.count(key)) {
    return not_found(dir_ + "/shapes.txt: no " + key + " for case " + case_name);
  }
  return c->second.at(key);
}

}  // namespace leap::cuda::check
