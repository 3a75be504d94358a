#pragma once
// The end of a corpus run that links its speakers (identity/speaker_linking.h): every recording's
// result is held until the run ends (speaker turns and centroids: small), then the speakers of all
// of them are linked under global labels (and named from a library, whose names win), each result
// is written with its global labels (into an out-dir, or as a text for the face to print), and
// the speakers table is written. A result that cannot be written fails that recording alone.
// Every face that links a corpus (`parley diarize --link-speakers`) goes through here.
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "corpus/corpus_engine.h"
#include "corpus/out_dir_writer.h"
#include "identity/identification.h"
#include "identity/speaker_linking.h"

namespace parley::corpus {

struct LinkRequest {
  double threshold = identity::kDefaultThreshold;
  // Where the speakers table goes (identity::speakers_table); empty: not written (the outcome
  // holds it).
  std::filesystem::path speakers_table;
  // A library's names for the global speakers (identity::library_candidates); empty: none.
  std::vector<identity::Candidate> candidates;
  // The one-speaker-at-a-time turns in texts made without an out-dir (a writer has its own).
  bool exclusive = false;
};

struct LinkedOutcome {
  identity::Linking linking;
  // Without an out-dir: each linked recording's text in the run's format, by its index.
  std::map<std::size_t, std::string> texts;
  // The recordings that could not be written: index and why.
  std::vector<std::pair<std::size_t, std::string>> failures;
  std::string table;  // the speakers table's text
};

class LinkedRun {
 public:
  // `writer` (which must outlive the run) writes each result into its out-dir in its formats;
  // null: each result becomes a text in `formats`' one format (a writer writes its own).
  LinkedRun(LinkRequest request, const OutDirWriter* writer, std::vector<std::string> formats);

  // Holds one finished recording (`index`: its place in the run, which orders the linking;
  // `uri`: its name in the table); `planned`: its destinations under the writer. A failed
  // outcome is not held.
  void hold(std::size_t index, std::string uri, RecordingOutcome outcome,
            PlannedOutputs planned = {});
  // The same, written by `writer` (its own folder, formats and turns) instead of the run's.
  void hold(std::size_t index, std::string uri, RecordingOutcome outcome, PlannedOutputs planned,
            std::shared_ptr<const OutDirWriter> writer);
  std::size_t held() const { return held_.size(); }

  // Links, writes every held result, then the speakers table (`options` for the table's file).
  // Throws only when the table cannot be written.
  LinkedOutcome finish(const OutputOptions& options);

 private:
  struct Held {
    std::string uri;
    RecordingOutcome outcome;
    PlannedOutputs planned;
    std::shared_ptr<const OutDirWriter> writer;  // null: the run's
  };
  LinkRequest request_;
  const OutDirWriter* writer_;
  std::vector<std::string> formats_;
  std::map<std::size_t, Held> held_;
};

}  // namespace parley::corpus
