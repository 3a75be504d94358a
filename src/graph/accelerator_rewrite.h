#pragma once
// The segmentation model as an accelerator provider gets it: constant `If`s inlined
// (constant_if_inlining.h), zero LSTM states dropped (recurrent_state_rewrite.h) -- together
// what keeps ONNX Runtime 1.29's CUDA provider from crashing at session creation
// (docs/providers.md, "Segmentation on CUDA") -- and optionally the batch made dynamic
// (dynamic_batch.h), so that a GPU runs many chunks per call. Each step is exact on the CPU for
// float32 models and the whole rewrite is idempotent.
#include <filesystem>
#include <string>

namespace parley::graph {

struct AcceleratorRewriteOptions {
  bool dynamic_batch = true;
};

struct AcceleratorRewrite {
  std::string model;  // serialized ONNX model (the input unchanged when nothing applied)
  int ifs_inlined = 0;
  int ifs_kept = 0;
  int states_removed = 0;
  int nodes_removed = 0;
  bool batch_made_dynamic = false;  // this rewrite changed the batch to symbolic
  bool batch_dynamic = false;       // the batch is dynamic (changed, or was already)
  std::string batch_refusal;        // why the batch could not be made dynamic

  bool changed() const { return ifs_inlined > 0 || states_removed > 0 || batch_made_dynamic; }
  // "inlined 1 If, removed 8 zero LSTM states and 63 nodes, batch made dynamic" for logs.
  std::string describe() const;
};

AcceleratorRewrite rewrite_for_accelerator(const std::string& model_bytes,
                                           const std::string& model_name,
                                           const AcceleratorRewriteOptions& options = {});

struct AcceleratorModelFile {
  std::filesystem::path path;  // what to load: the rewritten copy, or `model` when unchanged
  std::string sha256;          // of that file (what compiled-graph caches and costs are keyed by)
  AcceleratorRewrite rewrite;
};

// rewrite_for_accelerator() of the file `model`, kept as `directory`/<stem>-<first 16 hex of its
// sha256>.onnx (written once, atomically) so that the segmentation stage, `parley warm-cache`
// and the placement all name the same bytes. Unchanged models are not copied.
AcceleratorModelFile accelerator_model_file(const std::filesystem::path& model,
                                            const std::filesystem::path& directory);

}  // namespace parley::graph
