#pragma once
// How a corpus engine is laid out: which devices, how many engines (model sets) on each, and
// each engine's configuration, with the memory check across engines. Every face that runs a
// corpus engine (`parley diarize` over many recordings, `parley serve`, parley_batch_* in the C
// API, Python's parley.Batch and parley.distributed) builds it here, so that the same settings
// give the same layout everywhere; describe() is the layout a user can query
// (`parley diarize --print-layout`, parley_batch_layout).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "corpus/corpus_engine.h"
#include "pipeline/diarizer.h"
#include "pipeline/option_table.h"

namespace parley::corpus {

struct EngineLayoutRequest {
  // GPU numbers: "0,2", or "all" (every device of the provider the models run on); empty: the
  // device the configuration names (or the CPU).
  std::string device_list;
  int engines_per_device = 0;  // 0: automatic (automatic_engines_per_device; 1 on the CPU)
  int jobs = pipeline::kDefaultCorpusJobs;  // recordings decoded, and clustered, at once
  // Several engines on a GPU take use_several_engines_layout, unless the caller chose the
  // segmentation batch or sessions itself (false).
  bool segmentation_layout_automatic = true;
  // Where the engine writes a trace of each run's stages (CorpusConfig::trace_file); empty: none.
  std::filesystem::path trace_file;
};

// The request the option values name (pipeline/option_values.h's {name: value}): devices,
// engines, jobs, and whether segmentation_batch or segmentation_sessions was chosen. Fails
// "{option}: {problem}" on a value of the wrong type or out of bounds.
EngineLayoutRequest layout_request(const nlohmann::json& values);

// GPU numbers from `text` ("0,2" or "all"), for models on `provider`; none for an empty text.
// Fails, naming the field device_list, on the CPU, on a malformed list, or when "all" finds none.
std::vector<int> parse_devices(const std::string& text, runtime::ProviderId provider);

struct EngineLayout {
  runtime::ProviderId segmentation_provider = runtime::ProviderId::kCpu;
  runtime::ProviderId embedding_provider = runtime::ProviderId::kCpu;
  std::vector<int> devices;  // empty: the CPU, or the one device the configuration names
  int engines_per_device = 1;
  bool engines_per_device_automatic = false;
  std::vector<pipeline::DiarizationConfig> engines;  // one per engine, device by device
  CorpusConfig corpus;

  bool on_accelerator() const;
  // The layout as JSON, keys in a fixed order: providers, devices, engines per device (and
  // whether chosen automatically), engines, the corpus stages' threads and the first engine's
  // execution settings (pipeline::ExecutionSettings::to_json).
  nlohmann::ordered_json describe() const;
};

// The layout `request` asks for with `config` on `models`: devices parsed, engines per device
// chosen (from each device's free memory when automatic: the fewest any of them holds) and
// checked (check_engines_per_device), the segmentation layout of several engines on a GPU, the
// CPU's threads shared among engines on it, one configuration per engine. Resolves where the
// models run as the Diarizer would (pipeline::plan_model_sessions) without loading them.
EngineLayout plan_engine_layout(const pipeline::DiarizationModels& models,
                                const pipeline::DiarizationConfig& config,
                                const EngineLayoutRequest& request);

// The corpus engine of `layout` (loads a model set per engine).
std::unique_ptr<CorpusEngine> make_corpus_engine(const pipeline::DiarizationModels& models,
                                                 const EngineLayout& layout);

}  // namespace parley::corpus
