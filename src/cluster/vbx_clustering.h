#pragma once
// Speaker clustering as pyannote.audio 4.0.4's `speaker-diarization-community-1` does it
// (VBxClustering.__call__ in pipelines/clustering.py); docs/clustering.md has the details.
//  1. keep the embeddings that are finite and speak alone in >= 20 % of their chunk's frames;
//  2. AHC initialisation: centroid linkage of the length-normalised kept embeddings, cut at
//     `threshold` (Euclidean, scipy fcluster "distance");
//  3. VBx over their PLDA features, initialised from the AHC labels;
//  4. centroids = responsibility-weighted means of the raw kept embeddings, for the clusters
//     whose prior pi exceeds 1e-7;
//  5. if the speaker-count constraints disagree with that number, k-means on the normalised
//     kept embeddings instead (and then no constrained assignment);
//  6. score every embedding against every centroid (2 - cosine distance) and assign each
//     chunk's local speakers to distinct clusters (Hungarian), inactive speakers last.
#include <string>

#include <Eigen/Dense>
#include <cstddef>
#include <vector>

#include "cluster/clustering_result.h"
#include "cluster/plda.h"
#include "cluster/speaker_count_constraints.h"
#include "cluster/vbx.h"
#include "core/ndarray.h"

namespace parley::cluster {

// community-1's clustering hyper-parameters (pyannote 4.0.4 pipeline: threshold 0.6, Fa 0.07,
// Fb 0.8; maxIters 20 is fixed in VBxClustering).
struct VbxClusteringConfig {
  double threshold = 0.6;           // AHC initialisation cut (Euclidean on unit vectors)
  VbxConfig vbx;                    // Fa, Fb, iterations
  double min_active_ratio = 0.2;    // filter_embeddings
  double min_speaker_prior = 1e-7;  // VBx clusters with pi above this are kept
  bool constrained_assignment = true;
  // The AHC initialisation holds a distance for every pair of training embeddings (8 bytes
  // each: 6,000 embeddings take 144 MB, 50,000 (ten hours) would take 10 GB). Above this many,
  // it clusters every k-th embedding (k the smallest that brings them under the limit) and
  // joins each other embedding to the nearest of those clusters' centroids; VBx then runs on
  // all of them as usual. At or below it, exactly pyannote's initialisation. 0: no limit.
  std::size_t max_ahc_embeddings = 6000;

  void validate() const;
  std::string describe() const;
};

// The AHC initialisation's label (0-based, as fcluster's after numpy.unique) per row of
// `normalised` (unit-length training embeddings), with the limit max_ahc_embeddings describes.
std::vector<int> ahc_initial_labels(const Eigen::MatrixXd& normalised, double threshold,
                                    std::size_t max_embeddings);

// embeddings: [chunks, local_speakers, dim] float32 (NaN rows allowed); segmentations:
// binarized [chunks, frames, local_speakers] (0/1 values).
ClusteringResult cluster_embeddings_vbx(const NdArray<float>& embeddings,
                                        const NdArray<float>& segmentations, const Plda& plda,
                                        const VbxClusteringConfig& config,
                                        const SpeakerCountConstraints& constraints);

}  // namespace parley::cluster
