// The C API (include/parley/parley.h) over pipeline::Diarizer and corpus::CorpusEngine:
// exceptions become statuses plus a per-thread message.
#include "parley/parley.h"

#include "api/handles.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "audio/audio_source.h"
#include "audio/mono_resampled_stream.h"
#include "audio/resampler.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/text.h"
#include "core/version.h"
#include "corpus/corpus_engine.h"
#include "corpus/corpus_run.h"
#include "corpus/diarize_file.h"
#include "corpus/engine_layout.h"
#include "corpus/out_dir_writer.h"
#include "corpus/recording_list.h"
#include "corpus/run_plan.h"
#include "corpus/run_record.h"
#include "eval/der.h"
#include "eval/rttm.h"
#include "frames/output.h"
#include "models/speed_twin.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_table.h"
#include "pipeline/option_values.h"
#include "pipeline/result_writer.h"

struct parley_diarizer {
  std::unique_ptr<parley::pipeline::Diarizer> diarizer;
  std::filesystem::path embedding_model;  // what voiceprints record (api/identity_api.cpp)
  std::vector<std::string> warnings;      // copied into every result
  bool speed_twin = false;
  // Streams' view of `diarizer` (api/stream_api.cpp), made at the first stream.
  std::once_flag stream_once;
  std::unique_ptr<parley::stream::StreamModels> stream_models;
};

struct parley_result {
  parley::pipeline::DiarizationResult result;
  std::vector<std::string> warnings;
  bool speed_twin = false;
  // The texts parley_result_rttm and parley_result_json hand out, made with the result so that
  // a returned result is never written again (any thread may read it at once).
  std::string rttm;
  std::string json;
};

// Named options (parley_options_set): values by the table's names, and their JSON with the
// defaults filled in, which parley_options_values_json hands out.
struct parley_options {
  nlohmann::json values = nlohmann::json::object();
  std::string json;

  void refresh() {
    nlohmann::json all = nlohmann::json::object();
    for (const auto& spec : parley::pipeline::diarization_options()) {
      if (!spec.faces.c) continue;
      const auto found = values.find(spec.name);
      all[spec.name] = found != values.end() ? *found : spec.default_value;
    }
    json = all.dump();
  }
};

namespace {

using parley::pipeline::DiarizationConfig;
using parley::pipeline::DiarizationModels;

constexpr int kModelSampleRate = 16000;

thread_local std::string last_error;

// Records `message` for parley_last_error without ever throwing (a C caller cannot catch).
void remember(const char* message) noexcept {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();
  }
}

// A failure that already knows its status.
class StatusError : public std::runtime_error {
 public:
  StatusError(parley_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  parley_status status() const { return status_; }

 private:
  parley_status status_;
};

// Runs `work`; failures without a status of their own get `status`.
template <typename Work>
auto with_status(parley_status status, Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (const StatusError&) {
    throw;
  } catch (const std::exception& error) {
    throw StatusError(status, error.what());
  }
}

[[noreturn]] void invalid(const std::string& message) {
  throw StatusError(PARLEY_ERROR_INVALID_ARGUMENT, message);
}

// Runs the body of an API function: records its failure for parley_last_error. No exception
// leaves a C API function: every one runs its body through guarded or answered.
template <typename Work>
parley_status guarded(Work&& work) noexcept {
  last_error.clear();
  try {
    work();
    return PARLEY_OK;
  } catch (const StatusError& error) {
    remember(error.what());
    return error.status();
  } catch (const std::exception& error) {
    remember(error.what());
  } catch (...) {
    remember("parley: unknown error");
  }
  return PARLEY_ERROR_FAILED;
}

// For API functions that cannot report a failure (freeing, finishing): the message of an earlier
// call stays readable, and a failure, which should not happen, is only recorded.
template <typename Work>
void quietly(Work&& work) noexcept {
  try {
    work();
  } catch (const std::exception& error) {
    remember(error.what());
  } catch (...) {
    remember("parley: unknown error");
  }
}

// For API functions that return a value rather than a status: `work`'s value, or `failed` with
// the failure recorded for parley_last_error.
template <typename Value, typename Work>
Value answered(Value failed, Work&& work) noexcept {
  Value value = failed;
  guarded([&] { value = work(); });
  return value;
}

parley_log_level log_level_of(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return PARLEY_LOG_DEBUG;
    case spdlog::level::info:
      return PARLEY_LOG_INFO;
    case spdlog::level::warn:
      return PARLEY_LOG_WARNING;
    default:
      return PARLEY_LOG_ERROR;
  }
}

// Where the library's log (its own copy of spdlog, hidden inside libparley) goes: the caller's
// callback, or standard error (a program's standard output is its own).
class LogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_callback(parley_log_callback callback, void* user_data) {
    std::lock_guard lock(mutex_);
    callback_ = callback;
    user_data_ = user_data;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    if (callback_ != nullptr) {
      const std::string text(message.payload.data(), message.payload.size());
      callback_(log_level_of(message.level), text.c_str(), user_data_);
      return;
    }
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  parley_log_callback callback_ = nullptr;
  void* user_data_ = nullptr;
};

const std::shared_ptr<LogSink>& log_sink() {
  static const auto sink = std::make_shared<LogSink>();
  return sink;
}

// Warnings only by default: placement notes are the CLI's to show.
void set_up_logging() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto logger = std::make_shared<spdlog::logger>("parley", log_sink());
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(std::move(logger));
  });
}

void require(const void* pointer, const char* function, const char* name) {
  if (pointer == nullptr) invalid(fmt::format("{}: {} is NULL", function, name));
}

std::optional<std::filesystem::path> optional_path(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::filesystem::path(text);
}

DiarizationModels model_paths(const parley_params& params) {
  // A missing folder is refused by the locator, as for parley_diarizer_new_from.
  const auto models_dir = optional_path(params.models_dir);
  DiarizationModels explicit_paths;
  explicit_paths.segmentation = optional_path(params.segmentation_model).value_or("");
  explicit_paths.embedding = optional_path(params.embedding_model).value_or("");
  explicit_paths.plda = optional_path(params.plda_dir).value_or("");
  return with_status(PARLEY_ERROR_MODELS,
                     [&] { return parley::pipeline::locate_models(explicit_paths, models_dir); });
}

// The params as option values by the table's names: the C face hands the engine what every face
// hands it (pipeline/option_values.h), so its checks and messages are the CLI's. The enums are
// C's own spelling of two choices, checked here.
nlohmann::json option_values(const parley_params& params) {
  nlohmann::json values = nlohmann::json::object();
  values["step"] = params.step;
  values["threads"] = params.threads;
  switch (params.embedding_mode) {
    case PARLEY_EMBEDDING_SHARED:
      values["embedding_mode"] = "shared";
      break;
    case PARLEY_EMBEDDING_EXACT:
      values["embedding_mode"] = "exact";
      break;
    default:
      invalid(
          fmt::format("embedding_mode must be PARLEY_EMBEDDING_SHARED or "
                      "PARLEY_EMBEDDING_EXACT (got {})",
                      static_cast<int>(params.embedding_mode)));
  }
  switch (params.clustering) {
    case PARLEY_CLUSTERING_VBX:
      values["clustering"] = "vbx";
      break;
    case PARLEY_CLUSTERING_AHC:
      values["clustering"] = "ahc";
      break;
    default:
      invalid(
          fmt::format("clustering must be PARLEY_CLUSTERING_VBX or PARLEY_CLUSTERING_AHC "
                      "(got {})",
                      static_cast<int>(params.clustering)));
  }
  if (params.provider) values["provider"] = params.provider;
  nlohmann::json option_texts = nlohmann::json::array();
  for (const char* const* option = params.provider_options; option && *option; ++option) {
    option_texts.push_back(*option);
  }
  if (!option_texts.empty()) values["provider_options"] = std::move(option_texts);
  values["device_id"] = params.device_id;
  return values;
}

DiarizationConfig diarization_config(const parley_params& params) {
  DiarizationConfig config;
  const nlohmann::json values = option_values(params);
  with_status(PARLEY_ERROR_INVALID_ARGUMENT,
              [&] { parley::pipeline::apply_options(values, config); });
  return config;
}

std::optional<parley::cluster::SpeakerCountConstraints> speaker_counts(
    const parley_run_options* options) {
  if (options == nullptr) return std::nullopt;
  parley::cluster::SpeakerCountConstraints speakers;
  // 0 is the C spelling of "none"; the bounds are the engine's (SpeakerCountConstraints).
  const auto bound = [](int value, const char* name) -> std::optional<int> {
    if (value < 0) {
      invalid(fmt::format("{} must be 1 to {}, or 0 for none (got {})", name,
                          parley::cluster::kMaxSpeakerCount, value));
    }
    return value > 0 ? std::optional<int>(value) : std::nullopt;
  };
  speakers.num_speakers = bound(options->num_speakers, "num_speakers");
  speakers.min_speakers = bound(options->min_speakers, "min_speakers");
  speakers.max_speakers = bound(options->max_speakers, "max_speakers");
  with_status(PARLEY_ERROR_INVALID_ARGUMENT, [&] { speakers.validate(); });
  return speakers;
}

std::vector<std::string> model_warnings(const DiarizationModels& paths) {
  std::vector<std::string> warnings;
  if (parley::models::is_speed_twin(paths.embedding)) {
    warnings.push_back(parley::models::speed_twin_warning(paths.embedding));
  }
  return warnings;
}

// A diarizer for `paths` and `config`: what parley_diarizer_new and _new_from share.
std::unique_ptr<parley_diarizer> new_diarizer(const DiarizationModels& paths,
                                              DiarizationConfig config) {
  auto handle = std::make_unique<parley_diarizer>();
  handle->embedding_model = paths.embedding;
  with_status(PARLEY_ERROR_MODELS, [&] {
    handle->warnings = model_warnings(paths);
    handle->speed_twin = !handle->warnings.empty();
    handle->diarizer = std::make_unique<parley::pipeline::Diarizer>(paths, std::move(config));
  });
  return handle;
}

static_assert(PARLEY_MIN_SAMPLE_RATE == parley::audio::kMinSampleRate &&
                  PARLEY_MAX_SAMPLE_RATE == parley::audio::kMaxSampleRate,
              "parley.h's sample-rate bounds must be audio::kMinSampleRate and kMaxSampleRate");

// `samples` at `sample_rate` as the 16 kHz the models take.
std::vector<float> samples_16k(const float* samples, std::size_t sample_count, int sample_rate) {
  if (samples == nullptr && sample_count > 0) invalid("samples is NULL");
  if (sample_rate < parley::audio::kMinSampleRate || sample_rate > parley::audio::kMaxSampleRate) {
    invalid(fmt::format(
        "sample_rate must be {} to {} Hz, the rate the samples were recorded at (got {})",
        parley::audio::kMinSampleRate, parley::audio::kMaxSampleRate, sample_rate));
  }
  const std::span<const float> input(samples, sample_count);
  if (const auto bad = std::find_if(input.begin(), input.end(),
                                    [](float value) { return !std::isfinite(value); });
      bad != input.end()) {
    invalid(fmt::format("samples[{}] is not a finite number; pass audio in [-1, 1]",
                        bad - input.begin()));
  }
  if (sample_rate == kModelSampleRate) return {input.begin(), input.end()};
  std::vector<float> output;
  parley::audio::Resampler resampler(sample_rate, kModelSampleRate);
  resampler.process(input, output);
  resampler.flush(output);
  return output;
}

// Reports to a parley_progress_callback; a nonzero return stops the run by throwing (the
// pipeline lets a progress sink's exception through to its caller).
class CallbackProgress : public parley::ProgressSink {
 public:
  CallbackProgress(parley_progress_callback callback, void* user_data)
      : callback_(callback), user_data_(user_data) {}

  void begin(const std::string& stage, std::size_t total) override {
    std::lock_guard lock(mutex_);
    stage_ = stage;
    total_ = total;
    last_ = -1.0;
    report(0.0);
  }
  void update(std::size_t done) override {
    std::lock_guard lock(mutex_);
    report(total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_))
                      : 0.0);
  }
  void end() override {
    std::lock_guard lock(mutex_);
    report(1.0);
  }

 private:
  // Each fraction of a stage once: the last update of a stage and its end both mean 1.0.
  void report(double fraction) {
    if (callback_ == nullptr || fraction == last_) return;
    last_ = fraction;
    if (callback_(fraction, stage_.c_str(), user_data_) != 0) {
      callback_ = nullptr;  // no more calls once it asked to stop
      throw StatusError(PARLEY_ERROR_CANCELLED, "cancelled by the progress callback");
    }
  }

  parley_progress_callback callback_;
  void* user_data_;
  std::mutex mutex_;
  std::string stage_;
  std::size_t total_ = 0;
  double last_ = -1.0;  // the fraction last reported in this stage
};

// The result in `format` through the writer every face uses; `uri` (NULL: the result's own)
// names the recording in RTTM, which cannot hold whitespace or control characters.
std::string result_text(const parley_result& result, const char* format, bool exclusive,
                        const char* uri, const char* function) {
  if (format == nullptr) invalid(fmt::format("{}: format is NULL", function));
  parley::pipeline::ResultFormatOptions options;
  options.exclusive = exclusive;
  options.uri = uri != nullptr ? std::string(uri) : result.result.uri;
  // The writer's checks (a uri RTTM cannot hold, an unknown format), named by the function.
  try {
    return parley::pipeline::format_result(result.result, format, options);
  } catch (const parley::Error& error) {
    invalid(fmt::format("{}: {}", function, error.what()));
  }
}

void make_texts(parley_result& result) {
  result.json = parley::pipeline::format_result(result.result, "json");
  // A uri RTTM cannot hold (a file name with a space) gets its text when asked for, with the
  // reason it cannot be made.
  try {
    result.rttm = result_text(result, "rttm", false, nullptr, "parley_result_rttm");
  } catch (const StatusError&) {
    result.rttm.clear();
  }
}

// Runs `work` (one diarization, given where to report progress and this call's speaker counts)
// and wraps its result.
template <typename Work>
parley_result* diarize(parley_diarizer& handle, const parley_run_options* options, Work&& work) {
  const auto speakers = speaker_counts(options);
  CallbackProgress progress(options ? options->progress : nullptr,
                            options ? options->progress_user_data : nullptr);
  auto result = std::make_unique<parley_result>();
  with_status(PARLEY_ERROR_FAILED, [&] { result->result = work(progress, speakers); });
  result->warnings = handle.warnings;
  result->speed_twin = handle.speed_twin;
  make_texts(*result);
  return result.release();
}

parley_result* result_of(parley::corpus::RecordingOutcome& outcome,
                         const std::vector<std::string>& warnings, bool speed_twin) {
  auto result = std::make_unique<parley_result>();
  result->result = std::move(*outcome.result);
  result->warnings = warnings;
  result->speed_twin = speed_twin;
  make_texts(*result);
  return result.release();
}

const parley::frames::Turn* turn_at(const parley_result* result, std::size_t index, int exclusive) {
  if (result == nullptr) return nullptr;
  const auto& turns = exclusive ? result->result.exclusive_turns : result->result.turns;
  return index < turns.size() ? &turns[index] : nullptr;
}

std::vector<parley::eval::Turn> parse_rttm_text(const char* text, const char* name) {
  if (text == nullptr) invalid(fmt::format("parley_score_rttm: {} is NULL", name));
  return with_status(PARLEY_ERROR_INVALID_ARGUMENT,
                     [&] { return parley::eval::parse_rttm(text, name); });
}

}  // namespace

// Recordings go to the run driver (corpus/corpus_run.h), which skips what an earlier run
// finished, queues the rest on its engine and writes results into their folders; their outcomes
// come back through `outcomes`. The engine runs on `runner` until the batch is finished or freed.
struct parley_batch {
  std::unique_ptr<parley::corpus::CorpusRun> run;
  DiarizationModels models;
  DiarizationConfig config;
  std::string layout;  // the engine layout's description, as JSON (parley_batch_layout)
  std::vector<std::string> warnings;
  bool speed_twin = false;
  mutable std::mutex mutex;  // over what follows; taken before the run's own lock, never after
  std::condition_variable changed;
  std::deque<parley::corpus::RecordingOutcome> outcomes;
  std::size_t handed_out = 0;  // outcomes next_result took
  bool finished = false;       // no more submissions
  bool engine_done = false;    // run() returned
  std::exception_ptr engine_failure;
  bool exclusive = false;  // parley_batch_set_exclusive: the turns submit_to writes
  // Finished by an earlier run, answered PARLEY_SKIPPED: the seconds of audio their records say.
  std::map<std::size_t, double> skipped;
  std::thread runner;

  parley::corpus::CorpusRunCallbacks callbacks() {
    parley::corpus::CorpusRunCallbacks callbacks;
    callbacks.on_skipped = [this](std::size_t index, double seconds) {
      parley::corpus::RecordingOutcome outcome;
      outcome.index = index;
      std::lock_guard lock(mutex);
      skipped.emplace(index, seconds);
      outcomes.push_back(std::move(outcome));
      changed.notify_all();
    };
    callbacks.on_result = [this](parley::corpus::RecordingOutcome outcome) {
      std::lock_guard lock(mutex);
      outcomes.push_back(std::move(outcome));
      changed.notify_all();
    };
    callbacks.on_failure = [this](std::size_t index, const std::filesystem::path&,
                                  const std::string& why) {
      parley::corpus::RecordingOutcome outcome;
      outcome.index = index;
      outcome.error = why.empty() ? std::string("failed") : why;
      std::lock_guard lock(mutex);
      outcomes.push_back(std::move(outcome));
      changed.notify_all();
    };
    return callbacks;
  }

  void run_engine() {
    std::exception_ptr failure;
    try {
      run->run();
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard lock(mutex);
    engine_failure = failure;
    engine_done = true;
    changed.notify_all();
  }

  std::size_t submit(parley::corpus::CorpusRecording recording,
                     std::optional<parley::corpus::OutDirTarget> target = {}) {
    {
      std::lock_guard lock(mutex);
      if (finished) invalid("parley_batch_submit: the batch is finished (parley_batch_finish)");
    }
    try {
      return run->add(std::move(recording), std::move(target));
    } catch (const parley::corpus::OutputClash& error) {
      invalid(fmt::format(
          "parley_batch_submit_to: {}; pass a distinct name (parley_corpus_plan_json and "
          "parley_output_names name a list's recordings apart)",
          error.what()));
    }
  }

  // next_result would return without waiting (the caller holds `mutex`): a result is there, the
  // engine ended, or nothing submitted is left to wait for.
  bool answerable() const {
    return !outcomes.empty() || engine_done || (!finished && handed_out == run->summary().added);
  }

  ~parley_batch() {
    if (run) run->stop();
    if (runner.joinable()) runner.join();
  }
};

namespace {

// One of the result writer's formats: what a batch writes into an output folder.
std::string output_format(const char* format, const char* function) {
  std::string text = format != nullptr ? format : "";
  if (!parley::pipeline::is_result_format(text)) {
    invalid(fmt::format("{}: format must be one of {} (got \"{}\")", function,
                        fmt::join(parley::pipeline::result_format_names(), ", "), text));
  }
  return text;
}

std::string output_name(const char* name, const std::filesystem::path& path, const char* function) {
  // NULL or "": the name `parley diarize --out-dir` gives the recording. A batch never sees its
  // whole list, so a clash is refused at submission instead (corpus::CorpusRun::add).
  std::optional<std::string> chosen;
  if (name != nullptr && *name != '\0') chosen = name;
  try {
    return parley::corpus::chosen_output_name(chosen, path);
  } catch (const std::exception& error) {
    invalid(fmt::format("{}: {}", function, error.what()));
  }
}

// The configuration and the models of named options, as the params entry points make them from
// their params (pipeline/option_values.h).
DiarizationConfig options_config(const parley_options& options) {
  DiarizationConfig config;
  with_status(PARLEY_ERROR_INVALID_ARGUMENT,
              [&] { parley::pipeline::apply_options(options.values, config); });
  return config;
}

DiarizationModels options_models(const parley_options& options) {
  return with_status(PARLEY_ERROR_MODELS,
                     [&] { return parley::pipeline::locate_models(options.values); });
}

// A batch of `config` on `models`, laid out as the option values ask (corpus::layout_request:
// devices, engines, jobs), its engine started: parley_batch_new and parley_batch_new_from.
std::unique_ptr<parley_batch> new_batch(DiarizationModels models, DiarizationConfig config,
                                        const nlohmann::json& values) {
  auto handle = std::make_unique<parley_batch>();
  handle->config = config;
  handle->models = models;
  parley::corpus::CorpusRunConfig run_config;
  run_config.models = std::move(models);
  run_config.diarization = std::move(config);
  run_config.layout = with_status(PARLEY_ERROR_INVALID_ARGUMENT,
                                  [&] { return parley::corpus::layout_request(values); });
  // Freeing the batch drops what it still holds: nobody will read those results.
  run_config.abandon_on_stop = true;
  with_status(PARLEY_ERROR_MODELS, [&] {
    handle->warnings = model_warnings(handle->models);
    handle->speed_twin = !handle->warnings.empty();
    // The layout `parley diarize` takes for the same settings (corpus/engine_layout.h).
    handle->run =
        std::make_unique<parley::corpus::CorpusRun>(std::move(run_config), handle->callbacks());
    handle->layout = handle->run->layout().describe().dump();
    handle->run->load();
  });
  handle->runner = std::thread([batch = handle.get()] { batch->run_engine(); });
  return handle;
}

// Whether `path` was finished into `out_dir` with `config` on `models`, its turns `exclusive` or
// not: parley_run_finished and parley_run_finished_from.
bool run_finished(const DiarizationModels& models, DiarizationConfig config, bool exclusive,
                  const parley_run_options* run, const char* path, const char* out_dir,
                  const char* format, const char* name, const char* function) {
  require(path, function, "path");
  require(out_dir, function, "out_dir");
  const std::string chosen_format = output_format(format, function);
  const std::filesystem::path audio(path);
  const std::string chosen_name = output_name(name, audio, function);
  if (const auto speakers = speaker_counts(run)) config.speakers = *speakers;
  return with_status(PARLEY_ERROR_FAILED, [&] {
    const parley::corpus::OutDirWriter writer({out_dir, {chosen_format}, exclusive, {}},
                                              parley::corpus::cached_run_settings(models, config));
    return writer.plan(chosen_name, audio).finished();
  });
}

thread_local std::string returned_text;  // what parley_output_names and friends hand out

// `text` as the caller's own copy, which parley_free releases: malloc, not new, so that a binding
// may hand it to free().
char* caller_owned(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

}  // namespace

extern "C" {

const char* parley_last_error(void) { return last_error.c_str(); }

const char* parley_version(void) { return parley::kVersion; }

int parley_abi_version(void) { return PARLEY_ABI_VERSION; }

void parley_free(void* text) { std::free(text); }

void parley_set_log_callback(parley_log_callback callback, void* user_data) {
  quietly([&] {
    set_up_logging();
    log_sink()->set_callback(callback, user_data);
  });
}

parley_status parley_set_log_level(parley_log_level level) {
  return guarded([&] {
    set_up_logging();
    static constexpr spdlog::level::level_enum kLevels[] = {
        spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err,
        spdlog::level::off};
    const int index = static_cast<int>(level);
    if (index < 0 || index > static_cast<int>(PARLEY_LOG_OFF)) {
      invalid(fmt::format("level must be PARLEY_LOG_DEBUG to PARLEY_LOG_OFF (got {})", index));
    }
    spdlog::default_logger()->set_level(kLevels[index]);
  });
}

const char* parley_options_json(void) {
  return answered<const char*>("", [] {
    static const std::string json = parley::pipeline::diarization_options_json();
    return json.c_str();
  });
}

const char* parley_status_name(parley_status status) {
  switch (status) {
    case PARLEY_OK:
      return "ok";
    case PARLEY_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case PARLEY_ERROR_MODELS:
      return "models";
    case PARLEY_ERROR_AUDIO:
      return "audio";
    case PARLEY_ERROR_CANCELLED:
      return "cancelled";
    case PARLEY_ERROR_FAILED:
      return "failed";
    case PARLEY_DONE:
      return "done";
    case PARLEY_SKIPPED:
      return "skipped";
  }
  return "unknown status";
}

parley_params parley_default_params(void) {
  parley_params params{};
  params.provider = "auto";
  params.device_id = -1;
  params.step = parley::pipeline::diarization_option("step").default_value.get<double>();
  params.embedding_mode = PARLEY_EMBEDDING_SHARED;
  params.clustering = PARLEY_CLUSTERING_VBX;
  params.threads = 0;
  return params;
}

parley_run_options parley_default_run_options(void) { return parley_run_options{}; }

parley_status parley_diarizer_new(const parley_params* params, parley_diarizer** diarizer) {
  return guarded([&] {
    set_up_logging();
    require(diarizer, "parley_diarizer_new", "diarizer");
    *diarizer = nullptr;
    require(params, "parley_diarizer_new", "params");
    DiarizationConfig config = diarization_config(*params);
    *diarizer = new_diarizer(model_paths(*params), std::move(config)).release();
  });
}

parley_status parley_options_new(const parley_params* params, parley_options** options) {
  return guarded([&] {
    require(options, "parley_options_new", "options");
    *options = nullptr;
    auto handle = std::make_unique<parley_options>();
    if (params != nullptr) {
      handle->values = option_values(*params);
      for (const auto& [name, value] : {std::pair{"models_dir", params->models_dir},
                                        std::pair{"segmentation_model", params->segmentation_model},
                                        std::pair{"embedding_model", params->embedding_model},
                                        std::pair{"plda_dir", params->plda_dir}}) {
        if (value != nullptr && *value != '\0') handle->values[name] = value;
      }
      with_status(PARLEY_ERROR_INVALID_ARGUMENT, [&] {
        for (const auto& [name, value] : handle->values.items()) {
          parley::pipeline::diarization_option(name).check_value(value);
        }
      });
    }
    handle->refresh();
    *options = handle.release();
  });
}

void parley_options_free(parley_options* options) {
  quietly([&] { delete options; });
}

parley_status parley_options_set(parley_options* options, const char* name, const char* value) {
  return guarded([&] {
    require(options, "parley_options_set", "options");
    require(name, "parley_options_set", "name");
    with_status(PARLEY_ERROR_INVALID_ARGUMENT, [&] {
      const parley::pipeline::OptionSpec& spec = parley::pipeline::diarization_option(name);
      if (!spec.faces.c) {
        // The table's note says how C reaches the setting, where it can.
        parley::fail("{}: not a named option of the C API ({})", name,
                     spec.faces_note.empty() ? "parley_options_json lists them" : spec.faces_note);
      }
      if (value == nullptr) {
        options->values.erase(spec.name);
      } else if (spec.type == parley::pipeline::OptionType::kList) {
        auto& list = options->values[spec.name];
        if (!list.is_array()) list = nlohmann::json::array();
        list.push_back(spec.parse(value).at(0));
      } else {
        options->values[spec.name] = spec.parse(value);
      }
    });
    options->refresh();
  });
}

const char* parley_options_values_json(const parley_options* options) {
  return options == nullptr ? "" : options->json.c_str();
}

parley_status parley_diarizer_new_from(const parley_options* options, parley_diarizer** diarizer) {
  return guarded([&] {
    set_up_logging();
    require(diarizer, "parley_diarizer_new_from", "diarizer");
    *diarizer = nullptr;
    require(options, "parley_diarizer_new_from", "options");
    DiarizationConfig config = options_config(*options);
    *diarizer = new_diarizer(options_models(*options), std::move(config)).release();
  });
}

void parley_diarizer_free(parley_diarizer* diarizer) {
  quietly([&] { delete diarizer; });
}

size_t parley_diarizer_warning_count(const parley_diarizer* diarizer) {
  return diarizer == nullptr ? 0 : diarizer->warnings.size();
}

const char* parley_diarizer_warning(const parley_diarizer* diarizer, size_t index) {
  if (index >= parley_diarizer_warning_count(diarizer)) return "";
  return diarizer->warnings[index].c_str();
}

int parley_diarizer_speed_twin(const parley_diarizer* diarizer) {
  return diarizer != nullptr && diarizer->speed_twin ? 1 : 0;
}

parley_status parley_diarize_samples(parley_diarizer* diarizer, const float* samples,
                                     size_t sample_count, int sample_rate,
                                     const parley_run_options* options, parley_result** result) {
  return guarded([&] {
    require(result, "parley_diarize_samples", "result");
    *result = nullptr;
    require(diarizer, "parley_diarize_samples", "diarizer");
    speaker_counts(options);  // before resampling
    const std::vector<float> input = samples_16k(samples, sample_count, sample_rate);
    *result =
        diarize(*diarizer, options, [&](parley::ProgressSink& progress, const auto& speakers) {
          return diarizer->diarizer->diarize(input, "audio", progress, {}, {}, {}, speakers);
        });
  });
}

parley_status parley_diarize_file(parley_diarizer* diarizer, const char* path,
                                  const parley_run_options* options, parley_result** result) {
  return guarded([&] {
    require(result, "parley_diarize_file", "result");
    *result = nullptr;
    require(diarizer, "parley_diarize_file", "diarizer");
    if (path == nullptr) invalid("path is NULL");
    // Decoded while the networks run (corpus/diarize_file.h), as `parley diarize` does.
    *result =
        diarize(*diarizer, options, [&](parley::ProgressSink& progress, const auto& speakers) {
          parley::corpus::FileDiarizationOptions file_options;
          file_options.speakers = speakers;
          try {
            return parley::corpus::diarize_file(*diarizer->diarizer, path,
                                                parley::frames::recording_uri(path), progress,
                                                file_options);
          } catch (const parley::corpus::AudioFileError& error) {
            throw StatusError(PARLEY_ERROR_AUDIO, error.what());
          }
        });
  });
}

const char* parley_result_uri(const parley_result* result) {
  return result == nullptr ? "" : result->result.uri.c_str();
}

double parley_result_duration(const parley_result* result) {
  return result == nullptr ? 0.0 : result->result.duration_seconds;
}

size_t parley_result_speaker_count(const parley_result* result) {
  return result == nullptr ? 0 : result->result.speaker_count;
}

size_t parley_result_turn_count(const parley_result* result, int exclusive) {
  if (result == nullptr) return 0;
  return exclusive ? result->result.exclusive_turns.size() : result->result.turns.size();
}

parley_turn parley_result_turn(const parley_result* result, size_t index, int exclusive) {
  const parley::frames::Turn* turn = turn_at(result, index, exclusive);
  if (turn == nullptr) return parley_turn{0.0, 0.0, -1};
  return parley_turn{turn->start, turn->end, turn->speaker_index};
}

size_t parley_result_embedding_dimension(const parley_result* result) {
  if (result == nullptr || result->result.speaker_embeddings.rank() != 2) return 0;
  return result->result.speaker_embeddings.dim(1);
}

const float* parley_result_embedding(const parley_result* result, size_t speaker) {
  const size_t dimension = parley_result_embedding_dimension(result);
  if (dimension == 0 || speaker >= result->result.speaker_embeddings.dim(0)) return nullptr;
  return result->result.speaker_embeddings.data() + speaker * dimension;
}

size_t parley_result_stage_count(const parley_result* result) {
  return result == nullptr ? 0 : result->result.stage_times.entries().size();
}

const char* parley_result_stage_name(const parley_result* result, size_t index) {
  if (index >= parley_result_stage_count(result)) return "";
  return result->result.stage_times.entries()[index].first.c_str();
}

double parley_result_stage_seconds(const parley_result* result, size_t index) {
  if (index >= parley_result_stage_count(result)) return 0.0;
  return result->result.stage_times.entries()[index].second;
}

size_t parley_result_warning_count(const parley_result* result) {
  return result == nullptr ? 0 : result->warnings.size();
}

const char* parley_result_warning(const parley_result* result, size_t index) {
  if (index >= parley_result_warning_count(result)) return "";
  return result->warnings[index].c_str();
}

int parley_result_speed_twin(const parley_result* result) {
  return result != nullptr && result->speed_twin ? 1 : 0;
}

char* parley_result_format(const parley_result* result, const char* format, int exclusive,
                           const char* uri) {
  return answered<char*>(nullptr, [&]() -> char* {
    require(result, "parley_result_format", "result");
    return caller_owned(result_text(*result, format, exclusive != 0, uri, "parley_result_format"));
  });
}

const char* parley_result_rttm(const parley_result* result, const char* uri) {
  return answered<const char*>(nullptr, [&]() -> const char* {
    require(result, "parley_result_rttm", "result");
    if ((uri == nullptr || result->result.uri == uri) && !result->rttm.empty()) {
      return result->rttm.c_str();
    }
    // Another name than the result's: the text is this thread's, as parley.h says.
    thread_local std::string renamed;
    renamed = result_text(*result, "rttm", false, uri, "parley_result_rttm");
    return renamed.c_str();
  });
}

const char* parley_result_json(const parley_result* result) {
  return answered<const char*>(nullptr, [&]() -> const char* {
    require(result, "parley_result_json", "result");
    return result->json.c_str();
  });
}

void parley_result_free(parley_result* result) {
  quietly([&] { delete result; });
}

parley_status parley_batch_new(const parley_params* params, parley_batch** batch) {
  return guarded([&] {
    set_up_logging();
    require(batch, "parley_batch_new", "batch");
    *batch = nullptr;
    require(params, "parley_batch_new", "params");
    // No layout option among the params: the defaults of devices, engines and jobs.
    DiarizationConfig config = diarization_config(*params);
    *batch = new_batch(model_paths(*params), std::move(config), option_values(*params)).release();
  });
}

parley_status parley_batch_new_from(const parley_options* options, parley_batch** batch) {
  return guarded([&] {
    set_up_logging();
    require(batch, "parley_batch_new_from", "batch");
    *batch = nullptr;
    require(options, "parley_batch_new_from", "options");
    DiarizationConfig config = options_config(*options);
    auto handle = new_batch(options_models(*options), std::move(config), options->values);
    // The named option is parley_batch_set_exclusive's start value.
    handle->exclusive = options->values.value("exclusive", false);
    *batch = handle.release();
  });
}

const char* parley_batch_layout(const parley_batch* batch) {
  return batch != nullptr ? batch->layout.c_str() : "";
}

parley_status parley_batch_submit_to(parley_batch* batch, const char* path, const char* out_dir,
                                     const char* format, const char* name,
                                     const parley_run_options* options, size_t* index) {
  return guarded([&] {
    require(batch, "parley_batch_submit_to", "batch");
    require(path, "parley_batch_submit_to", "path");
    require(out_dir, "parley_batch_submit_to", "out_dir");
    const std::string chosen_format = output_format(format, "parley_batch_submit_to");
    parley::corpus::CorpusRecording recording;
    recording.audio = path;
    recording.uri = output_name(name, recording.audio, "parley_batch_submit_to");
    recording.speakers = speaker_counts(options);
    DiarizationConfig config = batch->config;
    if (recording.speakers) config.speakers = *recording.speakers;
    bool exclusive = false;
    {
      std::lock_guard lock(batch->mutex);
      exclusive = batch->exclusive;
    }
    auto destination = with_status(PARLEY_ERROR_FAILED, [&] {
      std::filesystem::create_directories(parley::corpus::records_folder(out_dir));
      auto writer = std::make_shared<const parley::corpus::OutDirWriter>(
          parley::corpus::OutDirRequest{out_dir, {chosen_format}, exclusive, {}},
          parley::corpus::cached_run_settings(batch->models, config));
      parley::corpus::PlannedOutputs outputs = writer->plan(recording.uri, recording.audio);
      return parley::corpus::OutDirTarget{std::move(writer), std::move(outputs)};
    });
    const std::size_t submitted = batch->submit(std::move(recording), std::move(destination));
    if (index != nullptr) *index = submitted;
  });
}

parley_status parley_batch_set_exclusive(parley_batch* batch, int exclusive) {
  return guarded([&] {
    require(batch, "parley_batch_set_exclusive", "batch");
    std::lock_guard lock(batch->mutex);
    batch->exclusive = exclusive != 0;
  });
}

void parley_batch_counts(const parley_batch* batch, size_t* done, size_t* skipped, size_t* failed) {
  quietly([&] {
    if (batch == nullptr) return;
    const parley::corpus::CorpusRunSummary summary = batch->run->summary();
    if (done != nullptr) *done = summary.done;
    if (skipped != nullptr) *skipped = summary.skipped;
    if (failed != nullptr) *failed = summary.failed;
  });
}

const char* parley_output_names(const char* const* paths, size_t count) {
  return answered<const char*>(nullptr, [&]() -> const char* {
    if (count > 0) require(paths, "parley_output_names", "paths");
    std::vector<std::filesystem::path> list;
    for (std::size_t i = 0; i < count; ++i) {
      require(paths[i], "parley_output_names", "paths[i]");
      list.emplace_back(paths[i]);
    }
    const auto names = with_status(PARLEY_ERROR_INVALID_ARGUMENT,
                                   [&] { return parley::corpus::unique_output_names(list); });
    returned_text.clear();
    for (const auto& name : names) returned_text += name + "\n";
    return returned_text.c_str();
  });
}

const char* parley_manifest_paths(const char* manifest) {
  return answered<const char*>(nullptr, [&]() -> const char* {
    require(manifest, "parley_manifest_paths", "manifest");
    const auto paths = with_status(PARLEY_ERROR_INVALID_ARGUMENT, [&] {
      return parley::corpus::read_recording_manifest(manifest);
    });
    returned_text.clear();
    for (const auto& path : paths) returned_text += path.string() + "\n";
    return returned_text.c_str();
  });
}

char* parley_corpus_plan_json(const parley_options* options, const char* const* paths, size_t count,
                              const char* out_dir, const char* const* formats,
                              size_t format_count) {
  constexpr const char* function = "parley_corpus_plan_json";
  return answered<char*>(nullptr, [&]() -> char* {
    if (count > 0) require(paths, function, "paths");
    std::vector<std::filesystem::path> listed;
    for (std::size_t i = 0; i < count; ++i) {
      require(paths[i], function, "paths[i]");
      listed.emplace_back(paths[i]);
    }
    if (out_dir == nullptr) {
      // Names and repeats only: no settings to read.
      const parley::corpus::PlannedRun plan = with_status(
          PARLEY_ERROR_INVALID_ARGUMENT, [&] { return parley::corpus::plan_run(listed); });
      return caller_owned(parley::corpus::json_keeping_bytes(plan.describe()));
    }
    require(options, function, "options");
    if (format_count > 0) require(formats, function, "formats");
    std::vector<std::string> chosen;
    for (std::size_t i = 0; i < format_count; ++i) {
      chosen.push_back(output_format(formats[i], function));
    }
    const DiarizationConfig config = options_config(*options);
    const DiarizationModels models = options_models(*options);
    const auto settings = with_status(
        PARLEY_ERROR_FAILED, [&] { return parley::corpus::cached_run_settings(models, config); });
    const parley::corpus::PlannedRun plan = with_status(PARLEY_ERROR_INVALID_ARGUMENT, [&] {
      const parley::corpus::OutDirWriter writer(
          {out_dir, chosen, options->values.value("exclusive", false), {}}, settings);
      return parley::corpus::plan_run(listed, writer);
    });
    return caller_owned(parley::corpus::json_keeping_bytes(plan.describe()));
  });
}

double parley_batch_skipped_seconds(const parley_batch* batch, size_t index) {
  return answered(0.0, [&] {
    if (batch == nullptr) return 0.0;
    std::lock_guard lock(batch->mutex);
    const auto found = batch->skipped.find(index);
    return found != batch->skipped.end() ? found->second : 0.0;
  });
}

parley_status parley_run_finished(const parley_params* params, const parley_run_options* options,
                                  const char* path, const char* out_dir, const char* format,
                                  const char* name, int* finished) {
  return guarded([&] {
    require(finished, "parley_run_finished", "finished");
    *finished = 0;
    require(params, "parley_run_finished", "params");
    DiarizationConfig config = diarization_config(*params);
    // parley_params has no exclusive: the overlapping turns, a batch's default.
    *finished = run_finished(model_paths(*params), std::move(config), false, options, path, out_dir,
                             format, name, "parley_run_finished")
                    ? 1
                    : 0;
  });
}

parley_status parley_run_finished_from(const parley_options* options, const parley_run_options* run,
                                       const char* path, const char* out_dir, const char* format,
                                       const char* name, int* finished) {
  return guarded([&] {
    require(finished, "parley_run_finished_from", "finished");
    *finished = 0;
    require(options, "parley_run_finished_from", "options");
    DiarizationConfig config = options_config(*options);
    *finished = run_finished(options_models(*options), std::move(config),
                             options->values.value("exclusive", false), run, path, out_dir, format,
                             name, "parley_run_finished_from")
                    ? 1
                    : 0;
  });
}

parley_status parley_batch_submit_file(parley_batch* batch, const char* path,
                                       const parley_run_options* options, size_t* index) {
  return guarded([&] {
    require(batch, "parley_batch_submit_file", "batch");
    require(path, "parley_batch_submit_file", "path");
    parley::corpus::CorpusRecording recording;
    recording.audio = path;
    recording.uri = parley::frames::recording_uri(path);
    recording.speakers = speaker_counts(options);
    const std::size_t submitted = batch->submit(std::move(recording));
    if (index != nullptr) *index = submitted;
  });
}

parley_status parley_batch_submit_samples(parley_batch* batch, const float* samples,
                                          size_t sample_count, int sample_rate,
                                          const parley_run_options* options, size_t* index) {
  return guarded([&] {
    require(batch, "parley_batch_submit_samples", "batch");
    parley::corpus::CorpusRecording recording;
    recording.uri = "audio";
    recording.speakers = speaker_counts(options);
    recording.samples =
        std::make_shared<const std::vector<float>>(samples_16k(samples, sample_count, sample_rate));
    const std::size_t submitted = batch->submit(std::move(recording));
    if (index != nullptr) *index = submitted;
  });
}

void parley_batch_finish(parley_batch* batch) {
  quietly([&] {
    if (batch == nullptr) return;
    std::lock_guard lock(batch->mutex);
    batch->finished = true;
    batch->run->finish();
    batch->changed.notify_all();
  });
}

int parley_batch_wait(parley_batch* batch, double timeout_seconds) {
  return answered(1, [&] {
    if (batch == nullptr) return 1;
    // At most a day per call, so that the deadline below cannot overflow.
    const double seconds = std::isfinite(timeout_seconds)
                               ? std::clamp(timeout_seconds, 0.0, 86400.0)
                               : (timeout_seconds > 0 ? 86400.0 : 0.0);
    std::unique_lock lock(batch->mutex);
    return batch->changed.wait_for(lock, std::chrono::duration<double>(seconds),
                                   [batch] { return batch->answerable(); })
               ? 1
               : 0;
  });
}

parley_status parley_batch_next_result(parley_batch* batch, size_t* index, parley_result** result) {
  std::optional<parley::corpus::RecordingOutcome> outcome;
  bool skipped = false;
  const parley_status status = guarded([&] {
    require(result, "parley_batch_next_result", "result");
    *result = nullptr;
    require(batch, "parley_batch_next_result", "batch");
    std::unique_lock lock(batch->mutex);
    batch->changed.wait(lock, [batch] { return batch->answerable(); });
    if (batch->outcomes.empty()) {
      if (batch->engine_done) {
        if (batch->engine_failure) std::rethrow_exception(batch->engine_failure);
        return;
      }
      // Nothing submitted is left and more may come: waiting here could be for ever.
      invalid(
          "parley_batch_next_result: every submitted recording was handed out and the batch is "
          "not finished; submit another recording, or call parley_batch_finish to end the batch");
    }
    outcome = std::move(batch->outcomes.front());
    batch->outcomes.pop_front();
    ++batch->handed_out;
    skipped = batch->skipped.contains(outcome->index);
    lock.unlock();
    if (index != nullptr) *index = outcome->index;
    if (skipped) return;
    if (!outcome->ok()) throw StatusError(PARLEY_ERROR_FAILED, outcome->error);
    *result = result_of(*outcome, batch->warnings, batch->speed_twin);
  });
  if (status == PARLEY_OK && !outcome) return PARLEY_DONE;
  if (status == PARLEY_OK && skipped) return PARLEY_SKIPPED;
  return status;
}

void parley_batch_free(parley_batch* batch) {
  quietly([&] { delete batch; });
}

parley_status parley_score_rttm(const char* reference, const char* hypothesis, double collar,
                                int skip_overlap, parley_der* der) {
  return guarded([&] {
    require(der, "parley_score_rttm", "der");
    if (const std::string problem = parley::eval::collar_problem(collar); !problem.empty()) {
      invalid(problem);
    }
    const auto reference_turns = parse_rttm_text(reference, "reference");
    const auto hypothesis_turns = parse_rttm_text(hypothesis, "hypothesis");
    parley::eval::ScoringOptions options;
    options.collar = collar;
    options.skip_overlap = skip_overlap != 0;
    const parley::eval::DerReport report =
        parley::eval::score_diarization(reference_turns, hypothesis_turns, nullptr, options);
    der->der = report.overall.der();
    der->missed = report.overall.missed;
    der->false_alarm = report.overall.false_alarm;
    der->confusion = report.overall.confusion;
    der->total = report.overall.total;
  });
}

parley_status parley_write_file(const char* path, const char* bytes, size_t size) {
  return guarded([&] {
    require(path, "parley_write_file", "path");
    if (size > 0) require(bytes, "parley_write_file", "bytes");
    with_status(PARLEY_ERROR_FAILED, [&] {
      parley::write_file_atomically(path, std::string_view(size > 0 ? bytes : "", size));
    });
  });
}

}  // extern "C"

// What api/identity_api.cpp needs of this file's handles and error handling (api/handles.h).
namespace parley::api {

const pipeline::DiarizationResult& diarization_of(const parley_result& result) {
  return result.result;
}

const std::filesystem::path& embedding_model_of(const parley_diarizer& diarizer) {
  return diarizer.embedding_model;
}

parley_status run_guarded(const std::function<void()>& body) noexcept { return guarded(body); }

void invalid_argument(const std::string& message) { invalid(message); }

void remember_failure(const char* message) noexcept { remember(message); }

}  // namespace parley::api

namespace parley::api {

stream::StreamModels& stream_models_of(parley_diarizer& diarizer) {
  std::call_once(diarizer.stream_once, [&] {
    diarizer.stream_models = std::make_unique<stream::StreamModels>(*diarizer.diarizer);
  });
  return *diarizer.stream_models;
}

parley_result* new_result(pipeline::DiarizationResult result, const parley_diarizer& diarizer) {
  auto handle = std::make_unique<parley_result>();
  handle->result = std::move(result);
  handle->warnings = diarizer.warnings;
  handle->speed_twin = diarizer.speed_twin;
  make_texts(*handle);
  return handle.release();
}

}  // namespace parley::api
