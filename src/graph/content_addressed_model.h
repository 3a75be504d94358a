#pragma once
// Model files named by their content: `directory`/<stem>-<first 16 hex of sha256>.onnx. Derived
// models (the segmentation model rewritten for accelerators, the embedding trunk, the pooled
// trunk graph) are kept this way so that the pipeline, `parley warm-cache` and the placement all
// name the same bytes, and the compiled-graph cache (keyed by a model file's sha256) finds them.
#include <filesystem>
#include <string>

namespace parley::graph {

struct ContentAddressedModel {
  std::filesystem::path path;
  std::string sha256;  // of `bytes`, lower-case hex
};

// The file for `bytes`, written once: an existing file of the same name and size is kept (its
// name holds the digest), otherwise the bytes go to a private staging file renamed into place,
// so concurrent writers (threads or processes) never expose a partial file. Fails naming the
// directory when it cannot be written.
ContentAddressedModel write_content_addressed_model(const std::string& bytes,
                                                    const std::string& stem,
                                                    const std::filesystem::path& directory);

}  // namespace parley::graph
