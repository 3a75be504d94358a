#pragma once
// The pieces of pyannote's BaseClustering (pipelines/clustering.py) that every clustering method
// shares: choosing the embeddings to train on, scoring every embedding against cluster
// centroids, and assigning local speakers to clusters (one cluster per speaker per chunk).
#include <vector>

#include <Eigen/Dense>

#include "core/ndarray.h"

namespace parley::cluster {

// The (chunk, local speaker) embeddings that clustering learns from: finite, and speaking alone
// in at least `min_active_ratio` of the chunk's frames (pyannote's `filter_embeddings`).
// Indices are in row-major (chunk, speaker) order, as numpy.where returns them.
struct TrainingSet {
  std::vector<std::size_t> chunk_index;
  std::vector<std::size_t> speaker_index;
  Eigen::MatrixXd embeddings;  // [count, dim], the float32 values widened
  std::size_t size() const { return chunk_index.size(); }
};

// embeddings [chunks, speakers, dim]; segmentations binarized [chunks, frames, speakers].
TrainingSet select_training_embeddings(const NdArray<float>& embeddings,
                                       const NdArray<float>& segmentations,
                                       double min_active_ratio);
// Fills training.embeddings from `embeddings` [chunks, speakers, dim] at the set's indices (what
// select_training_embeddings does last): the same values again after they were let go.
void widen_training_embeddings(const NdArray<float>& embeddings, TrainingSet& training);

// 2 - cosine distance between every embedding and every centroid: [chunks, speakers, clusters]
// (NaN where an embedding is NaN), as pyannote's `soft_clusters`.
NdArray<double> centroid_similarities(const NdArray<float>& embeddings,
                                      const Eigen::MatrixXd& centroids);

// Per chunk, the one-to-one speaker → cluster assignment maximising the total score
// (pyannote's `constrained_argmax`: NaN scores count as the smallest finite score). Speakers
// left without a cluster (more speakers than clusters) get -2. Result [chunks, speakers].
NdArray<int> constrained_argmax(const NdArray<double>& soft_clusters);

// BaseClustering's constrained assignment: inactive speakers' scores (inactive_speakers, pyannote's
// `segmentations.data.sum(1) == 0`) are first set below every valid score (min - 1; NaN when any
// score is NaN, as numpy's min propagates it, which constrained_argmax then reads as the smallest
// score), so that they get clusters last. Modifies `soft_clusters` as pyannote does (the saved soft
// clusters include it).
NdArray<int> assign_inactive_last(NdArray<double>& soft_clusters,
                                  const NdArray<float>& segmentations);

// Per embedding, the best-scoring cluster (numpy.argmax: the first NaN wins, else the first
// maximum). Result [chunks, speakers].
NdArray<int> unconstrained_argmax(const NdArray<double>& soft_clusters);

// Unit-length rows computed as numpy does on float32 embeddings (the result rounded to
// float32), so that AHC sees the same inputs as pyannote.
Eigen::MatrixXd normalise_rows_like_float32(const Eigen::MatrixXd& rows);

}  // namespace parley::cluster
