#include "models/registry.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace parley::models {

extern const char kBuiltinManifestJson[];  // builtin_manifest.cpp, generated from the manifest

namespace {

using nlohmann::json;

constexpr std::array<std::pair<Role, std::string_view>, 5> kRoleNames{{
    {Role::kSegmentation, "segmentation"},
    {Role::kEmbedding, "embedding"},
    {Role::kPlda, "plda"},
    {Role::kXvecTransform, "xvec_transform"},
    {Role::kVad, "vad"},
}};

const std::set<std::string> kElementTypes{"float32", "float16", "float64", "int8", "uint8",
                                          "int16",   "int32",   "int64",   "bool"};

const std::set<std::string> kEntryKeys{
    "id",     "role",    "default", "optional",   "file",     "format", "description",
    "note",   "source",  "license", "size",       "sha256",   "urls",   "gated",
    "inputs", "outputs", "arrays",  "speed_twin", "generator"};

// Where a problem is, for messages: "models/manifest.json: model 3 ('plda')".
class Context {
 public:
  Context(const std::string& source, std::size_t index, std::string id)
      : source_(source), index_(index), id_(std::move(id)) {}

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    parley::fail("{}: model {} ('{}'): {}; fix the manifest (see docs/models.md)", source_,
                 index_ + 1, id_, fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const std::string& source_;
  std::size_t index_;
  std::string id_;
};

std::string required_string(const json& object, const char* key, const Context& context) {
  auto found = object.find(key);
  if (found == object.end()) context.fail("field '{}' is missing", key);
  if (!found->is_string() || found->get<std::string>().empty()) {
    context.fail("field '{}' must be a non-empty string, got {}", key, found->dump());
  }
  return found->get<std::string>();
}

std::string optional_string(const json& object, const char* key, const Context& context) {
  auto found = object.find(key);
  if (found == object.end() || found->is_null()) return {};
  if (!found->is_string()) context.fail("field '{}' must be a string, got {}", key, found->dump());
  return found->get<std::string>();
}

bool optional_bool(const json& object, const char* key, const Context& context) {
  auto found = object.find(key);
  if (found == object.end()) return false;
  if (!found->is_boolean()) {
    context.fail("field '{}' must be true or false, got {}", key, found->dump());
  }
  return found->get<bool>();
}

bool is_lower_hex_sha256(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_valid_id(const std::string& id) {
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

std::vector<TensorSpec> parse_tensors(const json& object, const char* key, const Context& context) {
  auto found = object.find(key);
  if (found == object.end()) context.fail("an ONNX model needs '{}'", key);
  if (!found->is_array() || found->empty()) {
    context.fail("field '{}' must be a non-empty list of tensors", key);
  }
  std::vector<TensorSpec> tensors;
  for (const auto& item : *found) {
    if (!item.is_object()) context.fail("each of '{}' must be an object, got {}", key, item.dump());
    TensorSpec tensor;
    tensor.name = required_string(item, "name", context);
    tensor.element_type = required_string(item, "type", context);
    if (!kElementTypes.contains(tensor.element_type)) {
      context.fail("tensor '{}' has unknown type '{}' (use float32, float16, int64, ...)",
                   tensor.name, tensor.element_type);
    }
    auto shape = item.find("shape");
    if (shape == item.end() || !shape->is_array()) {
      context.fail("tensor '{}' needs a 'shape' list (numbers are fixed axes, strings dynamic)",
                   tensor.name);
    }
    for (const auto& axis : *shape) {
      Dimension dimension;
      if (axis.is_number_integer() && axis.get<std::int64_t>() >= 0) {
        dimension.fixed = axis.get<std::int64_t>();
      } else if (axis.is_string() && !axis.get<std::string>().empty()) {
        dimension.symbol = axis.get<std::string>();
      } else {
        context.fail("tensor '{}' has axis {}: use a size >= 0 or a name for a dynamic axis",
                     tensor.name, axis.dump());
      }
      tensor.shape.push_back(std::move(dimension));
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

ModelEntry parse_entry(const json& item, std::size_t index, const std::string& source) {
  std::string id_for_messages = item.is_object() && item.contains("id") && item["id"].is_string()
                                    ? item["id"].get<std::string>()
                                    : "?";
  const Context context(source, index, id_for_messages);
  if (!item.is_object()) context.fail("must be an object, got {}", item.dump());
  for (const auto& [key, value] : item.items()) {
    if (!kEntryKeys.contains(key)) {
      context.fail("unknown field '{}' (known: {})", key, fmt::join(kEntryKeys, ", "));
    }
  }

  ModelEntry entry;
  entry.id = required_string(item, "id", context);
  if (!is_valid_id(entry.id)) {
    context.fail("id must use only a-z, 0-9, '-', '_' and '.'");
  }
  const std::string role = required_string(item, "role", context);
  const auto parsed_role = parse_role(role);
  if (!parsed_role) {
    std::vector<std::string_view> names;
    for (const auto& [value, name] : kRoleNames) names.push_back(name);
    context.fail("unknown role '{}' (known: {})", role, fmt::join(names, ", "));
  }
  entry.role = *parsed_role;

  entry.file = required_string(item, "file", context);
  const std::filesystem::path file_path(entry.file);
  if (file_path.is_absolute() || std::any_of(file_path.begin(), file_path.end(),
                                             [](const auto& part) { return part == ".."; })) {
    context.fail("file '{}' must be a relative path inside the models directory", entry.file);
  }

  const std::string format = required_string(item, "format", context);
  if (format == "onnx") {
    entry.format = FileFormat::kOnnx;
  } else if (format == "npz") {
    entry.format = FileFormat::kNpz;
  } else {
    context.fail("format must be \"onnx\" or \"npz\", got '{}'", format);
  }

  entry.description = required_string(item, "description", context);
  entry.license = optional_string(item, "license", context);
  entry.source = optional_string(item, "source", context);
  entry.note = optional_string(item, "note", context);
  entry.generator = optional_string(item, "generator", context);
  entry.is_default = optional_bool(item, "default", context);
  entry.optional = optional_bool(item, "optional", context);
  entry.gated = optional_bool(item, "gated", context);
  entry.speed_twin = optional_bool(item, "speed_twin", context);

  if (auto size = item.find("size"); size != item.end() && !size->is_null()) {
    if (!size->is_number_unsigned() || size->get<std::uint64_t>() == 0) {
      context.fail("size must be a positive number of bytes or null, got {}", size->dump());
    }
    entry.size = size->get<std::uint64_t>();
  }

  auto sha = item.find("sha256");
  if (sha == item.end()) {
    context.fail("field 'sha256' is missing (write null when no checksum is published)");
  }
  if (!sha->is_null()) {
    if (!sha->is_string() || !is_lower_hex_sha256(sha->get<std::string>())) {
      context.fail("sha256 must be 64 lower-case hex digits or null, got {}", sha->dump());
    }
    entry.sha256 = sha->get<std::string>();
  }

  auto urls = item.find("urls");
  if (urls == item.end() || !urls->is_array()) {
    context.fail("field 'urls' must be a list (empty for generated files)");
  }
  for (const auto& url : *urls) {
    if (!url.is_string() || !(url.get<std::string>().starts_with("https://") ||
                              url.get<std::string>().starts_with("http://"))) {
      context.fail("each url must be an http(s) address, got {}", url.dump());
    }
    entry.urls.push_back(url.get<std::string>());
  }

  if (entry.speed_twin) {
    if (entry.generator.empty()) context.fail("a speed twin needs the 'generator' that writes it");
    if (!entry.urls.empty()) context.fail("a speed twin is generated, so its 'urls' must be empty");
    if (entry.is_default) context.fail("a speed twin can never be a role's default");
  } else if (entry.urls.empty() && entry.generator.empty()) {
    context.fail(
        "no download urls: list at least one, or name the 'generator' that writes the file "
        "(or mark the entry \"speed_twin\")");
  }

  if (entry.format == FileFormat::kOnnx) {
    entry.inputs = parse_tensors(item, "inputs", context);
    entry.outputs = parse_tensors(item, "outputs", context);
    if (item.contains("arrays")) context.fail("'arrays' applies to npz files only");
  } else {
    if (item.contains("inputs") || item.contains("outputs")) {
      context.fail("'inputs'/'outputs' apply to ONNX files only");
    }
    auto arrays = item.find("arrays");
    if (arrays != item.end()) {
      if (!arrays->is_array()) context.fail("'arrays' must be a list of array names");
      for (const auto& name : *arrays) {
        if (!name.is_string()) context.fail("'arrays' must hold names, got {}", name.dump());
        entry.arrays.push_back(name.get<std::string>());
      }
    }
  }
  return entry;
}

}  // namespace

std::string_view role_name(Role role) {
  for (const auto& [value, name] : kRoleNames) {
    if (value == role) return name;
  }
  return "unknown";
}

std::optional<Role> parse_role(std::string_view name) {
  for (const auto& [value, role_text] : kRoleNames) {
    if (role_text == name) return value;
  }
  return std::nullopt;
}

std::vector<Role> all_roles() {
  std::vector<Role> roles;
  for (const auto& [value, name] : kRoleNames) roles.push_back(value);
  return roles;
}

std::string Dimension::to_string() const { return fixed ? std::to_string(*fixed) : symbol; }

std::string TensorSpec::shape_string() const {
  std::vector<std::string> parts;
  for (const auto& dimension : shape) parts.push_back(dimension.to_string());
  return fmt::format("[{}]", fmt::join(parts, ","));
}

Registry Registry::parse(const std::string& json_text, const std::string& source_name) {
  json document;
  try {
    document = json::parse(json_text);
  } catch (const json::exception& error) {  // syntax, or a number no double holds (1e5007)
    fail("{}: not valid JSON ({}); fix the manifest", source_name, error.what());
  }
  if (!document.is_object()) fail("{}: the manifest must be a JSON object", source_name);
  auto version = document.find("format_version");
  if (version == document.end() || !version->is_number_integer() || version->get<int>() != 1) {
    fail("{}: 'format_version' must be 1 (this parley reads manifest format 1)", source_name);
  }
  auto models = document.find("models");
  if (models == document.end() || !models->is_array() || models->empty()) {
    fail("{}: 'models' must be a non-empty list of model entries", source_name);
  }

  Registry registry;
  registry.source_name_ = source_name;
  std::set<std::string> ids;
  std::set<Role> roles_with_default;
  for (std::size_t index = 0; index < models->size(); ++index) {
    ModelEntry entry = parse_entry((*models)[index], index, source_name);
    if (!ids.insert(entry.id).second) {
      fail("{}: model {}: id '{}' is used twice; ids must be unique", source_name, index + 1,
           entry.id);
    }
    if (entry.is_default && !roles_with_default.insert(entry.role).second) {
      fail("{}: model {} ('{}'): role '{}' already has a default entry; mark only one", source_name,
           index + 1, entry.id, role_name(entry.role));
    }
    registry.entries_.push_back(std::move(entry));
  }
  return registry;
}

Registry Registry::load(const std::filesystem::path& manifest_path) {
  std::ifstream stream(manifest_path, std::ios::binary);
  if (!stream) {
    fail("{}: cannot read the model manifest; check the path", manifest_path.string());
  }
  std::ostringstream text;
  text << stream.rdbuf();
  return parse(text.str(), manifest_path.string());
}

const Registry& Registry::builtin() {
  static const Registry registry =
      parse(kBuiltinManifestJson, "models/manifest.json (built into parley)");
  return registry;
}

const ModelEntry* Registry::find(std::string_view id) const {
  for (const auto& entry : entries_) {
    if (entry.id == id) return &entry;
  }
  return nullptr;
}

const ModelEntry& Registry::get(std::string_view id) const {
  if (const ModelEntry* entry = find(id)) return *entry;
  std::vector<std::string_view> ids;
  for (const auto& entry : entries_) ids.push_back(entry.id);
  fail("no model '{}' in {}; known ids: {}", id, source_name_, fmt::join(ids, ", "));
}

std::vector<const ModelEntry*> Registry::for_role(Role role) const {
  std::vector<const ModelEntry*> matches;
  for (const auto& entry : entries_) {
    if (entry.role == role) matches.push_back(&entry);
  }
  // Stable: within each rank the manifest's order stands.
  std::stable_sort(matches.begin(), matches.end(), [](const ModelEntry* a, const ModelEntry* b) {
    auto rank = [](const ModelEntry* entry) {
      return entry->is_default ? 0 : entry->speed_twin ? 2 : 1;
    };
    return rank(a) < rank(b);
  });
  return matches;
}

const ModelEntry* Registry::default_for(Role role) const {
  for (const auto& entry : entries_) {
    if (entry.role == role && entry.is_default) return &entry;
  }
  return nullptr;
}

std::string Registry::describe() const {
  std::string text;
  for (Role role : all_roles()) {
    const auto entries = for_role(role);
    if (entries.empty()) continue;
    text += fmt::format("{}:\n", role_name(role));
    for (const ModelEntry* entry : entries) {
      std::vector<std::string> flags;
      if (entry->is_default) flags.emplace_back("default");
      if (entry->optional) flags.emplace_back("optional");
      if (entry->gated) flags.emplace_back("needs HF_TOKEN");
      if (entry->speed_twin) flags.emplace_back("SPEED TWIN, random weights");
      const std::string size =
          entry->size ? fmt::format("{:.1f} MB", static_cast<double>(*entry->size) / 1e6) : "?";
      text += fmt::format("  {:<28} {:<28} {:>8}  sha256 {}{}\n", entry->id, entry->file, size,
                          entry->sha256 ? entry->sha256->substr(0, 12) : "unknown",
                          flags.empty() ? "" : fmt::format("  ({})", fmt::join(flags, ", ")));
      text += fmt::format("      {}\n", entry->description);
      if (entry->format == FileFormat::kOnnx) {
        std::vector<std::string> inputs;
        std::vector<std::string> outputs;
        for (const auto& tensor : entry->inputs) {
          inputs.push_back(
              fmt::format("{} {}{}", tensor.name, tensor.element_type, tensor.shape_string()));
        }
        for (const auto& tensor : entry->outputs) {
          outputs.push_back(
              fmt::format("{} {}{}", tensor.name, tensor.element_type, tensor.shape_string()));
        }
        text += fmt::format("      in: {}  out: {}\n", fmt::join(inputs, ", "),
                            fmt::join(outputs, ", "));
      } else if (!entry->arrays.empty()) {
        text += fmt::format("      arrays: {}\n", fmt::join(entry->arrays, ", "));
      }
      if (!entry->urls.empty()) text += fmt::format("      from: {}\n", entry->urls.front());
      if (!entry->generator.empty())
        text += fmt::format("      generated by: {}\n", entry->generator);
    }
  }
  return text;
}

}  // namespace parley::models
