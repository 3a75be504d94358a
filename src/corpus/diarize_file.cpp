#include "corpus/diarize_file.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "audio/audio_range.h"
#include "core/sample_rate.h"
#include "core/stage_timer.h"
#include "stages/shared_trunk.h"

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

FileVoiceprint voiceprint_from_file(pipeline::Diarizer& diarizer, const std::filesystem::path& path,
                                    const std::string& uri, std::string_view model_digest,
                                    ProgressSink& progress, std::optional<double> start,
                                    std::optional<double> end) {
  FileVoiceprint taken;
  if (start || end) {
    taken.start_seconds = start.value_or(0.0);
    const std::vector<float> samples = audio::decode_range(path, taken.start_seconds, end);
    taken.seconds = static_cast<double>(samples.size()) / kSampleRate;
    taken.voiceprint =
        identity::voiceprint_from_samples(diarizer, samples, uri, model_digest, progress);
    return taken;
  }
  cluster::SpeakerCountConstraints one;
  one.num_speakers = 1;
  const pipeline::DiarizationResult result =
      diarize_file(diarizer, path, uri, progress, {.speakers = one, .save_directory = {}});
  taken.seconds = result.duration_seconds;
  taken.voiceprint = identity::voiceprint_from_one_speaker(
      result, uri, model_digest, stages::embedding_mode_name(diarizer.config().embedding_mode));
  return taken;
}

}  // namespace parley::corpus
