#pragma once
// The clustering stage of the diarization pipeline: one entry point over the two methods.
//   VBx (default): pyannote community-1's VBxClustering — see vbx_clustering.h.
//   AHC (`--clustering ahc`): plain agglomerative clustering with a threshold that adapts to
//   long recordings — see ahc_clustering.h.
// Both take per-chunk local-speaker embeddings [chunks, local_speakers, dim] and binarized
// segmentations [chunks, frames, local_speakers] and return hard clusters (-2: unassigned;
// inactive speakers are masked later, see inactive_speakers.h), soft clusters and centroids;
// `result.intermediates` holds what `write_clustering_intermediates` saves for
// `--save-intermediates`.
#include <string>

#include "cluster/ahc_clustering.h"
#include "cluster/clustering_result.h"
#include "cluster/plda.h"
#include "cluster/speaker_count_constraints.h"
#include "cluster/vbx_clustering.h"
#include "core/ndarray.h"

namespace parley::cluster {

enum class ClusteringMethod { kVbx, kAhc };

// "vbx" or "ahc" (what --clustering accepts); fails with the valid names otherwise.
ClusteringMethod parse_clustering_method(const std::string& name);
std::string to_string(ClusteringMethod method);

struct ClusteringConfig {
  ClusteringMethod method = ClusteringMethod::kVbx;
  VbxClusteringConfig vbx;
  AhcClusteringConfig ahc;

  void validate() const;
  std::string describe() const;  // the active method's parameters
};

// `plda` is required for VBx (Plda::load on the models' plda/ folder) and unused by AHC;
// `recording_duration_s` only matters for AHC's adaptive threshold.
ClusteringResult cluster_embeddings(const NdArray<float>& embeddings,
                                    const NdArray<float>& segmentations,
                                    const ClusteringConfig& config,
                                    const SpeakerCountConstraints& constraints, const Plda* plda,
                                    double recording_duration_s);

}  // namespace parley::cluster
