#include "cluster/clustering.h"

#include "core/error.h"

namespace parley::cluster {

ClusteringMethod parse_clustering_method(const std::string& name) {
  if (name == "vbx") return ClusteringMethod::kVbx;
  if (name == "ahc") return ClusteringMethod::kAhc;
  fail("unknown clustering method '{}'; use 'vbx' (community-1's default) or 'ahc'", name);
}

std::string to_string(ClusteringMethod method) {
  return method == ClusteringMethod::kVbx ? "vbx" : "ahc";
}

void ClusteringConfig::validate() const {
  if (method == ClusteringMethod::kVbx) {
    vbx.validate();
  } else {
    ahc.validate();
  }
}

std::string ClusteringConfig::describe() const {
  return method == ClusteringMethod::kVbx ? vbx.describe() : ahc.describe();
}

ClusteringResult cluster_embeddings(const NdArray<float>& embeddings,
                                    const NdArray<float>& segmentations,
                                    const ClusteringConfig& config,
                                    const SpeakerCountConstraints& constraints, const Plda* plda,
                                    double recording_duration_s) {
  if (config.method == ClusteringMethod::kAhc) {
    return cluster_embeddings_ahc(embeddings, segmentations, config.ahc, constraints,
                                  recording_duration_s);
  }
  if (plda == nullptr) {
    fail(
        "VBx clustering needs the PLDA model (plda/xvec_transform.npz and plda/plda.npz); "
        "load it with Plda::load or set ClusteringConfig::method to kAhc");
  }
  return cluster_embeddings_vbx(embeddings, segmentations, *plda, config.vbx, constraints);
}

}  // namespace parley::cluster
