#pragma once
// What the C API's files share beyond parley.h: the C++ objects behind its handles and its error
// handling (parley_c_api.cpp defines them), so that a part of the API (identity_api.cpp) can
// live in a file of its own.
#include <filesystem>
#include <functional>
#include <string>

#include "parley/parley.h"
#include "pipeline/diarizer.h"
#include "stream/stream_diarizer.h"

namespace parley::api {

const pipeline::DiarizationResult& diarization_of(const parley_result& result);
// The embedding model file the diarizer runs (what voiceprints record the digest of).
const std::filesystem::path& embedding_model_of(const parley_diarizer& diarizer);
// The diarizer's models for streams (api/stream_api.cpp), made at the first stream: one per
// diarizer, so that its streams' model calls take turns.
stream::StreamModels& stream_models_of(parley_diarizer& diarizer);
// A result handle as the diarizing functions make it (texts made, the diarizer's warnings).
parley_result* new_result(pipeline::DiarizationResult result, const parley_diarizer& diarizer);
// Runs `body` as every API function does: an exception becomes a status and the message of
// parley_last_error; no exception leaves.
parley_status run_guarded(const std::function<void()>& body) noexcept;
// A wrong argument: PARLEY_ERROR_INVALID_ARGUMENT with `message`.
[[noreturn]] void invalid_argument(const std::string& message);
// Records `message` for parley_last_error (for functions that return a value, not a status).
void remember_failure(const char* message) noexcept;

}  // namespace parley::api
