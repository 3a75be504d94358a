#pragma once
// One recording file through one Diarizer, as every face diarizes a single file (`parley
// diarize rec.flac`, the C API's parley_diarize_file, Python's Pipeline): decoded in the
// background while the networks start on its first chunks, and diarized again, on what the file
// holds, when it decodes to another length than its header stated. The result is diarize() of
// the decoded samples. (pipeline takes samples and decodes nothing; this is the step above it.)
#include <filesystem>
#include <optional>
#include <string>

#include "audio/decoded_audio.h"
#include "cluster/clustering.h"
#include "core/error.h"
#include "core/progress.h"
#include "identity/voiceprint.h"
#include "pipeline/diarizer.h"

namespace parley::corpus {

// The recording could not be opened or decoded (the decoder's message, naming the file): told
// apart from the pipeline's failures, as the C API reports it with a status of its own.
class AudioFileError : public Error {
 public:
  using Error::Error;
};

struct FileDiarizationOptions {
  // Replaces the Diarizer's configured speaker-count constraints for this recording.
  std::optional<cluster::SpeakerCountConstraints> speakers;
  // Where every stage's arrays are written (pipeline/intermediates_io.h), for `parley recluster`.
  std::optional<std::filesystem::path> save_directory;
};

// Diarizes the recording at `path`, naming it `uri`. The result's stage times start with
// "decode" (the decode's own time, which overlaps segmentation). A decode error wins over any
// parley::Error the pipeline made of the samples meanwhile and is thrown as AudioFileError; what
// `progress` throws to stop the run comes out as it is, without waiting for the decode.
pipeline::DiarizationResult diarize_file(pipeline::Diarizer& diarizer,
                                         const std::filesystem::path& path, const std::string& uri,
                                         ProgressSink& progress,
                                         const FileDiarizationOptions& options = {});

// The same on a decode already started (audio::DecodedAudio::decode_in_background of `path`).
pipeline::DiarizationResult diarize_decoding(pipeline::Diarizer& diarizer,
                                             audio::DecodedAudio audio,
                                             const std::filesystem::path& path,
                                             const std::string& uri, ProgressSink& progress,
                                             const FileDiarizationOptions& options = {});

// One speaker's voiceprint (identity/voiceprint.h) from the recording at `path` (`uri` names it
// in messages), as `parley voiceprint add` takes it: with no range, the whole file through
// diarize_file (decoded while the networks run, its length checked) with the speaker count
// forced to 1; with `start` or `end`, the samples of [start, end) (audio::decode_range, whose
// errors say what range to give) diarized the same way.
struct FileVoiceprint {
  identity::Voiceprint voiceprint;
  double start_seconds = 0.0;  // where the audio used starts in the file
  double seconds = 0.0;        // how much of it was used
};
FileVoiceprint voiceprint_from_file(pipeline::Diarizer& diarizer, const std::filesystem::path& path,
                                    const std::string& uri, std::string_view model_digest,
                                    ProgressSink& progress, std::optional<double> start = {},
                                    std::optional<double> end = {});

}  // namespace parley::corpus
