#include "frames/powerset.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"

namespace parley::frames {

namespace {

// Appends every subset of {0..n-1} of `size` elements in lexicographic order, as
// itertools.combinations(range(n), size) yields them.
void append_combinations(int n, int size, std::vector<std::vector<int>>& out) {
  std::vector<int> current;
  std::function<void(int)> extend = [&](int next) {
    if (static_cast<int>(current.size()) == size) {
      out.push_back(current);
      return;
    }
    for (int member = next; member < n; ++member) {
      current.push_back(member);
      extend(member + 1);
      current.pop_back();
    }
  };
  extend(0);
}

std::vector<std::size_t> with_last_dim(std::vector<std::size_t> shape, int last) {
  shape.back() = static_cast<std::size_t>(last);
  return shape;
}

}  // namespace

Powerset::Powerset(int num_classes, int max_set_size)
    : num_classes_(num_classes), max_set_size_(max_set_size) {
  if (num_classes < 1 || max_set_size < 1 || max_set_size > num_classes) {
    fail("powerset: need 1 <= max_set_size <= num_classes (got {} classes, sets of up to {})",
         num_classes, max_set_size);
  }
  for (int size = 0; size <= max_set_size; ++size) {
    append_combinations(num_classes, size, sets_);
  }
}

NdArray<float> Powerset::mapping() const {
  NdArray<float> result({sets_.size(), static_cast<std::size_t>(num_classes_)});
  for (std::size_t set = 0; set < sets_.size(); ++set) {
    for (int member : sets_[set]) {
      result(set, static_cast<std::size_t>(member)) = 1.0f;
    }
  }
  return result;
}

std::size_t Powerset::frame_count(const NdArray<float>& array, int last_dim,
                                  const char* what) const {
  if (array.rank() == 0 || array.shape().back() != static_cast<std::size_t>(last_dim)) {
    fail(
        "powerset: {} must end with a dimension of {} (powerset of {} classes, sets of up to "
        "{}); check that the segmentation model matches",
        what, last_dim, num_classes_, max_set_size_);
  }
  return array.size() / static_cast<std::size_t>(last_dim);
}

int Powerset::decode_frame(const float* scores) const {
  int best = 0;
  for (int k = 1; k < num_powerset_classes(); ++k) {
    // torch.argmax propagates NaN: the first NaN is the maximum.
    if (std::isnan(scores[best])) {
      break;
    }
    if (std::isnan(scores[k]) || scores[k] > scores[best]) {
      best = k;
    }
  }
  return best;
}

NdArray<float> Powerset::to_multilabel(const NdArray<float>& powerset_scores) const {
  // Not through decode(): that keeps a byte a frame, which any number of classes need not fit.
  const int num_sets = num_powerset_classes();
  const std::size_t frames = frame_count(powerset_scores, num_sets, "powerset scores");
  NdArray<float> result(with_last_dim(powerset_scores.shape(), num_classes_));
  for (std::size_t frame = 0; frame < frames; ++frame) {
    const int set =
        decode_frame(powerset_scores.data() + frame * static_cast<std::size_t>(num_sets));
    mark_members(static_cast<std::size_t>(set),
                 result.data() + frame * static_cast<std::size_t>(num_classes_));
  }
  return result;
}

void Powerset::mark_members(std::size_t set, float* frame_activations) const {
  for (int member : sets_[set]) frame_activations[member] = 1.0f;
}

std::vector<std::uint8_t> Powerset::decode(const NdArray<float>& powerset_scores) const {
  const int num_sets = num_powerset_classes();
  const std::size_t frames = frame_count(powerset_scores, num_sets, "powerset scores");
  if (num_sets > 256) {
    fail("powerset: {} classes do not fit a byte a frame; use to_multilabel", num_sets);
  }
  std::vector<std::uint8_t> classes(frames);
  for (std::size_t frame = 0; frame < frames; ++frame) {
    classes[frame] = static_cast<std::uint8_t>(
        decode_frame(powerset_scores.data() + frame * static_cast<std::size_t>(num_sets)));
  }
  return classes;
}

void Powerset::write_multilabel(std::span<const std::uint8_t> classes,
                                std::span<float> activations) const {
  const auto per_frame = static_cast<std::size_t>(num_classes_);
  if (activations.size() != classes.size() * per_frame) {
    fail("powerset: {} frames need {} activations (got {})", classes.size(),
         classes.size() * per_frame, activations.size());
  }
  std::fill(activations.begin(), activations.end(), 0.0f);
  for (std::size_t frame = 0; frame < classes.size(); ++frame) {
    if (classes[frame] >= sets_.size()) {
      fail("powerset: class {} out of range (there are {})", classes[frame], sets_.size());
    }
    mark_members(classes[frame], activations.data() + frame * per_frame);
  }
}

NdArray<float> Powerset::to_multilabel_soft(const NdArray<float>& powerset_log_probs) const {
  const int num_sets = num_powerset_classes();
  const std::size_t frames =
      frame_count(powerset_log_probs, num_sets, "powerset log-probabilities");
  NdArray<float> result(with_last_dim(powerset_log_probs.shape(), num_classes_));
  for (std::size_t frame = 0; frame < frames; ++frame) {
    const float* log_probs = powerset_log_probs.data() + frame * static_cast<std::size_t>(num_sets);
    float* out = result.data() + frame * static_cast<std::size_t>(num_classes_);
    for (int set = 0; set < num_sets; ++set) {
      const float probability = std::exp(log_probs[set]);
      for (int member : sets_[static_cast<std::size_t>(set)]) {
        out[member] += probability;
      }
    }
  }
  return result;
}

NdArray<float> Powerset::to_powerset(const NdArray<float>& multilabel) const {
  const int num_sets = num_powerset_classes();
  const std::size_t frames = frame_count(multilabel, num_classes_, "multi-label activations");
  NdArray<float> result(with_last_dim(multilabel.shape(), num_sets));
  std::vector<float> overlap(static_cast<std::size_t>(num_sets));
  for (std::size_t frame = 0; frame < frames; ++frame) {
    const float* labels = multilabel.data() + frame * static_cast<std::size_t>(num_classes_);
    for (int set = 0; set < num_sets; ++set) {
      float score = 0.0f;
      for (int member : sets_[static_cast<std::size_t>(set)]) {
        score += labels[member];
      }
      overlap[static_cast<std::size_t>(set)] = score;
    }
    const int best = decode_frame(overlap.data());
    result(frame * static_cast<std::size_t>(num_sets) + static_cast<std::size_t>(best)) = 1.0f;
  }
  return result;
}

}  // namespace parley::frames
