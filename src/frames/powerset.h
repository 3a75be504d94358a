#pragma once
// Powerset <-> multi-label conversion (pyannote.audio utils/powerset.py, class Powerset).
//
// segmentation-3.0 predicts, per frame, one of 7 "powerset" classes over 3 local speakers with
// at most 2 speaking at once. Classes are ordered by set size, then lexicographically
// (itertools.combinations): {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2}.
//
// community-1 converts with hard decoding (Inference's default, soft=False): argmax over the
// powerset classes (first maximum wins, as torch.argmax), one-hot, then multiply by the mapping
// matrix, so every frame becomes 0/1 activations of the local speakers.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/ndarray.h"

namespace parley::frames {

class Powerset {
 public:
  // num_classes >= 1 regular classes, sets of 0..max_set_size of them (1 <= max <= num).
  Powerset(int num_classes, int max_set_size);

  int num_classes() const { return num_classes_; }
  int max_set_size() const { return max_set_size_; }
  int num_powerset_classes() const { return static_cast<int>(sets_.size()); }
  // Members of each powerset class, in pyannote's order.
  const std::vector<std::vector<int>>& sets() const { return sets_; }
  // [num_powerset_classes, num_classes]: 1 where the class is a member of the set.
  NdArray<float> mapping() const;

  // [..., num_powerset_classes] scores (logits or log-probabilities) -> [..., num_classes]
  // hard 0/1 activations. NaN counts as the largest value (torch.argmax).
  NdArray<float> to_multilabel(const NdArray<float>& powerset_scores) const;
  // The same decoding kept compact: [..., num_powerset_classes] scores -> the index of each
  // frame's class, one byte a frame (a seventh of the float scores, a twelfth of the float
  // activations).
  std::vector<std::uint8_t> decode(const NdArray<float>& powerset_scores) const;
  // Hard 0/1 activations of frames given by class index: `activations` holds num_classes values
  // for each entry of `classes`, and is overwritten. Decode followed by this is to_multilabel.
  void write_multilabel(std::span<const std::uint8_t> classes, std::span<float> activations) const;
  // [..., num_powerset_classes] log-probabilities -> [..., num_classes] probabilities that each
  // class is active: sum of exp(log-prob) of the sets containing it (soft=True).
  NdArray<float> to_multilabel_soft(const NdArray<float>& powerset_log_probs) const;
  // [..., num_classes] (hard) activations -> [..., num_powerset_classes] one-hot: the set with
  // the largest overlap score multilabel . mapping^T (first maximum wins).
  NdArray<float> to_powerset(const NdArray<float>& multilabel) const;

  // Index of the powerset class of frame `scores` (length num_powerset_classes): argmax.
  int decode_frame(const float* scores) const;

 private:
  std::size_t frame_count(const NdArray<float>& array, int last_dim, const char* what) const;
  // Sets 1 for each member of powerset class `set` in one frame's num_classes activations.
  void mark_members(std::size_t set, float* frame_activations) const;

  int num_classes_;
  int max_set_size_;
  std::vector<std::vector<int>> sets_;
};

}  // namespace parley::frames
