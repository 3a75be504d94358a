#include "runtime/cost_model.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"

namespace parley::runtime {
namespace fs = std::filesystem;

CostEstimate estimate_cost(const CostConstants& constants, std::size_t items,
                           const std::vector<BatchSlice>& gpu_plan, bool gpu_session_loaded) {
  CostEstimate estimate;
  const std::size_t padded = padded_items(gpu_plan);
  const double load = gpu_session_loaded ? 0.0 : constants.gpu_session_load_seconds;
  estimate.cpu_seconds = static_cast<double>(items) * constants.cpu_seconds_per_item;
  estimate.gpu_seconds = load +
                         static_cast<double>(gpu_plan.size()) * constants.gpu_seconds_per_call +
                         static_cast<double>(padded) * constants.gpu_seconds_per_item;
  estimate.gpu_wins = estimate.gpu_seconds < estimate.cpu_seconds;
  estimate.explanation = fmt::format(
      "{} items: GPU {:.3f} s (load {:.3f} + {} calls x {:.4f} + {} padded items x {:.4f}) vs CPU "
      "{:.3f} s ({} x {:.4f}) -> {}",
      items, estimate.gpu_seconds, load, gpu_plan.size(), constants.gpu_seconds_per_call, padded,
      constants.gpu_seconds_per_item, estimate.cpu_seconds, items, constants.cpu_seconds_per_item,
      estimate.gpu_wins ? "GPU" : "CPU");
  return estimate;
}

CostConstants fit_cost_constants(const std::vector<TimingSample>& cpu_samples,
                                 const std::vector<TimingSample>& gpu_samples,
                                 double gpu_session_load_seconds) {
  CostConstants constants;
  double cpu_seconds = 0.0;
  std::size_t cpu_items = 0;
  for (const auto& sample : cpu_samples) {
    cpu_seconds += sample.seconds;
    cpu_items += sample.items;
  }
  if (cpu_items == 0) fail("cost model: no CPU timings to fit (time at least one item)");
  constants.cpu_seconds_per_item = cpu_seconds / static_cast<double>(cpu_items);

  // seconds = per_call + per_item * items, by least squares.
  double n = 0, sum_x = 0, sum_y = 0, sum_xx = 0, sum_xy = 0;
  for (const auto& sample : gpu_samples) {
    const double x = static_cast<double>(sample.items);
    n += 1;
    sum_x += x;
    sum_y += sample.seconds;
    sum_xx += x * x;
    sum_xy += x * sample.seconds;
  }
  if (n == 0) fail("cost model: no GPU timings to fit (time at least one batch)");
  const double denominator = n * sum_xx - sum_x * sum_x;
  if (denominator <= 1e-12 * n * sum_xx) {
    // One batch size only (a model with a fixed batch): the per-call cost cannot be separated.
    constants.gpu_seconds_per_item = sum_y / sum_x;
    constants.gpu_seconds_per_call = 0.0;
    constants.gpu_session_load_seconds = std::max(0.0, gpu_session_load_seconds);
    constants.measured = std::time(nullptr);
    return constants;
  }
  double per_item = (n * sum_xy - sum_x * sum_y) / denominator;
  double per_call = (sum_y - per_item * sum_x) / n;
  // Noise can tilt the line below zero; the physical costs cannot be.
  if (per_item < 0) {
    per_item = 0;
    per_call = sum_y / n;
  }
  if (per_call < 0) {
    per_call = 0;
    per_item = sum_xy / sum_xx;
  }
  constants.gpu_seconds_per_item = per_item;
  constants.gpu_seconds_per_call = per_call;
  constants.gpu_session_load_seconds = std::max(0.0, gpu_session_load_seconds);
  constants.measured = std::time(nullptr);
  return constants;
}

CostModelStore::CostModelStore(const fs::path& cache_root, std::string machine_id)
    : file_(cache_root / fmt::format("cost-model-{}.json", machine_id)),
      machine_id_(std::move(machine_id)) {
  std::ifstream in(file_);
  if (!in) return;
  try {
    const auto json = nlohmann::json::parse(in);
    for (const auto& [key, value] : json.at("entries").items()) {
      CostConstants constants;
      constants.cpu_seconds_per_item = value.at("cpu_seconds_per_item").get<double>();
      constants.gpu_seconds_per_item = value.at("gpu_seconds_per_item").get<double>();
      constants.gpu_seconds_per_call = value.at("gpu_seconds_per_call").get<double>();
      constants.gpu_session_load_seconds = value.at("gpu_session_load_seconds").get<double>();
      constants.measured = value.value("measured_unix", std::time_t{0});
      entries_[key] = {value.value("model_name", ""), constants};
    }
  } catch (const std::exception& error) {
    // Constants are an optimisation: a damaged file means "not measured", and the next
    // warm-cache rewrites it.
    entries_.clear();
    load_problem_ = fmt::format(
        "{}: unreadable ({}); ignoring it until `parley warm-cache` "
        "measures again",
        file_.string(), error.what());
  }
}

std::string CostModelStore::this_machine_id() {
  char host[256] = {};
  std::string id = ::gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0'
                       ? std::string(host)
                       : std::string("unknown-host");
  for (auto& c : id) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!safe) c = '_';
  }
  return id;
}

std::string CostModelStore::entry_key(ProviderId provider, const std::string& model_sha256) {
  return fmt::format("{}/{}", provider_name(provider), model_sha256);
}

std::optional<CostConstants> CostModelStore::get(ProviderId provider,
                                                 const std::string& model_sha256) const {
  auto it = entries_.find(entry_key(provider, model_sha256));
  if (it == entries_.end()) return std::nullopt;
  return it->second.second;
}

void CostModelStore::put(ProviderId provider, const std::string& model_sha256,
                         const std::string& model_name, const CostConstants& constants) {
  entries_[entry_key(provider, model_sha256)] = {model_name, constants};
}

void CostModelStore::save() const {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [key, value] : entries_) {
    const auto& [model_name, constants] = value;
    entries[key] = {{"model_name", model_name},
                    {"cpu_seconds_per_item", constants.cpu_seconds_per_item},
                    {"gpu_seconds_per_item", constants.gpu_seconds_per_item},
                    {"gpu_seconds_per_call", constants.gpu_seconds_per_call},
                    {"gpu_session_load_seconds", constants.gpu_session_load_seconds},
                    {"measured_unix", constants.measured}};
  }
  const nlohmann::json json = {{"machine", machine_id_}, {"format", 1}, {"entries", entries}};
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  write_file_atomically(file_, json.dump(2) + "\n");
}

}  // namespace parley::runtime
