// The C API (include/parley/parley.h) over pipeline::Diarizer: exceptions become messages.
#include "parley/parley.h"

#include <cstring>
#include <memory>
#include <string>

#include "audio/mono_resampled_stream.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/version.h"
#include "pipeline/diarizer.h"

struct parley_diarizer {
  std::unique_ptr<parley::pipeline::Diarizer> diarizer;
};

struct parley_result {
  parley::pipeline::DiarizationResult result;
  // Owned storage for the text parley_result_rttm hands out; filling it does not change the result.
  mutable std::string rttm;
};

namespace {

void report(char* error, std::size_t error_size, const char* message) {
  if (error == nullptr || error_size == 0) return;
  std::strncpy(error, message, error_size - 1);
  error[error_size - 1] = '\0';
}

template <typename Function>
auto guarded(char* error, std::size_t error_size, Function&& function) -> decltype(function()) {
  try {
    report(error, error_size, "");
    return function();
  } catch (const std::exception& exception) {
    report(error, error_size, exception.what());
  } catch (...) {
    report(error, error_size, "parley: unknown error");
  }
  return nullptr;
}

int speaker_index(const std::string& label) {
  // Labels are SPEAKER_<n>.
  const auto underscore = label.rfind('_');
  return underscore == std::string::npos ? -1 : std::stoi(label.substr(underscore + 1));
}

}  // namespace

extern "C" {

const char* parley_version(void) { return parley::kVersion; }

parley_params parley_default_params(void) {
  parley_params params{};
  params.step_seconds = 1.0;
  params.threads = 1;
  params.clustering = PARLEY_CLUSTERING_VBX;
  return params;
}

parley_diarizer* parley_diarizer_new(const parley_params* params, char* error,
                                     std::size_t error_size) {
  return guarded(error, error_size, [&]() -> parley_diarizer* {
    if (params == nullptr) parley::fail("parley_diarizer_new: params is NULL");
    if (params->segmentation_model == nullptr || params->embedding_model == nullptr) {
      parley::fail("parley_diarizer_new: set segmentation_model and embedding_model");
    }
    parley::pipeline::DiarizationModels models;
    models.segmentation = params->segmentation_model;
    models.embedding = params->embedding_model;
    if (params->plda_dir != nullptr) models.plda = params->plda_dir;
    parley::pipeline::DiarizationConfig config;
    config.step_seconds = params->step_seconds;
    config.threads = params->threads;
    config.clustering.method = params->clustering == PARLEY_CLUSTERING_AHC
                                   ? parley::cluster::ClusteringMethod::kAhc
                                   : parley::cluster::ClusteringMethod::kVbx;
    if (params->num_speakers > 0) config.speakers.num_speakers = params->num_speakers;
    if (params->min_speakers > 0) config.speakers.min_speakers = params->min_speakers;
    if (params->max_speakers > 0) config.speakers.max_speakers = params->max_speakers;
    auto handle = std::make_unique<parley_diarizer>();
    handle->diarizer = std::make_unique<parley::pipeline::Diarizer>(models, config);
    return handle.release();
  });
}

void parley_diarizer_free(parley_diarizer* diarizer) { delete diarizer; }

parley_result* parley_diarize_samples(parley_diarizer* diarizer, const float* samples,
                                      std::size_t sample_count, char* error,
                                      std::size_t error_size) {
  return guarded(error, error_size, [&]() -> parley_result* {
    if (diarizer == nullptr) parley::fail("parley_diarize_samples: diarizer is NULL");
    if (samples == nullptr && sample_count > 0) parley::fail("parley_diarize_samples: no samples");
    parley::Progress silent(parley::Progress::Mode::kNever);
    auto result = std::make_unique<parley_result>();
    result->result =
        diarizer->diarizer->diarize(std::span<const float>(samples, sample_count), "audio", silent);
    return result.release();
  });
}

parley_result* parley_diarize_file(parley_diarizer* diarizer, const char* path, char* error,
                                   std::size_t error_size) {
  return guarded(error, error_size, [&]() -> parley_result* {
    if (path == nullptr) parley::fail("parley_diarize_file: path is NULL");
    const std::vector<float> samples = parley::audio::load_mono_16k(path);
    return parley_diarize_samples(diarizer, samples.data(), samples.size(), error, error_size);
  });
}

std::size_t parley_result_speaker_count(const parley_result* result) {
  return result == nullptr ? 0 : result->result.speaker_count;
}

std::size_t parley_result_turn_count(const parley_result* result, int exclusive) {
  if (result == nullptr) return 0;
  return exclusive ? result->result.exclusive_turns.size() : result->result.turns.size();
}

parley_turn parley_result_turn(const parley_result* result, std::size_t index, int exclusive) {
  parley_turn turn{0.0, 0.0, -1};
  if (result == nullptr) return turn;
  const auto& turns = exclusive ? result->result.exclusive_turns : result->result.turns;
  if (index >= turns.size()) return turn;
  turn.start = turns[index].start;
  turn.end = turns[index].end;
  turn.speaker = speaker_index(turns[index].speaker);
  return turn;
}

const char* parley_result_rttm(const parley_result* result, const char* uri) {
  if (result == nullptr) return "";
  result->rttm = parley::eval::format_rttm(
      parley::pipeline::to_eval_turns(result->result.turns, uri != nullptr ? uri : "audio"));
  return result->rttm.c_str();
}

void parley_result_free(parley_result* result) { delete result; }

}  // extern "C"
