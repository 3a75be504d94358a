#include "frames/binarize.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace parley::frames {

namespace {

float effective_offset(float onset, std::optional<float> offset) {
  // pyannote: `offset = offset or onset`
  return offset.has_value() && *offset != 0.0f ? *offset : onset;
}

// Annotation.support(collar) for the sorted, distinct segments of one label
// (Timeline.support_iter): merge when the gap between them is empty or shorter than collar.
std::vector<Segment> support(const std::vector<Segment>& sorted_segments, double collar) {
  std::vector<Segment> merged;
  if (sorted_segments.empty()) {
    return merged;
  }
  Segment current = sorted_segments.front();
  for (const Segment& segment : sorted_segments) {
    const Segment gap{std::min(segment.end, current.end), std::max(segment.start, current.start)};
    if (!gap.non_empty() || gap.duration() < collar) {
      if (!current.non_empty()) {
        current = segment;
      } else if (segment.non_empty()) {
        current =
            Segment{std::min(current.start, segment.start), std::max(current.end, segment.end)};
      }
    } else {
      merged.push_back(current);
      current = segment;
    }
  }
  merged.push_back(current);
  return merged;
}

}  // namespace

std::string track_name(std::size_t index) {
  std::size_t letters = 1;
  std::size_t block = 26;
  while (index >= block) {
    index -= block;
    ++letters;
    block *= 26;
  }
  std::string name(letters, 'A');
  for (std::size_t position = letters; position-- > 0;) {
    name[position] = static_cast<char>('A' + index % 26);
    index /= 26;
  }
  return name;
}

NdArray<float> binarize_scores(const NdArray<float>& scores, float onset,
                               std::optional<float> offset, std::optional<bool> initial_state) {
  if (scores.rank() != 2 && scores.rank() != 3) {
    fail(
        "binarize: scores must be [frames, classes] or [chunks, frames, classes] (got {} "
        "dimensions)",
        scores.rank());
  }
  const float off = effective_offset(onset, offset);
  const std::size_t num_sequences = scores.rank() == 3 ? scores.dim(0) : 1;
  const std::size_t num_frames = scores.dim(scores.rank() - 2);
  const std::size_t num_classes = scores.dim(scores.rank() - 1);
  NdArray<float> result(scores.shape());
  if (num_frames == 0) {
    return result;
  }
  for (std::size_t sequence = 0; sequence < num_sequences; ++sequence) {
    const std::size_t base = sequence * num_frames * num_classes;
    for (std::size_t k = 0; k < num_classes; ++k) {
      auto score_at = [&](std::size_t f) {
        const float value = scores(base + f * num_classes + k);
        return std::isnan(value) ? 0.0f : value;
      };
      bool active =
          initial_state.has_value() ? *initial_state : score_at(0) >= 0.5f * (onset + off);
      for (std::size_t f = 0; f < num_frames; ++f) {
        const float value = score_at(f);
        if (value > onset) {
          active = true;
        } else if (value < off) {
          active = false;
        }
        result(base + f * num_classes + k) = active ? 1.0f : 0.0f;
      }
    }
  }
  return result;
}

std::vector<Region> binarize_regions(const SlidingWindowFeature<float>& scores,
                                     const BinarizeOptions& options) {
  const NdArray<float>& data = scores.data;
  if (data.rank() != 2) {
    fail("binarize: scores must be [frames, classes] (got {} dimensions)", data.rank());
  }
  const std::size_t num_frames = data.dim(0);
  const std::size_t num_classes = data.dim(1);
  const float onset = options.onset;
  const float offset = effective_offset(onset, options.offset);

  std::vector<double> timestamps(num_frames);
  for (std::size_t i = 0; i < num_frames; ++i) {
    timestamps[i] = scores.window.middle(static_cast<std::int64_t>(i));
  }

  // per class, its regions in time order; the frames are walked once, every class side by side
  // (the scores are stored frame by frame)
  std::vector<std::vector<Segment>> per_class(num_classes);
  if (num_frames > 0) {
    const auto add = [&](std::size_t k, double start, double end) {
      const Segment region{start - options.pad_onset, end + options.pad_offset};
      if (region.non_empty()) {  // Annotation ignores empty segments
        per_class[k].push_back(region);
      }
    };
    std::vector<double> start(num_classes, timestamps[0]);
    std::vector<bool> active(num_classes);
    for (std::size_t k = 0; k < num_classes; ++k) active[k] = data(0, k) > onset;
    for (std::size_t i = 1; i < num_frames; ++i) {
      const double t = timestamps[i];
      for (std::size_t k = 0; k < num_classes; ++k) {
        const float y = data(i, k);
        if (active[k]) {
          if (y < offset) {
            add(k, start[k], t);
            start[k] = t;
            active[k] = false;
          }
        } else if (y > onset) {
          start[k] = t;
          active[k] = true;
        }
      }
    }
    for (std::size_t k = 0; k < num_classes; ++k) {
      if (active[k]) {
        add(k, start[k], timestamps[num_frames - 1]);
      }
    }
  }

  std::vector<Region> regions;
  const bool merge =
      options.pad_offset > 0.0 || options.pad_onset > 0.0 || options.min_duration_off > 0.0;
  if (!merge) {
    for (std::size_t k = 0; k < num_classes; ++k) {
      for (const Segment& segment : per_class[k]) {
        regions.push_back({segment, static_cast<int>(k), track_name(k)});
      }
    }
  } else {
    // Annotation.support: labels in str() order, one track-name generator for all of them.
    std::vector<int> labels;
    for (std::size_t k = 0; k < num_classes; ++k) {
      if (!per_class[k].empty()) {
        labels.push_back(static_cast<int>(k));
      }
    }
    std::sort(labels.begin(), labels.end(),
              [](int a, int b) { return std::to_string(a) < std::to_string(b); });
    std::size_t next_track = 0;
    for (int label : labels) {
      std::vector<Segment> segments = per_class[static_cast<std::size_t>(label)];
      std::sort(segments.begin(), segments.end());
      segments.erase(std::unique(segments.begin(), segments.end()), segments.end());
      for (const Segment& segment : support(segments, options.min_duration_off)) {
        regions.push_back({segment, label, track_name(next_track++)});
      }
    }
  }

  if (options.min_duration_on > 0.0) {
    std::erase_if(regions, [&](const Region& region) {
      return region.segment.duration() < options.min_duration_on;
    });
  }

  // Annotation.itertracks: segments in order, then tracks sorted by (str(track), str(label)).
  std::stable_sort(regions.begin(), regions.end(), [](const Region& a, const Region& b) {
    if (a.segment < b.segment || b.segment < a.segment) {
      return a.segment < b.segment;
    }
    if (a.track != b.track) {
      return a.track < b.track;
    }
    return std::to_string(a.label) < std::to_string(b.label);
  });
  return regions;
}

}  // namespace parley::frames
