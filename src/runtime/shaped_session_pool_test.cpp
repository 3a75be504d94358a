#include "runtime/shaped_session_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/error.h"

namespace parley::runtime {
namespace {
namespace fs = std::filesystem;

const fs::path kAffine = fs::path(PARLEY_RUNTIME_TESTDATA) / "affine_batch.onnx";

class ShapedSessionPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("parley_shaped_session_pool_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Counts the sessions created; they run on the CPU with the shapes they were asked for.
  SessionFactory counting_factory() {
    return [this](const fs::path& model, const SessionConfig& config) {
      ++created_;
      last_overrides_ = config.dimension_overrides;
      return std::make_unique<OnnxSession>(model, config);
    };
  }

  static std::vector<InputShape> batch_of(std::int64_t batch) { return {{"x", {batch, 3}}}; }

  fs::path root_;
  int created_ = 0;
  std::map<std::string, std::int64_t> last_overrides_;
};

TEST_F(ShapedSessionPoolTest, OpensOneSessionPerModelAndShape) {
  ShapedSessionPool pool(root_, SessionConfig{}, counting_factory());
  const ShapedModel affine{kAffine, "digest-a", "affine"};
  OnnxSession& four = pool.session_for(affine, batch_of(4), {{"batch", 4}});
  EXPECT_EQ(created_, 1);
  EXPECT_EQ(last_overrides_, (std::map<std::string, std::int64_t>{{"batch", 4}}));
  EXPECT_EQ(&pool.session_for(affine, batch_of(4), {{"batch", 4}}), &four);
  EXPECT_EQ(created_, 1) << "the same shape reuses its session";
  OnnxSession& two = pool.session_for(affine, batch_of(2), {{"batch", 2}});
  EXPECT_NE(&two, &four);
  EXPECT_EQ(created_, 2);
  // Another model (another digest) at a shape already open gets a session of its own.
  const ShapedModel other{kAffine, "digest-b", "other"};
  EXPECT_NE(&pool.session_for(other, batch_of(4), {{"batch", 4}}), &four);
  EXPECT_EQ(created_, 3);
  EXPECT_EQ(pool.opened_shapes(),
            (std::vector<std::vector<InputShape>>{batch_of(4), batch_of(2), batch_of(4)}));
}

TEST_F(ShapedSessionPoolTest, AFailedOpenIsRetriedNextTime) {
  bool refuse = true;
  ShapedSessionPool pool(root_, SessionConfig{},
                         [&](const fs::path& model, const SessionConfig& config) {
                           if (refuse) throw Error("provider refused");
                           return std::make_unique<OnnxSession>(model, config);
                         });
  const ShapedModel affine{kAffine, "digest-a", "affine"};
  EXPECT_THROW(pool.session_for(affine, batch_of(4), {{"batch", 4}}), Error);
  EXPECT_TRUE(pool.opened_shapes().empty());
  refuse = false;
  EXPECT_NO_THROW(pool.session_for(affine, batch_of(4), {{"batch", 4}}));
  EXPECT_EQ(pool.opened_shapes().size(), 1u);
}

TEST(CompileCacheRoot, EmptyMeansTheDefault) {
  EXPECT_EQ(CompileCache::root_or_default(""), CompileCache::default_root());
  EXPECT_EQ(CompileCache::root_or_default("/some/where"), fs::path("/some/where"));
}

}  // namespace
}  // namespace parley::runtime
