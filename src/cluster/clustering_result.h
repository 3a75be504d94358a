#pragma once
// What clustering hands to reconstruction, plus the intermediates `--save-intermediates`
// writes in the layout of the pyannote community-1 goldens.
#include <filesystem>
#include <optional>
#include <vector>

#include <Eigen/Dense>

#include "cluster/assignment.h"
#include "cluster/vbx.h"
#include "core/ndarray.h"

namespace parley::cluster {

// Everything the goldens capture (see `write_clustering_intermediates`).
struct ClusteringIntermediates {
  std::vector<std::size_t> train_chunk_index;
  std::vector<std::size_t> train_speaker_index;
  Eigen::MatrixXd post_xvec;    // [train, 128]; VBx only
  Eigen::MatrixXd post_plda;    // [train, 128]; VBx only
  Eigen::VectorXd phi;          // [128]; VBx only
  std::vector<int> ahc_labels;  // AHC (initialisation) label per training embedding
  double threshold = 0.0;       // the AHC cut actually used
  std::optional<VbxResult> vbx;
  VbxConfig vbx_config;
  bool used_kmeans = false;
};

struct ClusteringResult {
  // [chunks, local_speakers]: cluster per local speaker, -2 where the speaker got no cluster;
  // what pyannote's clustering returns. Speakers inactive in their chunk still hold a cluster
  // here: the pipeline masks them (mask_inactive_speakers) before reconstruction, as pyannote's
  // SpeakerDiarization.apply does.
  NdArray<int> hard_clusters;
  NdArray<double> soft_clusters;  // [chunks, local_speakers, clusters]
  NdArray<double> centroids;      // [clusters, dim], in the raw embedding space
  ClusteringIntermediates intermediates;

  std::size_t cluster_count() const { return centroids.empty() ? 0 : centroids.dim(0); }
};

// The result every clustering method starts from: the embeddings it trains on and its threshold
// recorded in the intermediates.
ClusteringResult clustering_result_for(const TrainingSet& training, double threshold);

// Writes the intermediates in the goldens' layout (the Findit-AI dia capture of pyannote
// 4.0.4): plda_embeddings.npz and vbx_state.npz (VBx only), ahc_init_labels.npy, ahc_state.npz
// and clustering.npz (hard clusters as int8) into `directory` (created if needed).
void write_clustering_intermediates(const std::filesystem::path& directory,
                                    const ClusteringResult& result);

NdArray<double> to_ndarray(const Eigen::MatrixXd& matrix);

}  // namespace parley::cluster
