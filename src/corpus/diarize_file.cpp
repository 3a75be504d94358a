#include "corpus/diarize_file.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "core/stage_timer.h"

namespace parley::corpus {
namespace {

// Runs `work` (which reads the recording); its parley::Error becomes an AudioFileError.
template <typename Work>
auto reading(Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (const AudioFileError&) {
    throw;
  } catch (const Error& error) {
    throw AudioFileError(error.what());
  }
}

}  // namespace

pipeline::DiarizationResult diarize_file(pipeline::Diarizer& diarizer,
                                         const std::filesystem::path& path, const std::string& uri,
                                         ProgressSink& progress,
                                         const FileDiarizationOptions& options) {
  // Segmentation starts on the first chunks while the rest of the recording is decoded.
  audio::DecodedAudio audio =
      reading([&] { return audio::DecodedAudio::decode_in_background(path); });
  return diarize_decoding(diarizer, std::move(audio), path, uri, progress, options);
}

pipeline::DiarizationResult diarize_decoding(pipeline::Diarizer& diarizer,
                                             audio::DecodedAudio audio,
                                             const std::filesystem::path& path,
                                             const std::string& uri, ProgressSink& progress,
                                             const FileDiarizationOptions& options) {
  const auto diarize_audio = [&] {
    return diarizer.diarize(
        audio.samples(), uri, progress, options.save_directory,
        [&audio](std::size_t, std::size_t sample) { audio.release_before(sample); },
        [&audio](std::size_t, std::size_t end) { audio.wait_for(end); }, options.speakers);
  };
  pipeline::DiarizationResult result;
  try {
    result = diarize_audio();
  } catch (const Error&) {
    // A damaged file is what to report, whatever its samples made the pipeline do meanwhile
    // (the decode's error also reaches the pipeline through wait_for). Anything else (a
    // progress sink stopping the run) leaves at once, and `audio` going stops the decode.
    reading([&] { audio.wait(); });
    throw;
  }
  reading([&] { audio.wait(); });
  if (!audio.as_announced()) {
    // The chunks were planned on the header's length, which the file does not hold: it is
    // decoded whole, as it comes (as audio::DecodedAudio::decode does), and diarized again.
    spdlog::warn("{}: decoded to another length than its header states; diarizing it again",
                 path.string());
    audio = reading([&] { return audio::DecodedAudio::decode(path); });
    result = diarize_audio();
  }
  StageTimes times;
  // Alongside segmentation: like the streaming stages, it overlaps the others.
  times.add("decode", audio.decode_seconds());
  for (const auto& [stage, seconds] : result.stage_times.entries()) times.add(stage, seconds);
  result.stage_times = times;
  return result;
}

}  // namespace parley::corpus
