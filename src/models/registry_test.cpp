#include "models/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace parley::models {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json valid_entry() {
  return json{
      {"id", "seg"},
      {"role", "segmentation"},
      {"default", true},
      {"file", "seg.onnx"},
      {"format", "onnx"},
      {"description", "a segmentation model"},
      {"size", 10},
      {"sha256", std::string(64, 'a')},
      {"urls", {"https://example.org/seg.onnx"}},
      {"inputs", {{{"name", "waveform"}, {"type", "float32"}, {"shape", {1, 1, "samples"}}}}},
      {"outputs", {{{"name", "out"}, {"type", "float32"}, {"shape", {1, "frames", 7}}}}}};
}

std::string manifest_with(const json& entry) {
  return json{{"format_version", 1}, {"models", {entry}}}.dump();
}

// The message Registry::parse throws for `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
  try {
    Registry::parse(text, "test-manifest.json");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string parse_error_with(const char* key, const json& value) {
  json entry = valid_entry();
  entry[key] = value;
  return parse_error(manifest_with(entry));
}

TEST(Registry, BuiltinManifestHasADefaultForEveryRole) {
  const Registry& registry = Registry::builtin();
  for (Role role : all_roles()) {
    const ModelEntry* entry = registry.default_for(role);
    ASSERT_NE(entry, nullptr) << role_name(role);
    EXPECT_FALSE(entry->urls.empty()) << entry->id;
    EXPECT_FALSE(entry->speed_twin) << entry->id;
  }
  EXPECT_TRUE(registry.default_for(Role::kVad)->optional);
}

TEST(Registry, BuiltinManifestRecordsTheKnownChecksums) {
  const Registry& registry = Registry::builtin();
  const ModelEntry& fp32 = registry.get("segmentation-3.0");
  EXPECT_EQ(fp32.size, 5986908u);
  EXPECT_EQ(fp32.sha256, "057ee564753071c0b09b5b611648b50ac188d50846bff5f01e9f7bbf1591ea25");
  EXPECT_EQ(fp32.outputs.at(0).shape.at(2).fixed, 7);
  const ModelEntry& fp16 = registry.get("segmentation-3.0-fp16");
  EXPECT_EQ(fp16.role, Role::kSegmentation);
  EXPECT_EQ(fp16.inputs.at(0).name, "waveform");
  EXPECT_EQ(fp16.inputs.at(0).shape.at(0).fixed, 1);
  const ModelEntry& plda = registry.get("community-1-plda");
  EXPECT_EQ(plda.format, FileFormat::kNpz);
  EXPECT_EQ(plda.file, "plda/plda.npz");
  EXPECT_TRUE(plda.gated);
}

TEST(Registry, SpeedTwinIsAnEmbeddingVariantRankedLast) {
  const Registry& registry = Registry::builtin();
  const auto embeddings = registry.for_role(Role::kEmbedding);
  ASSERT_EQ(embeddings.size(), 2u);
  EXPECT_EQ(embeddings.front()->id, "wespeaker-resnet34-lm");
  EXPECT_TRUE(embeddings.back()->speed_twin);
  EXPECT_EQ(embeddings.back()->file, "resnet34-speed-twin.onnx");
  EXPECT_EQ(embeddings.back()->generator, "tools/make_speed_twin.py");
  EXPECT_TRUE(embeddings.back()->urls.empty());
  EXPECT_TRUE(embeddings.back()->sha256.has_value());
}

TEST(Registry, BuiltinCopyMatchesTheManifestInTheSourceTree) {
  const Registry on_disk =
      Registry::load(std::filesystem::path(PARLEY_SOURCE_DIR) / "models" / "manifest.json");
  const Registry& builtin = Registry::builtin();
  ASSERT_EQ(on_disk.entries().size(), builtin.entries().size());
  for (std::size_t index = 0; index < builtin.entries().size(); ++index) {
    EXPECT_EQ(on_disk.entries()[index].id, builtin.entries()[index].id);
    EXPECT_EQ(on_disk.entries()[index].sha256, builtin.entries()[index].sha256);
  }
}

TEST(Registry, DescribeListsEveryEntryAndFlagsTheTwin) {
  const std::string text = Registry::builtin().describe();
  for (const auto& entry : Registry::builtin().entries()) {
    EXPECT_THAT(text, HasSubstr(entry.id));
  }
  EXPECT_THAT(text, HasSubstr("SPEED TWIN, random weights"));
  EXPECT_THAT(text, HasSubstr("in: feats float32[B,T,80]  out: embs float32[B,256]"));
}

TEST(Registry, AcceptsAValidEntryAndANullChecksum) {
  EXPECT_EQ(parse_error(manifest_with(valid_entry())), "");
  json entry = valid_entry();
  entry["sha256"] = nullptr;
  const Registry registry = Registry::parse(manifest_with(entry), "test");
  EXPECT_FALSE(registry.get("seg").sha256.has_value());
}

TEST(Registry, RejectsBrokenManifestsWithClearMessages) {
  EXPECT_THAT(parse_error("{\"format_version\": 1, \"models\": ["),
              HasSubstr("test-manifest.json: not valid JSON"));
  EXPECT_THAT(parse_error("{\"format_version\": 2, \"models\": []}"),
              HasSubstr("'format_version' must be 1"));
  EXPECT_THAT(parse_error("{\"format_version\": 1, \"models\": []}"),
              HasSubstr("'models' must be a non-empty list"));
  EXPECT_THAT(parse_error_with("sha256", "ABC"),
              HasSubstr("model 1 ('seg'): sha256 must be 64 lower-case hex digits or null"));
  EXPECT_THAT(parse_error_with("role", "segmenter"),
              HasSubstr("unknown role 'segmenter' (known: segmentation, embedding, plda, "
                        "xvec_transform, vad)"));
  EXPECT_THAT(parse_error_with("sha265", "x"), HasSubstr("unknown field 'sha265'"));
  EXPECT_THAT(parse_error_with("file", "/etc/passwd"),
              HasSubstr("must be a relative path inside the models directory"));
  EXPECT_THAT(parse_error_with("file", "../outside.onnx"),
              HasSubstr("must be a relative path inside the models directory"));
  EXPECT_THAT(parse_error_with("urls", json::array({"ftp://x"})),
              HasSubstr("each url must be an http(s) address"));
  EXPECT_THAT(parse_error_with("urls", json::array()), HasSubstr("no download urls"));
  EXPECT_THAT(parse_error_with("size", -3), HasSubstr("size must be a positive number"));
  EXPECT_THAT(parse_error_with("inputs", json::array()),
              HasSubstr("field 'inputs' must be a non-empty list"));
  EXPECT_THAT(parse_error_with("outputs",
                               json::array({{{"name", "o"}, {"type", "float33"}, {"shape", {1}}}})),
              HasSubstr("tensor 'o' has unknown type 'float33'"));
  EXPECT_THAT(parse_error_with("speed_twin", true),
              HasSubstr("a speed twin needs the 'generator'"));
  EXPECT_THAT(
      parse_error(json{{"format_version", 1}, {"models", {valid_entry(), valid_entry()}}}.dump()),
      HasSubstr("id 'seg' is used twice"));
  json second = valid_entry();
  second["id"] = "seg2";
  EXPECT_THAT(parse_error(json{{"format_version", 1}, {"models", {valid_entry(), second}}}.dump()),
              HasSubstr("role 'segmentation' already has a default entry"));
  json missing_sha = valid_entry();
  missing_sha.erase("sha256");
  EXPECT_THAT(parse_error(manifest_with(missing_sha)),
              HasSubstr("field 'sha256' is missing (write null"));
  EXPECT_THAT(parse_error(manifest_with(valid_entry())), ::testing::IsEmpty());
}

TEST(Registry, LoadNamesAMissingFile) {
  try {
    Registry::load("/nonexistent/manifest.json");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("/nonexistent/manifest.json: cannot read"));
  }
}

TEST(Registry, GetNamesTheKnownIds) {
  try {
    Registry::builtin().get("nope");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("no model 'nope'"));
    EXPECT_THAT(error.what(), HasSubstr("segmentation-3.0-fp16"));
  }
}

}  // namespace
}  // namespace parley::models

namespace parley::models {
namespace {

// Found by fuzz_model_manifest: a number no double holds is a manifest error, not a crash.
TEST(RegistryNumbers, AnOverflowingNumberIsAManifestError) {
  EXPECT_THROW(Registry::parse("{\"format_version\": 1e5007}", "m.json"), Error);
}

}  // namespace
}  // namespace parley::models
