#include "graph/accelerator_rewrite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <span>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "graph/content_addressed_model.h"
#include "graph/onnx_graph.h"

#include "graph/constant_if_inlining.h"
#include "graph/dynamic_batch.h"
#include "graph/recurrent_state_rewrite.h"

namespace parley::graph {

std::string AcceleratorRewrite::describe() const {
  std::vector<std::string> parts;
  if (ifs_inlined > 0) parts.push_back(fmt::format("inlined {} constant If", ifs_inlined));
  if (states_removed > 0) {
    parts.push_back(fmt::format("removed {} zero recurrent states", states_removed));
  }
  if (nodes_removed > 0) parts.push_back(fmt::format("pruned {} nodes", nodes_removed));
  if (batch_made_dynamic) parts.push_back("made the batch dynamic");
  if (!batch_refusal.empty()) parts.push_back("kept the declared batch: " + batch_refusal);
  if (parts.empty()) return "nothing to rewrite";
  return fmt::format("{}", fmt::join(parts, ", "));
}

AcceleratorRewrite rewrite_for_accelerator(const std::string& model_bytes,
                                           const std::string& model_name,
                                           const AcceleratorRewriteOptions& options) {
  AcceleratorRewrite result;
  // Inlining first: the dead branch's shape arithmetic would otherwise keep nodes alive, and
  // the batch check must see the graph without the multi-channel branch's Reshapes.
  auto inlined = inline_constant_ifs(model_bytes, model_name);
  result.ifs_inlined = inlined.ifs_inlined;
  result.ifs_kept = inlined.ifs_kept;
  result.nodes_removed = inlined.nodes_removed;
  auto states = drop_zero_recurrent_states(inlined.model, model_name);
  result.states_removed = states.states_removed;
  result.nodes_removed += states.nodes_removed;
  result.model = std::move(states.model);
  if (options.dynamic_batch) {
    auto batch = make_batch_dynamic(result.model, model_name);
    result.batch_made_dynamic = batch.changed;
    result.batch_dynamic = batch.dynamic;
    result.batch_refusal = batch.refusal;
    result.model = std::move(batch.model);
  }
  return result;
}

AcceleratorModelFile accelerator_model_file(const std::filesystem::path& model,
                                            const std::filesystem::path& directory) {
  AcceleratorModelFile file;
  const std::string original = read_model_bytes(model);
  file.rewrite = rewrite_for_accelerator(original, model.string());
  if (!file.rewrite.changed()) {
    file.path = model;
    file.sha256 = sha256_text(original);
    return file;
  }
  auto written =
      write_content_addressed_model(file.rewrite.model, model.stem().string(), directory);
  file.path = std::move(written.path);
  file.sha256 = std::move(written.sha256);
  return file;
}

}  // namespace parley::graph
