// parley._parley: the Python extension, a thin layer over the C API (include/parley/parley.h),
// as every binding is. The GIL is released while parley works; the progress callback takes it
// back, and checks for signals (Ctrl-C) on the way. Failures raise parley.Error (its subclasses
// parley.Cancelled when a progress callback stopped the run, parley.InvalidArgument for a wrong
// argument) with the C API's one-line message. The parley package checks argument types before
// they come here (the engine checks the values of the options: parley_options_set); paths come
// as bytes (os.fsencode), so any file name works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <parley/parley.h>

namespace py = pybind11;

namespace {

// parley.Error and its subclasses, made when the module loads and kept for the life of the
// process (a py::object would be released after the interpreter is gone).
PyObject* error_type = nullptr;
PyObject* cancelled_type = nullptr;
PyObject* invalid_argument_type = nullptr;

// Text from the C API as str: file names and messages may hold bytes that are not UTF-8 (a
// path's own bytes), kept as os.fsdecode keeps them.
py::str text(const char* value) {
  PyObject* decoded =
      PyUnicode_DecodeUTF8(value, static_cast<Py_ssize_t>(std::strlen(value)), "surrogateescape");
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

class ParleyError : public std::exception {
 public:
  ParleyError(parley_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  parley_status status() const { return status_; }

 private:
  parley_status status_;
  std::string message_;
};

void check(parley_status status) {
  if (status != PARLEY_OK) throw ParleyError(status, parley_last_error());
}

// A C API text that is NULL on failure.
const char* checked(const char* value) {
  if (value == nullptr) throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT, parley_last_error());
  return value;
}

struct ResultDeleter {
  void operator()(parley_result* result) const { parley_result_free(result); }
};
using ResultHandle = std::unique_ptr<parley_result, ResultDeleter>;

// One finished diarization, read through the C API's getters.
class Result {
 public:
  explicit Result(ResultHandle handle) : handle_(std::move(handle)) {}

  py::str uri() const { return text(parley_result_uri(handle_.get())); }
  bool speed_twin() const { return parley_result_speed_twin(handle_.get()) != 0; }
  double duration() const { return parley_result_duration(handle_.get()); }
  std::size_t speaker_count() const { return parley_result_speaker_count(handle_.get()); }

  std::vector<std::tuple<double, double, int>> turns(bool exclusive) const {
    std::vector<std::tuple<double, double, int>> turns;
    const std::size_t count = parley_result_turn_count(handle_.get(), exclusive ? 1 : 0);
    for (std::size_t i = 0; i < count; ++i) {
      const parley_turn turn = parley_result_turn(handle_.get(), i, exclusive ? 1 : 0);
      turns.emplace_back(turn.start, turn.end, turn.speaker);
    }
    return turns;
  }

  py::array_t<float> embeddings() const {
    const std::size_t speakers = speaker_count();
    const std::size_t dimension = parley_result_embedding_dimension(handle_.get());
    py::array_t<float> array({speakers, dimension});
    auto rows = array.mutable_unchecked<2>();
    for (std::size_t s = 0; s < speakers; ++s) {
      const float* row = parley_result_embedding(handle_.get(), s);
      for (std::size_t d = 0; d < dimension; ++d) {
        rows(static_cast<py::ssize_t>(s), static_cast<py::ssize_t>(d)) = row[d];
      }
    }
    return array;
  }

  std::vector<std::pair<std::string, double>> stage_times() const {
    std::vector<std::pair<std::string, double>> times;
    for (std::size_t i = 0; i < parley_result_stage_count(handle_.get()); ++i) {
      times.emplace_back(parley_result_stage_name(handle_.get(), i),
                         parley_result_stage_seconds(handle_.get(), i));
    }
    return times;
  }

  py::list warnings() const {
    py::list warnings;
    for (std::size_t i = 0; i < parley_result_warning_count(handle_.get()); ++i) {
      warnings.append(text(parley_result_warning(handle_.get(), i)));
    }
    return warnings;
  }

  // Through the writer every face uses; the text is ours to free.
  py::str format(const std::string& format, bool exclusive,
                 const std::optional<std::string>& uri) const {
    struct Free {
      void operator()(char* value) const { parley_free(value); }
    };
    const std::unique_ptr<char, Free> written(parley_result_format(
        handle_.get(), format.c_str(), exclusive ? 1 : 0, uri ? uri->c_str() : nullptr));
    return text(checked(written.get()));
  }
  py::str rttm(const std::optional<std::string>& uri) const { return format("rttm", false, uri); }
  py::str json() const { return text(checked(parley_result_json(handle_.get()))); }

  const parley_result* handle() const { return handle_.get(); }

 private:
  ResultHandle handle_;
};

// A path or name for the C API, which takes NUL-terminated text.
std::string without_nul(const py::bytes& bytes, const char* what) {
  std::string value = bytes;
  if (value.find('\0') != std::string::npos) {
    throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT,
                      std::string("the ") + what +
                          " holds a NUL character, which no file name can; pass the file's real "
                          "name");
  }
  return value;
}

// What a Pipeline is made with (parley.Pipeline's arguments): the C API's named options
// (parley_options), set one by one as texts the option table parses, so that their checks and
// messages are the engine's, as every face's.
class Settings {
 public:
  Settings() { check(parley_options_new(nullptr, &handle_)); }
  ~Settings() { parley_options_free(handle_); }
  Settings(const Settings&) = delete;
  Settings& operator=(const Settings&) = delete;

  // `value` as the command line spells it (None: the default); a list option gains one item.
  void set(const std::string& name, const std::optional<py::bytes>& value) {
    const std::optional<std::string> text =
        value ? std::optional<std::string>(without_nul(*value, name.c_str())) : std::nullopt;
    check(parley_options_set(handle_, name.c_str(), text ? text->c_str() : nullptr));
  }
  std::string values_json() const { return parley_options_values_json(handle_); }
  const parley_options* handle() const { return handle_; }

 private:
  parley_options* handle_ = nullptr;
};

// Calls `make` (parley_diarizer_new_from or parley_batch_new_from) without the GIL.
template <typename Handle>
Handle* create(const Settings& settings, parley_status (*make)(const parley_options*, Handle**)) {
  Handle* handle = nullptr;
  parley_status status;
  {
    py::gil_scoped_release release;
    status = make(settings.handle(), &handle);
  }
  check(status);
  return handle;
}

parley_run_options run_options(std::optional<int> num_speakers, std::optional<int> min_speakers,
                               std::optional<int> max_speakers) {
  parley_run_options options = parley_default_run_options();
  const auto count = [](std::optional<int> value, const char* name) {
    if (value && *value < 1) {
      throw ParleyError(
          PARLEY_ERROR_INVALID_ARGUMENT,
          std::string(name) + " must be at least 1 (got " + std::to_string(*value) + ")");
    }
    return value.value_or(0);
  };
  options.num_speakers = count(num_speakers, "num_speakers");
  options.min_speakers = count(min_speakers, "min_speakers");
  options.max_speakers = count(max_speakers, "max_speakers");
  return options;
}

// Every progress step of a run, with the GIL held: Python's signal handlers run (so that Ctrl-C
// stops the run at its next step rather than when it ends), then the progress callable. An
// exception either raises (KeyboardInterrupt too) is kept and re-raised once parley has stopped;
// a true return value stops the run as parley.Cancelled.
// How many progress callbacks this thread is inside: a Pipeline called from one must not wait for
// another Pipeline's turn, which may be held by a thread waiting, in its own callback, for ours.
thread_local int progress_callback_depth = 0;

struct ProgressBridge {
  py::object callable;
  std::optional<py::error_already_set> raised;

  static int call(double fraction, const char* stage, void* user_data) {
    auto* bridge = static_cast<ProgressBridge*>(user_data);
    py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (bridge->callable.is_none()) return 0;
      struct Depth {
        Depth() { ++progress_callback_depth; }
        ~Depth() { --progress_callback_depth; }
        Depth(const Depth&) = delete;
        Depth& operator=(const Depth&) = delete;
      } depth;
      return py::bool_(bridge->callable(fraction, text(stage))) ? 1 : 0;
    } catch (py::error_already_set& error) {
      bridge->raised.emplace(std::move(error));
      return 1;
    }
  }
};

class Diarizer {
 public:
  explicit Diarizer(const Settings& settings)
      : handle_(create<parley_diarizer>(settings, parley_diarizer_new_from)) {}
  ~Diarizer() { parley_diarizer_free(handle_); }
  Diarizer(const Diarizer&) = delete;
  Diarizer& operator=(const Diarizer&) = delete;

  py::list warnings() const {
    py::list warnings;
    for (std::size_t i = 0; i < parley_diarizer_warning_count(handle_); ++i) {
      warnings.append(text(parley_diarizer_warning(handle_, i)));
    }
    return warnings;
  }
  bool speed_twin() const { return parley_diarizer_speed_twin(handle_) != 0; }
  const parley_diarizer* handle() const { return handle_; }
  parley_diarizer* handle() { return handle_; }

  Result diarize_file(const py::bytes& path_bytes, std::optional<int> num_speakers,
                      std::optional<int> min_speakers, std::optional<int> max_speakers,
                      const py::object& progress) {
    const std::string path = path_bytes;
    if (path.find('\0') != std::string::npos) {
      throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT,
                        "the path holds a NUL character, which no file name can; pass the file's "
                        "real name");
    }
    return run(num_speakers, min_speakers, max_speakers, progress,
               [&](const parley_run_options* options, parley_result** result) {
                 return parley_diarize_file(handle_, path.c_str(), options, result);
               });
  }

  Result diarize_samples(
      const py::array_t<float, py::array::c_style | py::array::forcecast>& samples, int sample_rate,
      std::optional<int> num_speakers, std::optional<int> min_speakers,
      std::optional<int> max_speakers, const py::object& progress) {
    if (samples.ndim() != 1) {
      throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT,
                        "expected mono audio, a 1-D array of samples (got " +
                            std::to_string(samples.ndim()) +
                            " dimensions; average the channels first)");
    }
    const float* data = samples.data();
    const auto count = static_cast<std::size_t>(samples.size());
    return run(num_speakers, min_speakers, max_speakers, progress,
               [&](const parley_run_options* options, parley_result** result) {
                 return parley_diarize_samples(handle_, data, count, sample_rate, options, result);
               });
  }

 private:
  template <typename Call>
  Result run(std::optional<int> num_speakers, std::optional<int> min_speakers,
             std::optional<int> max_speakers, const py::object& progress, Call&& call) {
    parley_run_options options = run_options(num_speakers, min_speakers, max_speakers);
    ProgressBridge bridge{progress, std::nullopt};
    options.progress = &ProgressBridge::call;
    options.progress_user_data = &bridge;
    // A parley_diarizer runs one call at a time: calls from several threads take turns here
    // (waiting without the GIL, which the running call's progress may need).
    if (running_thread_.load() == std::this_thread::get_id()) {
      throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT,
                        "a Pipeline cannot be called from its own progress callback; use "
                        "another Pipeline");
    }
    parley_result* result = nullptr;
    parley_status status = PARLEY_OK;
    bool busy_elsewhere = false;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(busy_, std::defer_lock);
      if (progress_callback_depth > 0) {
        busy_elsewhere = !lock.try_lock();
      } else {
        lock.lock();
      }
      if (!busy_elsewhere) {
        running_thread_.store(std::this_thread::get_id());
        status = call(&options, &result);
        running_thread_.store(std::thread::id());
      }
    }
    if (busy_elsewhere) {
      throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT,
                        "this Pipeline is running a call on another thread, and a progress "
                        "callback cannot wait for it (the two calls could wait for each other); "
                        "use a Pipeline of its own here");
    }
    if (bridge.raised) throw std::move(*bridge.raised);
    check(status);
    return Result(ResultHandle(result));
  }

  parley_diarizer* handle_ = nullptr;
  std::mutex busy_;
  std::atomic<std::thread::id> running_thread_;
};

// The lines of a newline-terminated list the C API hands out (NULL: its failure).
std::vector<py::bytes> lines_of(const char* listed) {
  if (listed == nullptr) check(PARLEY_ERROR_INVALID_ARGUMENT);
  std::vector<py::bytes> lines;
  std::string_view rest(listed);
  for (auto end = rest.find('\n'); end != std::string_view::npos; end = rest.find('\n')) {
    lines.emplace_back(std::string(rest.substr(0, end)));
    rest.remove_prefix(end + 1);
  }
  return lines;
}

class Batch {
 public:
  explicit Batch(const Settings& settings)
      : handle_(create<parley_batch>(settings, parley_batch_new_from)) {}
  ~Batch() {
    py::gil_scoped_release release;
    parley_batch_free(handle_);
  }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  std::size_t submit_file(const py::bytes& path_bytes, std::optional<int> num_speakers,
                          std::optional<int> min_speakers, std::optional<int> max_speakers) {
    const std::string path = path_bytes;
    if (path.find('\0') != std::string::npos) {
      throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT,
                        "the path holds a NUL character, which no file name can; pass the file's "
                        "real name");
    }
    const parley_run_options options = run_options(num_speakers, min_speakers, max_speakers);
    std::size_t index = 0;
    check(parley_batch_submit_file(handle_, path.c_str(), &options, &index));
    return index;
  }

  // As submit_file, written into `out_dir` as parley diarize --out-dir writes it (next() gives
  // (index, None) for a recording an earlier run finished).
  std::size_t submit_to(const py::bytes& path_bytes, const py::bytes& out_dir_bytes,
                        const std::string& format, std::optional<py::bytes> name_bytes,
                        std::optional<int> num_speakers, std::optional<int> min_speakers,
                        std::optional<int> max_speakers, bool exclusive) {
    const std::string path = without_nul(path_bytes, "path");
    const std::string out_dir = without_nul(out_dir_bytes, "out_dir");
    const std::optional<std::string> name =
        name_bytes ? std::optional<std::string>(without_nul(*name_bytes, "name")) : std::nullopt;
    const parley_run_options options = run_options(num_speakers, min_speakers, max_speakers);
    std::size_t index = 0;
    parley_status status;
    {
      py::gil_scoped_release release;  // hashes the models the first time
      status = parley_batch_set_exclusive(handle_, exclusive ? 1 : 0);
      if (status == PARLEY_OK) {
        status = parley_batch_submit_to(handle_, path.c_str(), out_dir.c_str(), format.c_str(),
                                        name ? name->c_str() : nullptr, &options, &index);
      }
    }
    check(status);
    return index;
  }

  std::string layout() const { return parley_batch_layout(handle_); }

  double skipped_seconds(std::size_t index) const {
    return parley_batch_skipped_seconds(handle_, index);
  }

  py::tuple counts() const {
    std::size_t done = 0, skipped = 0, failed = 0;
    parley_batch_counts(handle_, &done, &skipped, &failed);
    return py::make_tuple(done, skipped, failed);
  }

  void finish() { parley_batch_finish(handle_); }

  // (index, Result) for the next finished recording, (index, error message) for a failed one,
  // (index, None) for one skipped as finished earlier (submit_to), None once every recording
  // was handed out. Waits in short steps, running Python's signal
  // handlers between them, so that Ctrl-C interrupts the wait.
  py::object next() {
    for (;;) {
      int ready = 0;
      {
        py::gil_scoped_release release;
        ready = parley_batch_wait(handle_, 0.1);
      }
      if (ready) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    parley_result* result = nullptr;
    std::size_t index = 0;
    parley_status status;
    {
      py::gil_scoped_release release;
      status = parley_batch_next_result(handle_, &index, &result);
    }
    if (status == PARLEY_DONE) return py::none();
    if (status == PARLEY_SKIPPED) return py::make_tuple(index, py::none());
    if (status == PARLEY_ERROR_INVALID_ARGUMENT) check(status);  // the call was wrong
    if (status != PARLEY_OK) return py::make_tuple(index, text(parley_last_error()));
    return py::make_tuple(index, Result(ResultHandle(result)));
  }

 private:
  parley_batch* handle_ = nullptr;
};

// The RTTM texts come as bytes: a file name in them need not be UTF-8.
py::tuple score_rttm(const py::bytes& reference_bytes, const py::bytes& hypothesis_bytes,
                     double collar, bool skip_overlap) {
  const std::string reference = reference_bytes;
  const std::string hypothesis = hypothesis_bytes;
  parley_der der{};
  check(
      parley_score_rttm(reference.c_str(), hypothesis.c_str(), collar, skip_overlap ? 1 : 0, &der));
  return py::make_tuple(der.der, der.missed, der.false_alarm, der.confusion, der.total);
}

std::vector<py::bytes> output_names(const std::vector<py::bytes>& paths) {
  std::vector<std::string> texts;
  for (const auto& path : paths) texts.push_back(without_nul(path, "path"));
  std::vector<const char*> pointers;
  for (const auto& text : texts) pointers.push_back(text.c_str());
  return lines_of(parley_output_names(pointers.data(), pointers.size()));
}

std::vector<py::bytes> manifest_paths(const py::bytes& manifest) {
  const std::string path = without_nul(manifest, "manifest");
  return lines_of(parley_manifest_paths(path.c_str()));
}

// The engine's atomic write (core/atomic_file.h, through parley_write_file).
void write_file(const py::bytes& path_bytes, const py::bytes& bytes) {
  const std::string path = without_nul(path_bytes, "path");
  const std::string data = bytes;
  py::gil_scoped_release unlocked;
  check(parley_write_file(path.c_str(), data.data(), data.size()));
}

bool run_finished(const Settings& settings, const py::bytes& path_bytes,
                  const py::bytes& out_dir_bytes, const std::string& format,
                  std::optional<py::bytes> name_bytes, std::optional<int> num_speakers,
                  std::optional<int> min_speakers, std::optional<int> max_speakers) {
  const std::string path = without_nul(path_bytes, "path");
  const std::string out_dir = without_nul(out_dir_bytes, "out_dir");
  const std::optional<std::string> name =
      name_bytes ? std::optional<std::string>(without_nul(*name_bytes, "name")) : std::nullopt;
  const parley_run_options options = run_options(num_speakers, min_speakers, max_speakers);
  int finished = 0;
  parley_status status;
  {
    py::gil_scoped_release release;
    status = parley_run_finished_from(settings.handle(), &options, path.c_str(), out_dir.c_str(),
                                      format.c_str(), name ? name->c_str() : nullptr, &finished);
  }
  check(status);
  return finished != 0;
}
// parley_corpus_plan_json's text, as str (a file name's bytes that are not UTF-8 come as escaped
// lone surrogates, which json.loads keeps as surrogateescape keeps them).
// `out_dir` None: the names and repeats only.
py::str corpus_plan_json(const Settings& settings, const std::vector<py::bytes>& paths,
                         const std::optional<py::bytes>& out_dir_bytes,
                         const std::vector<std::string>& formats) {
  std::vector<std::string> texts;
  for (const auto& path : paths) texts.push_back(without_nul(path, "path"));
  const std::optional<std::string> out_dir =
      out_dir_bytes ? std::optional<std::string>(without_nul(*out_dir_bytes, "out_dir"))
                    : std::nullopt;
  std::vector<const char*> path_pointers;
  for (const auto& text : texts) path_pointers.push_back(text.c_str());
  std::vector<const char*> format_pointers;
  for (const auto& format : formats) format_pointers.push_back(format.c_str());
  struct Free {
    void operator()(char* value) const { parley_free(value); }
  };
  std::unique_ptr<char, Free> plan;
  {
    py::gil_scoped_release release;  // hashes the models the first time
    plan.reset(parley_corpus_plan_json(settings.handle(), path_pointers.data(),
                                       path_pointers.size(), out_dir ? out_dir->c_str() : nullptr,
                                       format_pointers.data(), format_pointers.size()));
  }
  return text(checked(plan.get()));
}

// The speaker library and identification (parley.h, "Who is speaking, by name").
// An identification's named result, in every format with the names' scores.
class NamedResult {
 public:
  explicit NamedResult(parley_identification* identification) : handle_(identification) {}

  py::str format(const std::string& format, bool exclusive,
                 const std::optional<std::string>& uri) const {
    struct Free {
      void operator()(char* value) const { parley_free(value); }
    };
    const std::unique_ptr<char, Free> written(parley_identification_format(
        handle_.get(), format.c_str(), exclusive ? 1 : 0, uri ? uri->c_str() : nullptr));
    return text(checked(written.get()));
  }

 private:
  struct Deleter {
    void operator()(parley_identification* identification) const {
      parley_identification_free(identification);
    }
  };
  std::unique_ptr<parley_identification, Deleter> handle_;
};

class Library {
 public:
  explicit Library(const py::bytes& path_bytes) {
    const std::string path = path_bytes;
    if (path.find('\0') != std::string::npos) {
      throw ParleyError(PARLEY_ERROR_INVALID_ARGUMENT, "the library path holds a NUL character");
    }
    check(parley_library_open(path.c_str(), &handle_));
  }
  ~Library() { parley_library_free(handle_); }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  long long add(const std::string& name, const Diarizer& diarizer, const Result& result,
                std::size_t speaker) {
    long long id = 0;
    check(parley_library_add(handle_, name.c_str(), diarizer.handle(), result.handle(), speaker,
                             &id));
    return id;
  }
  std::string list_json() { return checked(parley_library_list_json(handle_)); }
  std::size_t remove(const std::string& name) {
    std::size_t removed = 0;
    check(parley_library_remove(handle_, name.c_str(), &removed));
    return removed;
  }
  std::size_t rename(const std::string& from, const std::string& to, bool merge) {
    std::size_t renamed = 0;
    check(parley_library_rename(handle_, from.c_str(), to.c_str(), merge ? 1 : 0, &renamed));
    return renamed;
  }
  py::str export_json() { return text(checked(parley_library_export_json(handle_))); }
  // `diarizer` None: no model check.
  std::size_t import_json(const std::string& document, const Diarizer* diarizer) {
    std::size_t imported = 0;
    check(parley_library_import_json(
        handle_, document.c_str(), diarizer != nullptr ? diarizer->handle() : nullptr, &imported));
    return imported;
  }
  // ([(speaker, name, score, confidence)...], the result's JSON with the names, the
  // NamedResult that writes it in every format)
  py::tuple identify(const Diarizer& diarizer, const Result& result, double threshold) {
    parley_identification* identification = nullptr;
    check(parley_identify(handle_, diarizer.handle(), result.handle(), threshold, &identification));
    auto owned = std::make_unique<NamedResult>(identification);
    py::list named;
    for (std::size_t i = 0; i < parley_identification_count(identification); ++i) {
      const parley_named_speaker speaker = parley_identification_speaker(identification, i);
      named.append(
          py::make_tuple(speaker.speaker, text(speaker.name), speaker.score, speaker.confidence));
    }
    py::str json = text(parley_identification_json(identification));
    return py::make_tuple(named, json, py::cast(std::move(owned)));
  }

 private:
  parley_library* handle_ = nullptr;
};

}  // namespace

// A live stream on a Diarizer's models (parley_stream_*); the Diarizer is kept alive with it.
class Stream {
 public:
  Stream(py::object diarizer, double sample_rate, double step, double latency, int max_speakers,
         double match_threshold, bool provisional, bool final_recluster)
      : diarizer_(std::move(diarizer)) {
    parley_stream_params params = parley_default_stream_params();
    params.sample_rate = sample_rate;
    params.step = step;
    params.latency = latency;
    params.max_speakers = max_speakers;
    params.match_threshold = match_threshold;
    params.provisional = provisional ? 1 : 0;
    params.final_recluster = final_recluster ? 1 : 0;
    Diarizer& owner = diarizer_.cast<Diarizer&>();
    check(parley_stream_new(owner.handle(), &params, &handle_));
  }
  ~Stream() { parley_stream_free(handle_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void push_float(const py::array_t<float, py::array::c_style | py::array::forcecast>& samples,
                  int channels) {
    const float* data = samples.data();
    const auto frames =
        static_cast<std::size_t>(samples.size()) / static_cast<std::size_t>(channels);
    const py::gil_scoped_release unlocked;  // other streams go on meanwhile
    check(parley_stream_push(handle_, data, frames, channels));
  }

  void push_s16(const py::array_t<std::int16_t, py::array::c_style | py::array::forcecast>& samples,
                int channels) {
    const std::int16_t* data = samples.data();
    const auto frames =
        static_cast<std::size_t>(samples.size()) / static_cast<std::size_t>(channels);
    const py::gil_scoped_release unlocked;
    check(parley_stream_push_s16(handle_, data, frames, channels));
  }

  // (kind, speaker, start, end, audio_time, latency) of every waiting event.
  std::vector<std::tuple<int, int, double, double, double, double>> poll() {
    std::vector<std::tuple<int, int, double, double, double, double>> events;
    parley_stream_event some[64];
    std::size_t count = 0;
    do {
      check(parley_stream_poll(handle_, some, 64, &count));
      for (std::size_t i = 0; i < count; ++i) {
        events.emplace_back(static_cast<int>(some[i].kind), some[i].speaker, some[i].start,
                            some[i].end, some[i].audio_time, some[i].latency);
      }
    } while (count > 0);
    return events;
  }

  Result finish() {
    parley_result* result = nullptr;
    {
      const py::gil_scoped_release unlocked;
      check(parley_stream_finish(handle_, &result));
    }
    return Result(ResultHandle(result));
  }

 private:
  py::object diarizer_;
  parley_stream* handle_ = nullptr;
};

PYBIND11_MODULE(_parley, module) {
  module.doc() = "parley's C API for Python (use the parley package, not this module)";
  module.def("version", &parley_version, "parley's version, e.g. '0.1.0'");
  module.def("options_json", &parley_options_json,
             "every diarization option of every face, as JSON (parley_options_json)");
  error_type = PyErr_NewExceptionWithDoc(
      "parley.Error", "What parley could not do, in one line that says what to do next.",
      PyExc_Exception, nullptr);
  if (error_type == nullptr) throw py::error_already_set();
  cancelled_type = PyErr_NewExceptionWithDoc(
      "parley.Cancelled", "A progress callback stopped the run (it returned True).", error_type,
      nullptr);
  // Also a ValueError, so that code written for Python's conventions catches it as one.
  const py::tuple invalid_bases =
      py::make_tuple(py::handle(error_type), py::handle(PyExc_ValueError));
  invalid_argument_type = PyErr_NewExceptionWithDoc(
      "parley.InvalidArgument", "An argument parley cannot take; the message names it.",
      invalid_bases.ptr(), nullptr);
  if (cancelled_type == nullptr || invalid_argument_type == nullptr) {
    throw py::error_already_set();
  }
  module.attr("Error") = py::handle(error_type);
  module.attr("Cancelled") = py::handle(cancelled_type);
  module.attr("InvalidArgument") = py::handle(invalid_argument_type);
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const ParleyError& error) {
      PyObject* type = error.status() == PARLEY_ERROR_CANCELLED          ? cancelled_type
                       : error.status() == PARLEY_ERROR_INVALID_ARGUMENT ? invalid_argument_type
                                                                         : error_type;
      // A message may quote a file name that is not UTF-8.
      PyObject* message = PyUnicode_DecodeUTF8(
          error.what(), static_cast<Py_ssize_t>(std::strlen(error.what())), "backslashreplace");
      if (message == nullptr) return;  // the decoding error is set instead
      PyErr_SetObject(type, message);
      Py_DECREF(message);
    }
  });

  py::class_<Result>(module, "Result")
      .def_property_readonly("uri", &Result::uri)
      .def_property_readonly("speed_twin", &Result::speed_twin)
      .def_property_readonly("duration", &Result::duration)
      .def_property_readonly("speaker_count", &Result::speaker_count)
      .def("turns", &Result::turns, py::arg("exclusive"))
      .def("embeddings", &Result::embeddings)
      .def("stage_times", &Result::stage_times)
      .def("warnings", &Result::warnings)
      .def("format", &Result::format, py::arg("format"), py::arg("exclusive"), py::arg("uri"))
      .def("rttm", &Result::rttm, py::arg("uri") = py::none())
      .def("json", &Result::json);

  py::class_<Settings>(module, "Settings")
      .def(py::init<>())
      .def("set", &Settings::set, py::arg("name"), py::arg("value"))
      .def("values_json", &Settings::values_json);

  py::class_<Diarizer>(module, "Diarizer")
      .def(py::init<const Settings&>(), py::arg("settings"))
      .def("warnings", &Diarizer::warnings)
      .def_property_readonly("speed_twin", &Diarizer::speed_twin)
      .def("diarize_file", &Diarizer::diarize_file, py::arg("path"), py::arg("num_speakers"),
           py::arg("min_speakers"), py::arg("max_speakers"), py::arg("progress"))
      .def("diarize_samples", &Diarizer::diarize_samples, py::arg("samples"),
           py::arg("sample_rate"), py::arg("num_speakers"), py::arg("min_speakers"),
           py::arg("max_speakers"), py::arg("progress"));

  py::class_<Batch>(module, "Batch")
      .def(py::init<const Settings&>(), py::arg("settings"))
      .def("submit_file", &Batch::submit_file, py::arg("path"), py::arg("num_speakers"),
           py::arg("min_speakers"), py::arg("max_speakers"))
      .def("submit_to", &Batch::submit_to, py::arg("path"), py::arg("out_dir"), py::arg("format"),
           py::arg("name"), py::arg("num_speakers"), py::arg("min_speakers"),
           py::arg("max_speakers"), py::arg("exclusive") = false)
      .def("layout", &Batch::layout)
      .def("skipped_seconds", &Batch::skipped_seconds, py::arg("index"))
      .def("counts", &Batch::counts)
      .def("finish", &Batch::finish)
      .def("next", &Batch::next);

  module.def("output_names", &output_names, py::arg("paths"));
  module.def("manifest_paths", &manifest_paths, py::arg("manifest"));
  module.def("write_file", &write_file, py::arg("path"), py::arg("bytes"));
  module.def("run_finished", &run_finished, py::arg("settings"), py::arg("path"),
             py::arg("out_dir"), py::arg("format"), py::arg("name"), py::arg("num_speakers"),
             py::arg("min_speakers"), py::arg("max_speakers"));

  module.def("corpus_plan_json", &corpus_plan_json, py::arg("settings"), py::arg("paths"),
             py::arg("out_dir"), py::arg("formats"));

  module.def("score_rttm", &score_rttm, py::arg("reference"), py::arg("hypothesis"),
             py::arg("collar"), py::arg("skip_overlap"));

  py::class_<Library>(module, "Library")
      .def(py::init<const py::bytes&>(), py::arg("path"))
      .def("add", &Library::add, py::arg("name"), py::arg("diarizer"), py::arg("result"),
           py::arg("speaker"))
      .def("list_json", &Library::list_json)
      .def("remove", &Library::remove, py::arg("name"))
      .def("identify", &Library::identify, py::arg("diarizer"), py::arg("result"),
           py::arg("threshold"))
      .def("rename", &Library::rename, py::arg("old"), py::arg("new"), py::arg("merge"))
      .def("export_json", &Library::export_json)
      .def("import_json", &Library::import_json, py::arg("document"), py::arg("diarizer"));
  module.attr("DEFAULT_IDENTIFY_THRESHOLD") = PARLEY_DEFAULT_IDENTIFY_THRESHOLD;
  module.attr("MIN_SAMPLE_RATE") = PARLEY_MIN_SAMPLE_RATE;
  module.attr("MAX_SAMPLE_RATE") = PARLEY_MAX_SAMPLE_RATE;
  module.attr("MAX_STREAM_CHANNELS") = PARLEY_MAX_STREAM_CHANNELS;
  py::class_<NamedResult>(module, "NamedResult")
      .def("format", &NamedResult::format, py::arg("format"), py::arg("exclusive"), py::arg("uri"));

  py::class_<Stream>(module, "Stream")
      .def(py::init<py::object, double, double, double, int, double, bool, bool>(),
           py::arg("diarizer"), py::kw_only(), py::arg("sample_rate"), py::arg("step"),
           py::arg("latency"), py::arg("max_speakers"), py::arg("match_threshold"),
           py::arg("provisional"), py::arg("final_recluster"))
      .def("push_float", &Stream::push_float, py::arg("samples"), py::arg("channels"))
      .def("push_s16", &Stream::push_s16, py::arg("samples"), py::arg("channels"))
      .def("poll", &Stream::poll)
      .def("finish", &Stream::finish);
}
