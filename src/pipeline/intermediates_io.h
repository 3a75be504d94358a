#pragma once
// What a save directory holds between the pipeline's stages, in the layout of pyannote's
// community-1 goldens, so that `parley recluster` can rerun everything after the networks and
// the goldens can be read back as if parley had written them.
#include <filesystem>
#include <optional>
#include <string>

#include "frames/postprocess.h"
#include "pipeline/diarizer.h"

namespace parley::pipeline {

// Writes segmentations.npz and raw_embeddings.npz (pyannote community-1 goldens' layout) and
// recording.json (duration, chunk window and, when not empty, the recording's `uri`) into
// `directory`, creating it.
void write_model_intermediates(const std::filesystem::path& directory,
                               const DiarizationIntermediates& intermediates,
                               const std::string& uri = {});
// The recording id that write_model_intermediates stored in `directory`; nullopt for a folder
// without one (a goldens folder, or one saved before the id was kept).
std::optional<std::string> saved_recording_uri(const std::filesystem::path& directory);
// Reads what write_model_intermediates wrote (or a goldens folder with the same files; the
// duration then comes from reconstruction.npz's frame count).
DiarizationIntermediates read_model_intermediates(const std::filesystem::path& directory);

// Writes reconstruction.npz: the speaker count and discrete diarization per frame with their
// windows, as the goldens keep them.
void write_reconstruction(const std::filesystem::path& directory,
                          const frames::FrameDiarization& frames,
                          const frames::SlidingWindow& chunks, double min_duration_off);

}  // namespace parley::pipeline
