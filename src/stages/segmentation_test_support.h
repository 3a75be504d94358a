#pragma once
// Test-only helpers for the segmentation tests: a small WAV reader, a segmentation feed over
// pyannote's chunking (sliding_window), speaker decoding (powerset), frame agreement under speaker
// permutation, and the derived models made by tools/*.py (folded, dynamic batch, fp32 upcast).
#include <gtest/gtest.h>
#include <sndfile.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "core/sample_rate.h"
#include "frames/powerset.h"
#include "frames/sliding_window.h"
#include "stages/segmentation.h"
#include "stages/segmentation_feed.h"

namespace parley::stages::testing {

// pyannote's chunking of `audio` (10 s every 1 s, last chunk zero-padded).
inline frames::ChunkPlan chunk_plan(const std::vector<float>& audio) {
  return frames::plan_chunks(static_cast<std::int64_t>(audio.size()), kSampleRate);
}

// Chunks of `audio` for a segmentation run, their scores kept: with `chunk_positions`, model
// chunk i is pyannote chunk chunk_positions[i] (a subset, to keep tests short), else chunk i.
// With `origins`, each chunk's place in `audio` goes with it (the first convolution is shared).
class ChunkFeed : public ScoreKeepingFeed {
 public:
  explicit ChunkFeed(const std::vector<float>& audio, std::vector<std::size_t> chunk_positions = {},
                     bool origins = false)
      : audio_(audio),
        plan_(chunk_plan(audio)),
        positions_(std::move(chunk_positions)),
        origins_(origins) {}

  // The chunks it feeds: the positions given, else every chunk of the recording.
  std::size_t chunk_count() const {
    return positions_.empty() ? static_cast<std::size_t>(plan_.num_chunks()) : positions_.size();
  }
  void read_chunk(std::size_t chunk, std::span<float> samples) override {
    frames::copy_chunk(audio_, plan_, position(chunk), samples);
  }
  std::optional<ChunkOrigin> origin(std::size_t chunk) override {
    if (!origins_) return std::nullopt;
    return ChunkOrigin{0, audio_, plan_.chunk_offset(position(chunk))};
  }

 private:
  std::int64_t position(std::size_t chunk) const {
    return static_cast<std::int64_t>(positions_.empty() ? chunk : positions_.at(chunk));
  }

  const std::vector<float>& audio_;
  frames::ChunkPlan plan_;
  std::vector<std::size_t> positions_;
  bool origins_ = false;
};

// Every chunk of `feed` through `model`: their log-probabilities [chunks, frames, classes].
inline NdArray<float> segment(SegmentationModel& model, ChunkFeed& feed, std::size_t cpu_rows = 0) {
  model.run(feed.chunk_count(), feed, cpu_rows);
  return feed.take_all();
}

// The chunks of `audio` at `chunk_positions` (every chunk without) through `model`.
inline NdArray<float> segment(SegmentationModel& model, const std::vector<float>& audio,
                              std::vector<std::size_t> chunk_positions = {},
                              std::size_t cpu_rows = 0) {
  ChunkFeed feed(audio, std::move(chunk_positions));
  return segment(model, feed, cpu_rows);
}

// Powerset log-probabilities -> 0/1 speakers, as community-1 decodes them.
inline NdArray<float> decode_powerset(const NdArray<float>& log_probs) {
  return frames::Powerset(3, 2).to_multilabel(log_probs);
}

// Frames whose three speaker labels all match, after the speaker permutation (per chunk) that
// matches the most frames: local speaker indices are arbitrary per chunk.
struct Agreement {
  std::size_t frames = 0;
  std::size_t matching = 0;
  double fraction() const { return frames == 0 ? 0.0 : double(matching) / double(frames); }
};

inline Agreement permutation_agreement(const NdArray<float>& ours, const NdArray<float>& golden) {
  Agreement total;
  for (std::size_t c = 0; c < ours.dim(0); ++c) {
    std::size_t best = 0;
    std::array<std::size_t, 3> order = {0, 1, 2};
    do {
      std::size_t matching = 0;
      for (std::size_t f = 0; f < ours.dim(1); ++f) {
        bool same = true;
        for (std::size_t s = 0; s < 3; ++s) same &= ours(c, f, order[s]) == golden(c, f, s);
        matching += same ? 1 : 0;
      }
      best = std::max(best, matching);
    } while (std::next_permutation(order.begin(), order.end()));
    total.frames += ours.dim(1);
    total.matching += best;
  }
  return total;
}

// A model derived from `source` by `tool` (tools/make_dynamic_batch.py, upcast_fp16_model.py),
// cached in the build tree and made again when the tool or the source is newer. Returns an
// empty path and sets `why` when Python with the onnx package is not available.
inline std::filesystem::path derived_model(const std::string& tool,
                                           const std::filesystem::path& source,
                                           const std::string& output_name, std::string& why) {
  namespace fs = std::filesystem;
  const fs::path tool_path = fs::path(PARLEY_SOURCE_DIR) / "tools" / tool;
  const fs::path output = fs::path(PARLEY_TEST_OUTPUT_DIR) / output_name;
  const fs::path common_path = tool_path.parent_path() / "onnx_tool_common.py";
  std::error_code ec;
  if (fs::exists(output, ec)) {
    const auto made = fs::last_write_time(output);
    if (made >= fs::last_write_time(tool_path) && made >= fs::last_write_time(common_path) &&
        made >= fs::last_write_time(source)) {
      return output;
    }
  }
  const char* python_env = std::getenv("PARLEY_PYTHON");
  const std::string python = python_env != nullptr && *python_env != '\0' ? python_env
                             : fs::exists("/usr/bin/python3")             ? "/usr/bin/python3"
                                                                          : "python3";
  if (std::system((python + " -c 'import onnx' >/dev/null 2>&1").c_str()) != 0) {
    why = python + " cannot import onnx: install python3-onnx (or set PARLEY_PYTHON)";
    return {};
  }
  const std::string command =
      python + " '" + tool_path.string() + "' '" + source.string() + "' '" + output.string() + "'";
  if (std::system(command.c_str()) != 0) fail("derived model: `{}` failed", command);
  return output;
}

}  // namespace parley::stages::testing

// Resolves a model derived by a tools/*.py script into `var`, or skips the test.
#define PARLEY_REQUIRE_DERIVED_MODEL(var, tool, source, output_name)                  \
  std::string var##_why;                                                              \
  const std::filesystem::path var =                                                   \
      ::parley::stages::testing::derived_model(tool, source, output_name, var##_why); \
  if (var.empty()) GTEST_SKIP() << var##_why;

// The float32 segmentation model with its SincNet filters folded (the shipped float16 export
// `source` upcast, then folded): the model that runs batches and the shared first convolution
// on the CPU. Resolves into `var`, or skips the test.
#define PARLEY_REQUIRE_FOLDED_FLOAT32_MODEL(var, source)                     \
  PARLEY_REQUIRE_DERIVED_MODEL(var##_upcast, "upcast_fp16_model.py", source, \
                               "segmentation-3.0-fp32-upcast.onnx");         \
  PARLEY_REQUIRE_DERIVED_MODEL(var, "fold_sincnet_filters.py", var##_upcast, \
                               "segmentation-3.0-fp32-folded.onnx")
