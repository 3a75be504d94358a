#include "cluster/speaker_count_constraints.h"

#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace parley::cluster {
namespace {

std::string optional_text(const std::optional<int>& value) {
  return value ? std::to_string(*value) : std::string("auto");
}

}  // namespace

void SpeakerCountConstraints::validate() const {
  for (const auto& [name, value] :
       {std::pair{"num_speakers", num_speakers}, std::pair{"min_speakers", min_speakers},
        std::pair{"max_speakers", max_speakers}}) {
    if (value && (*value < 1 || *value > kMaxSpeakerCount)) {
      fail("{} must be 1 to {} (got {})", name, kMaxSpeakerCount, *value);
    }
  }
  if (num_speakers && ((min_speakers && *min_speakers > *num_speakers) ||
                       (max_speakers && *max_speakers < *num_speakers))) {
    fail(
        "num_speakers {} contradicts min_speakers {} / max_speakers {}; pass either the exact "
        "number or the bounds",
        *num_speakers, optional_text(min_speakers), optional_text(max_speakers));
  }
  const std::optional<int> max = resolved_max();
  if (max && resolved_min() > *max) {
    fail("min_speakers ({}) must not exceed max_speakers ({})", resolved_min(), *max);
  }
}

std::string SpeakerCountConstraints::describe() const {
  return fmt::format("speakers(num={}, min={}, max={})", optional_text(num_speakers),
                     optional_text(min_speakers), optional_text(max_speakers));
}

int SpeakerCountConstraints::resolved_min() const {
  return num_speakers.value_or(min_speakers.value_or(1));
}

std::optional<int> SpeakerCountConstraints::resolved_max() const {
  return num_speakers ? num_speakers : max_speakers;
}

std::optional<int> SpeakerCountConstraints::resolved_num() const {
  const std::optional<int> max = resolved_max();
  if (max && *max == resolved_min()) return max;
  return std::nullopt;
}

}  // namespace parley::cluster
