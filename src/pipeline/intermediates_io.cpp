#include "pipeline/intermediates_io.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/npz.h"
#include "eval/text_records.h"

namespace parley::pipeline {
namespace {

double scalar(const NpzArchive& archive, const std::string& key,
              const std::filesystem::path& source) {
  const auto values = npz_get(archive, key, source).as<double>();
  if (values.size() != 1) fail("{}: '{}' should hold one number", source.string(), key);
  return values(0);
}

void check_no_empty_axis(const std::vector<std::size_t>& shape, const std::filesystem::path& source,
                         std::string_view field, std::string_view axes) {
  if (std::find(shape.begin(), shape.end(), std::size_t{0}) != shape.end()) {
    fail("{}: '{}' has shape ({}); each of [{}] must be at least 1 (the file is damaged)",
         source.string(), field, fmt::join(shape, ", "), axes);
  }
}

// The chunk window and duration as `diarize` writes them: 10 s chunks every 1 s or so. A step
// of 1e-9 s would make reconstruction allocate frames for 10^9 chunks per second.
void validate_chunking(const DiarizationIntermediates& intermediates, std::size_t chunk_count,
                       const std::filesystem::path& directory) {
  constexpr double kMinChunkStepSeconds = 1e-3;
  const frames::SlidingWindow& chunks = intermediates.chunks;
  if (!std::isfinite(chunks.start()) || !std::isfinite(chunks.duration()) ||
      !(chunks.step() >= kMinChunkStepSeconds) || !std::isfinite(chunks.step()) ||
      chunks.duration() > eval::kMaxTimeSeconds || chunks.step() > chunks.duration()) {
    fail(
        "{}: chunk_start {}, chunk_duration {}, chunk_step {} are not a chunk window (steps of "
        "at least {} s, no longer than the chunks); the folder is damaged",
        directory.string(), chunks.start(), chunks.duration(), chunks.step(), kMinChunkStepSeconds);
  }
  const double duration = intermediates.duration_seconds;
  if (!(duration >= 0.0) || duration > eval::kMaxTimeSeconds) {
    fail("{}: duration_seconds {} is not a recording's duration; the folder is damaged",
         directory.string(), duration);
  }
  if (static_cast<double>(chunk_count - 1) * chunks.step() > eval::kMaxTimeSeconds) {
    fail("{}: {} chunks every {} s reach past any recording; the folder is damaged",
         directory.string(), chunk_count, chunks.step());
  }
}

}  // namespace

void write_reconstruction(const std::filesystem::path& directory,
                          const frames::FrameDiarization& frames,
                          const frames::SlidingWindow& chunks, double min_duration_off) {
  NpzArchive archive;
  const auto& count = frames.count.data;
  std::vector<std::uint8_t> count_values(count.size());
  for (std::size_t i = 0; i < count.size(); ++i) {
    count_values[i] = static_cast<std::uint8_t>(count(i));
  }
  archive["count"] = NpyArray::from<std::uint8_t>({count.size(), 1}, count_values);
  archive["discrete_diarization"] = NpyArray::from(frames.discrete.data);
  auto put = [&archive](const std::string& key, double value) {
    archive[key] = NpyArray::from<double>({}, std::span<const double>(&value, 1));
  };
  put("chunk_start", chunks.start());
  put("chunk_duration", chunks.duration());
  put("chunk_step", chunks.step());
  put("frame_start", frames.count.window.start());
  put("frame_duration", frames.count.window.duration());
  put("frame_step", frames.count.window.step());
  put("min_duration_off", min_duration_off);
  write_npz(directory / "reconstruction.npz", archive);
}

void write_model_intermediates(const std::filesystem::path& directory,
                               const DiarizationIntermediates& intermediates,
                               const std::string& uri) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) fail("{}: cannot create folder for intermediates: {}", directory.string(), ec.message());
  NpzArchive segmentations;
  segmentations["segmentations"] = NpyArray::from(intermediates.segmentations);
  write_npz(directory / "segmentations.npz", segmentations);
  NpzArchive embeddings;
  embeddings["embeddings"] = NpyArray::from(intermediates.embeddings);
  write_npz(directory / "raw_embeddings.npz", embeddings);
  nlohmann::json recording = {
      {"duration_seconds", intermediates.duration_seconds},
      {"chunk_start", intermediates.chunks.start()},
      {"chunk_duration", intermediates.chunks.duration()},
      {"chunk_step", intermediates.chunks.step()},
  };
  // recluster names the recording as diarize did, whatever the folder is called.
  if (!uri.empty()) recording["uri"] = uri;
  write_file_atomically(directory / "recording.json", recording.dump(2) + "\n");
}

DiarizationIntermediates read_model_intermediates(const std::filesystem::path& directory) {
  if (!std::filesystem::is_directory(directory)) {
    fail("{}: no such folder (expected the output of `parley diarize --save-intermediates`)",
         directory.string());
  }
  DiarizationIntermediates intermediates;
  const auto segmentations_path = directory / "segmentations.npz";
  const auto embeddings_path = directory / "raw_embeddings.npz";
  for (const auto& path : {segmentations_path, embeddings_path}) {
    if (!std::filesystem::exists(path)) {
      fail("{}: missing; recluster needs segmentations.npz and raw_embeddings.npz", path.string());
    }
  }
  intermediates.segmentations =
      npz_get(read_npz(segmentations_path), "segmentations", segmentations_path).as<float>();
  intermediates.embeddings =
      npz_get(read_npz(embeddings_path), "embeddings", embeddings_path).as<float>();
  if (intermediates.segmentations.rank() != 3 || intermediates.embeddings.rank() != 3 ||
      intermediates.segmentations.dim(0) != intermediates.embeddings.dim(0) ||
      intermediates.segmentations.dim(2) != intermediates.embeddings.dim(1)) {
    fail(
        "{}: segmentations [chunks, frames, speakers] and embeddings [chunks, speakers, dim] "
        "do not match",
        directory.string());
  }
  // An empty axis leaves the others free to claim any size without a byte behind them (10^9
  // speakers of 0 frames), and later steps allocate for those sizes.
  check_no_empty_axis(intermediates.segmentations.shape(), segmentations_path, "segmentations",
                      "chunks, frames, speakers");
  check_no_empty_axis(intermediates.embeddings.shape(), embeddings_path, "embeddings",
                      "chunks, speakers, dimension");
  const std::size_t chunk_count = intermediates.segmentations.dim(0);
  // Activations are probabilities (0 or 1 once binarized); anything else, NaN included, is a
  // damaged or hand-edited file that would otherwise turn into hundreds of speakers.
  for (const float value : intermediates.segmentations.values()) {
    if (!(value >= 0.0f && value <= 1.0f)) {
      fail("{}: holds the activation {}; activations lie between 0 and 1 (the file is damaged)",
           segmentations_path.string(), value);
    }
  }

  const auto recording_path = directory / "recording.json";
  const auto reconstruction_path = directory / "reconstruction.npz";
  if (std::filesystem::exists(recording_path)) {
    nlohmann::json recording;
    try {
      std::ifstream(recording_path) >> recording;
      intermediates.duration_seconds = recording.at("duration_seconds").get<double>();
      intermediates.chunks = frames::SlidingWindow(recording.at("chunk_start").get<double>(),
                                                   recording.at("chunk_duration").get<double>(),
                                                   recording.at("chunk_step").get<double>());
    } catch (const nlohmann::json::exception& error) {
      fail("{}: unreadable ({})", recording_path.string(), error.what());
    }
  } else if (std::filesystem::exists(reconstruction_path)) {
    // A pyannote goldens folder: the chunk window is in reconstruction.npz, and the recording
    // lasts at most until the end of the last chunk.
    const auto archive = read_npz(reconstruction_path);
    intermediates.chunks =
        frames::SlidingWindow(scalar(archive, "chunk_start", reconstruction_path),
                              scalar(archive, "chunk_duration", reconstruction_path),
                              scalar(archive, "chunk_step", reconstruction_path));
    intermediates.duration_seconds =
        intermediates.chunks[static_cast<std::int64_t>(chunk_count) - 1].end;
  } else {
    fail("{}: neither recording.json nor reconstruction.npz says how the chunks were cut",
         directory.string());
  }
  validate_chunking(intermediates, chunk_count, directory);
  return intermediates;
}

std::optional<std::string> saved_recording_uri(const std::filesystem::path& directory) {
  std::ifstream in(directory / "recording.json");
  if (!in) return std::nullopt;
  const nlohmann::json recording = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const auto uri = recording.is_object() ? recording.find("uri") : recording.end();
  if (!recording.is_object() || uri == recording.end() || !uri->is_string() ||
      uri->get<std::string>().empty()) {
    return std::nullopt;
  }
  return uri->get<std::string>();
}

}  // namespace parley::pipeline
