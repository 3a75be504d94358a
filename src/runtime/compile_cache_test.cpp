#include "runtime/compile_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace parley::runtime {
namespace {
namespace fs = std::filesystem;

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("parley_compile_cache_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  static CompileKey key(std::string inputs = "waveform:1x1x160000") {
    return make_compile_key("ab12", "segmentation", parse_shapes(inputs), ProviderId::kMigraphx,
                            {{"device_id", "0"}}, {"1.29.0", "libmigraphx.so 123", "gfx942 6.4"});
  }

  // Builds an entry whose "provider" wrote the given files.
  static EntryInfo build(CompileCache& cache, const CompileKey& key,
                         std::vector<std::pair<std::string, std::string>> files) {
    auto build = cache.begin_build(key);
    for (const auto& [name, content] : files) {
      std::ofstream(build.artifacts_dir() / name, std::ios::binary) << content;
    }
    return build.commit(1.5);
  }

  fs::path root_;
};

TEST_F(CompileCacheTest, KeyChangesWithEachIngredient) {
  const CompileKey base = key();
  std::vector<CompileKey> variants(7, base);
  variants[0].model_sha256 = "cd34";
  variants[1].input_shapes = parse_shapes("waveform:2x1x160000");
  variants[2].provider = ProviderId::kTensorRt;
  variants[3].options["migraphx_fp16_enable"] = "1";
  variants[4].environment.ort_version = "1.30.0";
  variants[5].environment.provider_library = "libmigraphx.so 124";
  variants[6].environment.device = "gfx1100 6.4";
  for (const auto& variant : variants) {
    EXPECT_NE(variant.digest(), base.digest()) << variant.canonical();
  }
  // The display name and the cache location are not part of what was compiled.
  CompileKey renamed = base;
  renamed.model_name = "other";
  EXPECT_EQ(renamed.digest(), base.digest());
  const auto with_cache_dir = make_compile_key(
      "ab12", "segmentation", parse_shapes("waveform:1x1x160000"), ProviderId::kMigraphx,
      {{"device_id", "0"}, {"migraphx_model_cache_dir", "/somewhere"}},
      {"1.29.0", "libmigraphx.so 123", "gfx942 6.4"});
  EXPECT_EQ(with_cache_dir.digest(), base.digest());
  EXPECT_EQ(base.digest().size(), 64u);
}

TEST_F(CompileCacheTest, CacheOptionsPerProvider) {
  const fs::path dir = "/c/e/artifacts";
  EXPECT_EQ(cache_options(ProviderId::kMigraphx, dir, "1.29.0"),
            (ProviderOptions{{"migraphx_model_cache_dir", "/c/e/artifacts"}}));
  const auto old = cache_options(ProviderId::kMigraphx, dir, "1.22.1");
  EXPECT_EQ(old.at("migraphx_save_compiled_model"), "1");
  EXPECT_EQ(old.at("migraphx_load_compiled_path"), "/c/e/artifacts/model.mxr");
  const auto trt = cache_options(ProviderId::kTensorRt, dir, "1.29.0");
  EXPECT_EQ(trt.at("trt_engine_cache_enable"), "1");
  EXPECT_EQ(trt.at("trt_engine_cache_path"), "/c/e/artifacts");
  EXPECT_EQ(trt.at("trt_timing_cache_enable"), "1");
  EXPECT_EQ(cache_options(ProviderId::kCoreMl, dir, "1.29.0").at("ModelCacheDirectory"),
            "/c/e/artifacts");
  EXPECT_TRUE(cache_options(ProviderId::kCpu, dir, "1.29.0").empty());
  EXPECT_TRUE(cache_options(ProviderId::kCuda, dir, "1.29.0").empty());
  for (const auto& entry : all_provider_traits()) {
    for (const auto& [option, value] : cache_options(entry.id, dir, "1.22.0")) {
      const auto keys = cache_option_keys(entry.id);
      EXPECT_NE(std::find(keys.begin(), keys.end(), option), keys.end()) << option;
    }
  }
}

TEST_F(CompileCacheTest, BuildCommitThenHit) {
  CompileCache cache(root_);
  const auto k = key();
  auto miss = cache.lookup(k);
  EXPECT_FALSE(miss.hit);
  EXPECT_TRUE(miss.note.empty());
  const auto entry = build(cache, k, {{"program.mxr", "compiled bytes"}});
  EXPECT_EQ(entry.state, EntryState::kValid) << entry.reason;
  EXPECT_EQ(entry.dir, cache.entry_dir(k));
  ASSERT_EQ(entry.files.size(), 1u);
  EXPECT_EQ(entry.files[0].path, "artifacts/program.mxr");
  EXPECT_EQ(entry.files[0].size, 14u);
  EXPECT_EQ(entry.inputs, "waveform:1x1x160000");
  EXPECT_DOUBLE_EQ(entry.build_seconds, 1.5);
  auto hit = cache.lookup(k);
  EXPECT_TRUE(hit.hit);
  EXPECT_TRUE(fs::exists(hit.artifacts_dir / "program.mxr"));
  // Another shape is another entry.
  EXPECT_FALSE(cache.lookup(key("waveform:2x1x160000")).hit);
  // No staging folders are left behind.
  for (const auto& item : fs::directory_iterator(root_ / "migraphx")) {
    EXPECT_EQ(item.path().filename().string().find(".build-"), std::string::npos);
  }
}

TEST_F(CompileCacheTest, BuildThatWroteNothingIsNotPublished) {
  CompileCache cache(root_);
  {
    auto empty = cache.begin_build(key());
    EXPECT_THROW(empty.commit(0.1), Error);
  }
  { auto abandoned = cache.begin_build(key()); }
  EXPECT_TRUE(cache.list(Verification::kSizes).empty());
  EXPECT_FALSE(cache.lookup(key()).hit);
}

TEST_F(CompileCacheTest, TruncatedFileIsDetectedAndRebuilt) {
  CompileCache cache(root_);
  const auto k = key();
  build(cache, k, {{"program.mxr", "compiled bytes"}});
  fs::resize_file(cache.entry_dir(k) / "artifacts/program.mxr", 4);
  const auto lookup = cache.lookup(k);
  EXPECT_FALSE(lookup.hit);
  EXPECT_NE(lookup.note.find("corrupt"), std::string::npos) << lookup.note;
  EXPECT_NE(lookup.note.find("truncated"), std::string::npos) << lookup.note;
  EXPECT_FALSE(fs::exists(cache.entry_dir(k)));
  build(cache, k, {{"program.mxr", "compiled bytes"}});
  EXPECT_TRUE(cache.lookup(k).hit);
}

TEST_F(CompileCacheTest, BadManifestIsDetected) {
  CompileCache cache(root_);
  const auto k = key();
  build(cache, k, {{"program.mxr", "compiled bytes"}});
  std::ofstream(cache.entry_dir(k) / "manifest.json", std::ios::trunc) << "{\"format\": 1, ";
  const auto info = inspect_entry(cache.entry_dir(k), Verification::kSizes);
  EXPECT_EQ(info.state, EntryState::kCorrupt);
  EXPECT_NE(info.reason.find("unreadable"), std::string::npos) << info.reason;
  const auto lookup = cache.lookup(k);
  EXPECT_FALSE(lookup.hit);
  EXPECT_NE(lookup.note.find("manifest"), std::string::npos) << lookup.note;

  // Without its manifest the folder is not provably parley's: it is reported, never removed.
  build(cache, k, {{"program.mxr", "compiled bytes"}});
  fs::remove(cache.entry_dir(k) / "manifest.json");
  try {
    cache.lookup(k);
    ADD_FAILURE() << "a folder without a manifest was used or removed";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("remove it by hand"), std::string::npos);
  }
  EXPECT_TRUE(fs::exists(cache.entry_dir(k) / "artifacts/program.mxr"));
}

// Numbers that are not counts (a fuzz finding: 1.7e82 as created_unix was converted to a time
// with undefined behaviour) make the entry corrupt, not a wrapped or invented value.
TEST_F(CompileCacheTest, ManifestNumbersThatAreNotCountsAreCorrupt) {
  CompileCache cache(root_);
  const auto k = key();
  const fs::path manifest_path = cache.entry_dir(k) / "manifest.json";
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"/created_unix", 1.75556e82}, {"/created_unix", -5},   {"/format", 4294967297.0},
      {"/files/0/size", -1},         {"/files/0/size", 14.5}, {"/format", "1"}};
  for (const auto& [pointer, value] : bad) {
    build(cache, k, {{"program.mxr", "compiled bytes"}});
    nlohmann::json manifest = nlohmann::json::parse(std::ifstream(manifest_path));
    manifest[nlohmann::json::json_pointer(pointer)] = value;
    std::ofstream(manifest_path, std::ios::trunc) << manifest.dump();
    const auto info = inspect_entry(cache.entry_dir(k), Verification::kSizes);
    EXPECT_EQ(info.state, EntryState::kCorrupt) << pointer << " = " << value.dump();
    EXPECT_NE(info.reason.find("unreadable"), std::string::npos) << info.reason;
    fs::remove_all(cache.entry_dir(k));
  }
}

TEST_F(CompileCacheTest, HashMismatchIsDetectedWhenHashing) {
  CompileCache cache(root_);
  const auto k = key();
  build(cache, k, {{"program.mxr", "compiled bytes"}});
  std::ofstream(cache.entry_dir(k) / "artifacts/program.mxr", std::ios::trunc) << "COMPILED BYTES";
  EXPECT_EQ(inspect_entry(cache.entry_dir(k), Verification::kSizes).state, EntryState::kValid);
  const auto hashed = inspect_entry(cache.entry_dir(k), Verification::kHashes);
  EXPECT_EQ(hashed.state, EntryState::kCorrupt);
  EXPECT_NE(hashed.reason.find("sha256"), std::string::npos);
  EXPECT_FALSE(cache.lookup(k, Verification::kHashes).hit);
}

// `parley cache verify` hashes and `verify --fix` prunes: an entry whose bytes changed but not
// its size must be removed by a prune that hashes (a size-only prune kept it, and the advice to
// run --fix was false).
TEST_F(CompileCacheTest, PruneThatHashesRemovesWhatVerifyFinds) {
  CompileCache cache(root_);
  const auto k = key();
  build(cache, k, {{"program.mxr", "compiled bytes"}});
  std::ofstream(cache.entry_dir(k) / "artifacts/program.mxr", std::ios::trunc) << "COMPILED BYTES";
  EXPECT_TRUE(cache.prune({}, std::time(nullptr)).removed.empty());  // sizes alone see no fault
  PruneOptions hashing;
  hashing.verification = Verification::kHashes;
  const auto report = cache.prune(hashing, std::time(nullptr));
  ASSERT_EQ(report.removed.size(), 1u);
  EXPECT_NE(report.reasons[0].find("sha256"), std::string::npos) << report.reasons[0];
  EXPECT_TRUE(cache.list(Verification::kHashes).empty());
}

TEST_F(CompileCacheTest, EntriesOfAnotherEnvironmentAreStale) {
  CompileCache cache(root_);
  build(cache, key(), {{"program.mxr", "compiled bytes"}});
  CurrentEnvironments current = {{"migraphx", {"1.30.0", "libmigraphx.so 123", "gfx942 6.4"}}};
  auto entries = cache.list(Verification::kSizes, &current);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, EntryState::kStale);
  EXPECT_NE(entries[0].reason.find("ONNX Runtime 1.29.0, now 1.30.0"), std::string::npos);
  current["migraphx"] = key().environment;
  EXPECT_EQ(cache.list(Verification::kHashes, &current)[0].state, EntryState::kValid);
  // Pruning removes stale entries.
  current["migraphx"].device = "gfx1100 6.4";
  const auto report = cache.prune({}, std::time(nullptr), &current);
  ASSERT_EQ(report.removed.size(), 1u);
  EXPECT_NE(report.reasons[0].find("stale"), std::string::npos);
  EXPECT_TRUE(cache.list(Verification::kSizes).empty());
}

TEST_F(CompileCacheTest, PruneByAgeAndSize) {
  CompileCache cache(root_);
  const auto now = std::time(nullptr);
  const std::vector<std::string> shapes = {"w:1x1", "w:2x1", "w:4x1"};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto k = key(shapes[i]);
    build(cache, k, {{"program.mxr", std::string(1000, 'x')}});
    // Entry i was last used i*10 days ago.
    fs::last_write_time(cache.entry_dir(k) / "last_used",
                        fs::file_time_type::clock::now() - std::chrono::hours(24 * 10 * i));
  }
  PruneOptions dry;
  dry.unused_for = std::chrono::hours(24 * 15);
  dry.dry_run = true;
  auto report = cache.prune(dry, now);
  ASSERT_EQ(report.removed.size(), 1u);
  EXPECT_EQ(report.removed[0].inputs, "w:4x1");
  EXPECT_EQ(cache.list(Verification::kSizes).size(), 3u);  // dry run removed nothing

  PruneOptions by_size;
  by_size.max_total_bytes = 2500;
  report = cache.prune(by_size, now);
  ASSERT_EQ(report.removed.size(), 2u);          // each entry is > 1000 bytes with its manifest
  EXPECT_EQ(report.removed[0].inputs, "w:4x1");  // least recently used first
  EXPECT_EQ(report.removed[1].inputs, "w:2x1");
  EXPECT_LE(report.bytes_kept, 2500u);
  const auto left = cache.list(Verification::kSizes);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].inputs, "w:1x1");
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// `parley cache prune --cache-dir ~` must not touch a user's folders: without the marker the
// cache refuses, and nothing is removed.
TEST_F(CompileCacheTest, PruneRefusesAFolderThatIsNotACache) {
  write_file(root_ / "Documents/thesis/chapter1.tex", "years of work");
  write_file(root_ / "Documents/notes.txt", "notes");
  write_file(root_ / "migraphx/0123456789abcdef0123456789abcdef/manifest.json", "{}");
  CompileCache cache(root_);
  try {
    cache.prune({}, std::time(nullptr));
    ADD_FAILURE() << "pruned a folder that is not a cache";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not a parley compiled-graph cache"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(cache.begin_build(key()), Error);  // and no cache is made among the user's files
  EXPECT_TRUE(cache.list(Verification::kSizes).empty());
  EXPECT_TRUE(fs::exists(root_ / "Documents/thesis/chapter1.tex"));
  EXPECT_TRUE(fs::exists(root_ / "Documents/notes.txt"));
  EXPECT_TRUE(fs::exists(root_ / "migraphx/0123456789abcdef0123456789abcdef/manifest.json"));
  EXPECT_FALSE(fs::exists(root_ / ".parley-compile-cache"));
}

// In a real cache, stale entries go; links (to a provider folder or to an entry) are never
// followed, and a folder without the cache's manifest stays.
TEST_F(CompileCacheTest, PruneRemovesOnlyWhatTheCacheWrote) {
  CompileCache cache(root_);
  build(cache, key("w:1x1"), {{"program.mxr", "a"}});
  build(cache, key("w:2x1"), {{"program.mxr", "b"}});
  EXPECT_TRUE(fs::exists(root_ / ".parley-compile-cache"));
  const fs::path outside = root_.string() + "_outside";
  fs::remove_all(outside);
  const std::string digest_name = "fedcba9876543210fedcba9876543210";
  write_file(outside / "provider/Documents/thesis/chapter1.tex", "years of work");
  write_file(outside / "provider" / digest_name / "manifest.json", "{}");
  write_file(outside / "entry/manifest.json", "{}");
  write_file(outside / "entry/artifacts/keep.bin", "mine");
  fs::create_directory_symlink(outside / "provider", root_ / "tensorrt");
  fs::create_directory_symlink(outside / "entry", root_ / "migraphx" / digest_name);
  write_file(root_ / "migraphx/00000000000000000000000000000000/artifacts/x.bin", "no manifest");

  CurrentEnvironments current = {{"migraphx", {"2.0.0", "libmigraphx.so 123", "gfx942 6.4"}}};
  const auto report = cache.prune({}, std::time(nullptr), &current);
  EXPECT_EQ(report.removed.size(), 2u);  // both real entries are stale
  ASSERT_EQ(report.left_alone.size(), 1u);
  EXPECT_EQ(report.left_alone[0].dir.filename(), "00000000000000000000000000000000");
  EXPECT_TRUE(fs::exists(outside / "provider/Documents/thesis/chapter1.tex"));
  EXPECT_TRUE(fs::exists(outside / "provider" / digest_name / "manifest.json"));
  EXPECT_TRUE(fs::exists(outside / "entry/artifacts/keep.bin"));
  EXPECT_TRUE(fs::is_symlink(root_ / "tensorrt"));
  EXPECT_TRUE(fs::exists(root_ / "migraphx/00000000000000000000000000000000/artifacts/x.bin"));
  EXPECT_FALSE(cache.invalidate(key("w:1x1")));
  fs::remove_all(outside);
}

TEST_F(CompileCacheTest, AnOlderCacheWithoutTheMarkerIsAdopted) {
  {
    CompileCache cache(root_);
    build(cache, key(), {{"program.mxr", "a"}});
  }
  fs::remove(root_ / ".parley-compile-cache");
  CompileCache cache(root_);
  EXPECT_NO_THROW(cache.require_marked());
  EXPECT_TRUE(fs::exists(root_ / ".parley-compile-cache"));
  EXPECT_EQ(cache.list(Verification::kSizes).size(), 1u);
}

TEST_F(CompileCacheTest, DefaultRootFollowsEnvironment) {
  const char* saved_explicit = std::getenv("PARLEY_COMPILE_CACHE");
  const char* saved_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string explicit_copy = saved_explicit ? saved_explicit : "";
  const std::string xdg_copy = saved_xdg ? saved_xdg : "";
  ::unsetenv("PARLEY_COMPILE_CACHE");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(CompileCache::default_root(), fs::path("/xdg/parley/compiled"));
  ::setenv("PARLEY_COMPILE_CACHE", "/explicit", 1);
  EXPECT_EQ(CompileCache::default_root(), fs::path("/explicit"));
  if (saved_explicit) {
    ::setenv("PARLEY_COMPILE_CACHE", explicit_copy.c_str(), 1);
  } else {
    ::unsetenv("PARLEY_COMPILE_CACHE");
  }
  if (saved_xdg) {
    ::setenv("XDG_CACHE_HOME", xdg_copy.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
}

}  // namespace
}  // namespace parley::runtime
