#include "runtime/provider.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"

namespace parley::runtime {
namespace {

std::string error_of(auto&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Provider, AliasesCanonicalise) {
  EXPECT_EQ(parse_provider("amdgpu"), ProviderId::kMigraphx);
  EXPECT_EQ(parse_provider("MIGraphX"), ProviderId::kMigraphx);
  EXPECT_EQ(parse_provider("MIGraphXExecutionProvider"), ProviderId::kMigraphx);
  EXPECT_EQ(parse_provider(" trt "), ProviderId::kTensorRt);
  EXPECT_EQ(parse_provider("directml"), ProviderId::kDml);
  EXPECT_EQ(provider_name(parse_provider("amdgpu")), "migraphx");
  EXPECT_EQ(ProviderChoice::parse("AMDGPU").to_string(), "migraphx");
  EXPECT_EQ(ProviderChoice::parse("auto").to_string(), "auto");
  EXPECT_TRUE(ProviderChoice::parse("Auto").automatic);
}

TEST(Provider, UnknownNameListsValidNames) {
  const auto message = error_of([] { ProviderChoice::parse("vulkan"); });
  EXPECT_NE(message.find("'vulkan'"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown execution provider"), std::string::npos) << message;
  for (const auto& entry : all_provider_traits()) {
    EXPECT_NE(message.find(std::string(entry.name)), std::string::npos) << entry.name;
  }
  EXPECT_NE(message.find("migraphx (alias amdgpu)"), std::string::npos) << message;
  EXPECT_NE(error_of([] { parse_provider(""); }).find("valid names"), std::string::npos);
}

TEST(Provider, TableIsConsistent) {
  std::set<std::string_view> names;
  for (const auto& entry : all_provider_traits()) {
    EXPECT_TRUE(names.insert(entry.name).second) << "duplicate " << entry.name;
    for (auto alias : entry.aliases) EXPECT_TRUE(names.insert(alias).second) << alias;
    EXPECT_EQ(&traits(entry.id), &entry);
    EXPECT_EQ(provider_from_ort_name(entry.ort_name), entry.id);
    EXPECT_FALSE(entry.platforms.empty()) << entry.name;
    if (entry.accelerator) {
      EXPECT_FALSE(entry.install_hint.empty()) << entry.name;
    }
    if (entry.graph_capture) {
      EXPECT_FALSE(entry.graph_capture_option.empty()) << entry.name;
    }
  }
  EXPECT_EQ(all_provider_traits().front().id, ProviderId::kCpu);
}

TEST(Provider, TraitsDriveShapeHandling) {
  EXPECT_TRUE(traits(ProviderId::kMigraphx).static_shapes);
  EXPECT_EQ(traits(ProviderId::kMigraphx).cache_kind, CompiledCacheKind::kMigraphxProgram);
  EXPECT_TRUE(traits(ProviderId::kTensorRt).static_shapes);
  EXPECT_EQ(traits(ProviderId::kTensorRt).cache_kind, CompiledCacheKind::kTensorRtEngine);
  EXPECT_EQ(traits(ProviderId::kCoreMl).cache_kind, CompiledCacheKind::kCoreMlModel);
  EXPECT_FALSE(traits(ProviderId::kCuda).static_shapes);
  EXPECT_TRUE(traits(ProviderId::kCuda).graph_capture);
  EXPECT_FALSE(traits(ProviderId::kCpu).accelerator);
}

TEST(Provider, AutoCandidatesSkipExplicitOnlyProviders) {
  const auto candidates = auto_candidates();
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front(), ProviderId::kCuda);
  for (auto id : candidates) {
    EXPECT_NE(id, ProviderId::kCpu);
    EXPECT_NE(id, ProviderId::kTensorRt);
  }
}

TEST(Provider, OptionsMergeOverDefaults) {
  auto options = effective_options(ProviderId::kMigraphx, {{"device_id", "1"}, {"x", "y"}});
  EXPECT_EQ(options.at("device_id"), "1");
  EXPECT_EQ(options.at("migraphx_arena_extend_strategy"), "kSameAsRequested");
  EXPECT_EQ(options.at("x"), "y");
  EXPECT_EQ(effective_options(ProviderId::kMigraphx, {}).at("device_id"), "0");
  EXPECT_EQ(effective_options(ProviderId::kCuda, {}).at("arena_extend_strategy"),
            "kSameAsRequested");
  EXPECT_EQ(effective_options(ProviderId::kCuda, {{"arena_extend_strategy", "kNextPowerOfTwo"}})
                .at("arena_extend_strategy"),
            "kNextPowerOfTwo");
}

TEST(Provider, RepeatedProviderOptionsLaterKeyWins) {
  EXPECT_EQ(parse_provider_options({"device_id=1", "use_tf32 = 0", "device_id=2"}),
            (ProviderOptions{{"device_id", "2"}, {"use_tf32", "0"}}));
  EXPECT_TRUE(parse_provider_options({}).empty());
  EXPECT_THROW(parse_provider_options({"device_id=1", "broken"}), Error);
}

TEST(Provider, ProviderOptionParsing) {
  EXPECT_EQ(parse_provider_option("device_id=1"),
            std::make_pair(std::string("device_id"), std::string("1")));
  EXPECT_EQ(parse_provider_option("a=b=c").second, "b=c");
  EXPECT_NE(error_of([] { parse_provider_option("device_id"); }).find("key=value"),
            std::string::npos);
  EXPECT_THROW(parse_provider_option("=1"), Error);
  EXPECT_THROW(parse_provider_option("k="), Error);
}

}  // namespace
}  // namespace parley::runtime
