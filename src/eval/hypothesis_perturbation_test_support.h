#pragma once
// Test support: deterministic "system outputs" made by damaging a reference in the ways real
// diarization errs (late/early boundaries, split and merged turns, swapped and wrong labels,
// missed and invented turns). The md-eval agreement test scores them with both scorers.
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "eval/rttm.h"

namespace parley::eval::testing {

// A seeded source of numbers that is the same on every platform: std::mt19937_64's output is
// specified by the standard, but std::uniform_real_distribution's mapping is not.
class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}
  double uniform(double low, double high);  // [low, high)
  std::size_t index(std::size_t count);     // [0, count)
  bool chance(double probability);

 private:
  std::mt19937_64 engine_;
};

enum class Perturbation {
  shift_boundaries,  // every start and end moves by up to a random +-0.05..0.6 s
  offset_all,        // the whole output is late or early by up to 1 s
  split_turns,       // turns cut in two, the second part given to another (maybe new) speaker
  merge_turns,       // consecutive turns joined across speakers and the gap between them
  relabel_turns,     // speaker names permuted, and some turns given to a wrong speaker
  drop_turns,        // turns missed
  add_turns,         // invented turns, some outside the reference's extent
  rename_unicode,    // hypothesis speaker names with non-ASCII characters
};

constexpr Perturbation kAllPerturbations[] = {
    Perturbation::shift_boundaries, Perturbation::offset_all,    Perturbation::split_turns,
    Perturbation::merge_turns,      Perturbation::relabel_turns, Perturbation::drop_turns,
    Perturbation::add_turns,        Perturbation::rename_unicode};

// A hypothesis for one recording: `reference` (its turns) damaged by `perturbations` in order,
// then made writable as RTTM (see normalize_turns).
std::vector<Turn> perturb_reference(std::span<const Turn> reference,
                                    std::span<const Perturbation> perturbations,
                                    SeededRandom& random);

// Rounds times to milliseconds (so the RTTM text both scorers read is exact), drops empty turns
// and merges overlapping turns of one speaker (md-eval.pl rejects those).
std::vector<Turn> normalize_turns(std::span<const Turn> turns);

}  // namespace parley::eval::testing
