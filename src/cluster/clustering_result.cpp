#include "cluster/clustering_result.h"

#include <cstdint>
#include <span>

#include "cluster/assignment.h"
#include "core/npz.h"

namespace parley::cluster {
namespace {

template <typename T>
NpyArray vector_npy(const std::vector<T>& values) {
  std::vector<std::int64_t> widened(values.begin(), values.end());
  return NpyArray::from<std::int64_t>({values.size()}, std::span<const std::int64_t>(widened));
}

NpyArray scalar_npy(double value) {
  return NpyArray::from<double>({}, std::span<const double>(&value, 1));
}

}  // namespace

NdArray<double> to_ndarray(const Eigen::MatrixXd& matrix) {
  NdArray<double> array(
      {static_cast<std::size_t>(matrix.rows()), static_cast<std::size_t>(matrix.cols())});
  for (Eigen::Index r = 0; r < matrix.rows(); ++r) {
    for (Eigen::Index c = 0; c < matrix.cols(); ++c) {
      array(static_cast<std::size_t>(r), static_cast<std::size_t>(c)) = matrix(r, c);
    }
  }
  return array;
}

ClusteringResult clustering_result_for(const TrainingSet& training, double threshold) {
  ClusteringResult result;
  result.intermediates.train_chunk_index = training.chunk_index;
  result.intermediates.train_speaker_index = training.speaker_index;
  result.intermediates.threshold = threshold;
  return result;
}

void write_clustering_intermediates(const std::filesystem::path& directory,
                                    const ClusteringResult& result) {
  std::filesystem::create_directories(directory);
  const ClusteringIntermediates& steps = result.intermediates;
  if (steps.vbx) {
    write_npz(directory / "plda_embeddings.npz",
              {{"post_xvec", NpyArray::from(to_ndarray(steps.post_xvec))},
               {"post_plda", NpyArray::from(to_ndarray(steps.post_plda))},
               {"train_chunk_idx", vector_npy(steps.train_chunk_index)},
               {"train_speaker_idx", vector_npy(steps.train_speaker_index)},
               {"phi", NpyArray::from<double>(
                           {static_cast<std::size_t>(steps.phi.size())},
                           std::span<const double>(steps.phi.data(), steps.phi.size()))}});
    const VbxResult& vbx = *steps.vbx;
    write_npz(
        directory / "vbx_state.npz",
        {{"qinit", NpyArray::from(to_ndarray(vbx.initial_responsibilities))},
         {"q_final", NpyArray::from(to_ndarray(vbx.responsibilities))},
         {"sp_final", NpyArray::from<double>({static_cast<std::size_t>(vbx.speaker_priors.size())},
                                             std::span<const double>(vbx.speaker_priors.data(),
                                                                     vbx.speaker_priors.size()))},
         {"elbo_trajectory",
          NpyArray::from<double>({vbx.elbo.size()}, std::span<const double>(vbx.elbo))},
         {"fa", scalar_npy(steps.vbx_config.fa)},
         {"fb", scalar_npy(steps.vbx_config.fb)},
         {"max_iters", [&] {
            const std::int64_t iterations = steps.vbx_config.max_iterations;
            return NpyArray::from<std::int64_t>({}, std::span<const std::int64_t>(&iterations, 1));
          }()}});
  }
  if (!steps.ahc_labels.empty()) {
    write_npy(directory / "ahc_init_labels.npy", vector_npy(steps.ahc_labels));
    write_npz(directory / "ahc_state.npz", {{"threshold", scalar_npy(steps.threshold)}});
  }
  NdArray<std::int8_t> hard(result.hard_clusters.shape());
  for (std::size_t i = 0; i < hard.size(); ++i) {
    hard(i) = static_cast<std::int8_t>(result.hard_clusters(i));
  }
  write_npz(directory / "clustering.npz", {{"soft_clusters", NpyArray::from(result.soft_clusters)},
                                           {"hard_clusters", NpyArray::from(hard)},
                                           {"centroids", NpyArray::from(result.centroids)}});
}

}  // namespace parley::cluster
