#include "corpus/engine_layout.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "corpus/run_record.h"
#include "pipeline/network_placement.h"
#include "runtime/device_memory.h"

namespace parley::corpus {

EngineLayoutRequest layout_request(const nlohmann::json& values) {
  const auto value = [&values](std::string_view name) -> nlohmann::json {
    const auto found = values.find(name);
    if (found == values.end() || found->is_null()) return nullptr;
    pipeline::diarization_option(name).check_value(*found);
    return *found;
  };
  EngineLayoutRequest request;
  if (const auto devices = value("devices"); !devices.is_null()) {
    request.device_list = devices.get<std::string>();
  }
  if (const auto engines = value("engines"); !engines.is_null()) {
    // A value past int's range stays past every device's bound (check_engines_per_device).
    request.engines_per_device =
        static_cast<int>(std::min(engines.get<double>(), double{std::numeric_limits<int>::max()}));
  }
  if (const auto jobs = value("jobs"); !jobs.is_null()) request.jobs = jobs.get<int>();
  if (const auto trace = value("trace"); !trace.is_null()) {
    request.trace_file = trace.get<std::string>();
  }
  request.segmentation_layout_automatic =
      value("segmentation_batch").is_null() && value("segmentation_sessions").is_null();
  return request;
}

std::vector<int> parse_devices(const std::string& text, runtime::ProviderId provider) {
  if (text.empty()) return {};
  if (!runtime::traits(provider).accelerator) {
    fail(
        "device_list needs a GPU provider, and both models run on the CPU here; leave device_list "
        "empty (or set engines_per_device to run several model sets on the CPU)");
  }
  std::vector<int> numbers;
  if (text == "all") {
    const int count = runtime::count_devices(provider);
    if (count == 0) {
      fail("device_list all: no {} device answered; name them instead, e.g. device_list 0,1",
           runtime::provider_name(provider));
    }
    for (int device = 0; device < count; ++device) numbers.push_back(device);
    return numbers;
  }
  std::string_view rest(text);
  while (true) {
    const std::string_view item = rest.substr(0, rest.find(','));
    int device = -1;
    const auto [end, status] = std::from_chars(item.data(), item.data() + item.size(), device);
    if (status != std::errc() || end != item.data() + item.size() || device < 0) {
      fail("device_list '{}': expected device numbers such as 0,1 or 'all'", text);
    }
    numbers.push_back(device);
    if (item.size() == rest.size()) break;
    rest.remove_prefix(item.size() + 1);
  }
  return numbers;
}

namespace {

// automatic_engines_per_device for the GPUs in use (the fewest any of them holds); one on the
// CPU.
int automatic_engines(runtime::ProviderId provider, const runtime::ProviderOptions& options,
                      const std::vector<int>& device_numbers) {
  if (!runtime::traits(provider).accelerator) return 1;
  std::vector<int> devices = device_numbers;
  if (devices.empty()) {
    int device = 0;  // an unreadable device_id fails later, where the session is made
    if (const auto id = options.find("device_id"); id != options.end()) {
      std::from_chars(id->second.data(), id->second.data() + id->second.size(), device);
    }
    devices.push_back(device);
  }
  int engines = kMaxAutomaticEnginesPerDevice;
  for (const int device : devices) {
    engines = std::min(
        engines, automatic_engines_per_device(runtime::query_device_memory(provider, device)));
  }
  return engines;
}

}  // namespace

bool EngineLayout::on_accelerator() const {
  return runtime::traits(embedding_provider).accelerator;
}

nlohmann::ordered_json EngineLayout::describe() const {
  nlohmann::ordered_json json = {
      {"providers", describe_providers(segmentation_provider, embedding_provider)},
      {"devices", devices},
      {"engines_per_device", engines_per_device},
      {"engines_per_device_automatic", engines_per_device_automatic},
      {"engines", engines.size()},
      {"decode_threads", corpus.decode_threads},
      {"clustering_threads", corpus.clustering_threads},
      {"decoded_per_engine", corpus.decoded_per_engine},
      {"group_chunks", corpus.group_chunks}};
  if (!engines.empty()) json["engine"] = engines.front().execution().to_json();
  return json;
}

EngineLayout plan_engine_layout(const pipeline::DiarizationModels& models,
                                const pipeline::DiarizationConfig& config,
                                const EngineLayoutRequest& request) {
  EngineLayout layout;
  const pipeline::ModelSessionPlan plan = pipeline::plan_model_sessions(models, config);
  layout.segmentation_provider = plan.segmentation.provider;
  layout.embedding_provider = plan.embedding.session.provider;
  const runtime::ProviderId gpu_provider = runtime::traits(layout.embedding_provider).accelerator
                                               ? layout.embedding_provider
                                               : layout.segmentation_provider;
  layout.devices = parse_devices(request.device_list, gpu_provider);
  const bool on_gpu = layout.on_accelerator();
  layout.engines_per_device = request.engines_per_device;
  if (layout.engines_per_device == 0) {
    layout.engines_per_device_automatic = true;
    layout.engines_per_device = automatic_engines(
        layout.embedding_provider, plan.embedding.session.provider_options, layout.devices);
    if (on_gpu) {
      spdlog::info("{} engine(s) per GPU, from its free memory (engines_per_device sets it)",
                   layout.engines_per_device);
    }
  }
  check_engines_per_device(layout.engines_per_device, on_gpu,
                           std::max<std::size_t>(1, layout.devices.size()));
  pipeline::DiarizationConfig engine = config;
  if (on_gpu && layout.engines_per_device > 1 && request.segmentation_layout_automatic) {
    use_several_engines_layout(engine);
  }
  if (layout.devices.empty() && layout.engines_per_device > 1 && !on_gpu) {
    // Engines on the CPU share its cores.
    engine.threads = std::max(1, engine.threads / layout.engines_per_device);
  }
  layout.engines = engine_configs(engine, layout.devices, layout.engines_per_device);
  layout.corpus.decode_threads = request.jobs;
  layout.corpus.clustering_threads = request.jobs;
  layout.corpus.trace_file = request.trace_file;
  layout.corpus.validate();
  return layout;
}

std::unique_ptr<CorpusEngine> make_corpus_engine(const pipeline::DiarizationModels& models,
                                                 const EngineLayout& layout) {
  return std::make_unique<CorpusEngine>(models, layout.engines, layout.corpus);
}

}  // namespace parley::corpus
