#include "stages/segmentation.h"

#include "graph/accelerator_rewrite.h"
#include "graph/first_convolution_split.h"
#include "graph/float16_graph.h"
#include "graph/onnx_graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/trace.h"
#include "runtime/compile_cache.h"
#include "runtime/provider.h"

namespace parley::stages {
namespace {

// A dimension that is declared either as `expected` or as dynamic (-1).
bool fits(std::int64_t declared, std::int64_t expected) {
  return declared == expected || declared < 0;
}

bool is_float(ONNXTensorElementDataType type) {
  return type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ||
         type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
}

}  // namespace

void SegmentationConfig::validate() const {
  if (threads < 1) fail("segmentation: thread count must be at least 1 (got {})", threads);
  if (intra_op_threads < 1) {
    fail("segmentation: intra-op thread count must be at least 1 (got {})", intra_op_threads);
  }
  if (batch_size < 1) fail("segmentation: batch size must be at least 1 (got {})", batch_size);
  if (accelerator_sessions < 1) {
    fail("segmentation: accelerator sessions must be at least 1 (got {})", accelerator_sessions);
  }
  if (accelerator_batch_multiple < 1) {
    fail("segmentation: accelerator_batch_multiple must be at least 1 (got {})",
         accelerator_batch_multiple);
  }
  if (samples_per_chunk < 1) fail("segmentation: chunks must hold at least one sample");
  if (float16 && !graph::float16_graph_suits(provider)) {
    fail(
        "segmentation: float16 runs on a dynamic-shape GPU provider such as cuda (got {}); a "
        "static-shape provider has its own float16 option (docs/providers.md)",
        runtime::provider_name(provider));
  }
}

SegmentationSignature SegmentationSignature::from(const runtime::OnnxSession& session) {
  const std::string model = session.model_path().string();
  const std::string expectation =
      "a pyannote segmentation-3.0 model takes waveform float32[batch,1,samples] and returns "
      "float[batch,frames,7]; check that the segmentation model file is segmentation-3.0";
  if (session.inputs().size() != 1 || session.outputs().size() != 1) {
    fail("{}: has {} inputs and {} outputs, expected one of each ({})", model,
         session.inputs().size(), session.outputs().size(), expectation);
  }
  const auto& input = session.inputs()[0];
  const auto& output = session.outputs()[0];
  if (input.element_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT || input.shape.size() != 3 ||
      !fits(input.shape[1], 1)) {
    fail("{}: input is {}, not a mono float32 waveform ({})", model, input.to_string(),
         expectation);
  }
  if (!is_float(output.element_type) || output.shape.size() != 3 || !fits(output.shape[2], 7)) {
    fail("{}: output is {}, not 7 powerset classes per frame ({})", model, output.to_string(),
         expectation);
  }
  if (!fits(input.shape[0], 1) || !fits(output.shape[0], input.shape[0])) {
    fail(
        "{}: batch dimension is declared as {} (input) and {} (output); parley handles a "
        "batch fixed to 1 or a dynamic one ({})",
        model, input.shape[0], output.shape[0], expectation);
  }
  SegmentationSignature signature;
  signature.input_name = input.name;
  signature.output_name = output.name;
  signature.batch_is_dynamic = input.shape[0] < 0;
  signature.declared_samples = input.shape[2];
  const auto metadata = session.metadata();
  const auto folded = metadata.find("parley.sincnet_filters");
  signature.sincnet_folded = folded != metadata.end() && folded->second == "float64-folded";
  return signature;
}

std::string unfolded_fp16_warning(const std::string& model_bytes, const std::string& name) {
  if (!graph::computes_filters_in_float16(model_bytes, name)) return {};
  return fmt::format(
      "{}: this model computes its SincNet filters in float16 and agrees with pyannote on only "
      "~95-97 % of frames; precompute them with `python3 tools/fold_sincnet_filters.py {} "
      "OUT.onnx` (from parley's source) or use a folded model from `parley models list` "
      "(99.6-100 %)",
      name, name);
}

struct SegmentationModel::Worker {
  std::shared_ptr<runtime::OnnxSession> session;  // every batch size (dynamic shapes)
  NdArray<float> input;                           // reused across calls of the same batch size
  std::vector<float> chunk_samples;  // one chunk's samples, when the model's input is not them
};

namespace {

std::shared_ptr<runtime::OnnxSession> open_session(runtime::SessionShare& sessions,
                                                   const std::filesystem::path& path,
                                                   const std::string& rewritten_model,
                                                   const runtime::SessionConfig& config) {
  if (rewritten_model.empty()) return sessions.open(path, config);
  return sessions.open(runtime::ModelBuffer{rewritten_model, path.string()}, config);
}

}  // namespace

SegmentationModel::SegmentationModel(const std::filesystem::path& model_path,
                                     const SegmentationConfig& config,
                                     std::shared_ptr<runtime::SessionShare> sessions)
    : model_path_(model_path),
      sessions_(sessions ? std::move(sessions) : std::make_shared<runtime::SessionShare>()),
      config_(config) {
  config_.validate();
  // Parallelism comes from several single-threaded sessions by default, which keeps every
  // chunk's arithmetic independent of the thread count.
  session_config_.intra_op_threads = config_.intra_op_threads;
  session_config_.optimization = config_.optimization;
  session_config_.provider = config_.provider;
  session_config_.provider_options = config_.provider_options;
  bool batch_made_dynamic = false;
  // The file is read (and parsed by each step below) at most once.
  std::optional<std::string> file_bytes;
  const auto model_bytes = [&]() -> const std::string& {
    if (!file_bytes) file_bytes = graph::read_model_bytes(model_path_);
    return *file_bytes;
  };
  if (config_.provider != runtime::ProviderId::kCpu) {
    // ORT 1.29's CUDA provider crashes on the export's SincNet `If` and the LSTMs' zero-state
    // chain; removing both is exact (docs/providers.md, "Segmentation on CUDA"). The batch is made
    // dynamic so that an accelerator runs `batch_size` chunks per call.
    const auto rewrite = graph::rewrite_for_accelerator(model_bytes(), model_path_.string());
    if (rewrite.changed()) rewritten_model_ = rewrite.model;
    batch_made_dynamic = rewrite.batch_dynamic;
    if (config_.float16) {
      rewritten_model_ = graph::convert_to_float16(rewrite.model, model_path_.string()).model;
    }
    spdlog::debug("{}: for {}: {}", model_path_.string(), runtime::provider_name(config_.provider),
                  rewrite.describe());
  } else if (config_.batch_size > 1 &&
             !(cpu_float16_ = graph::has_float16_constants(model_bytes(), model_path_.string()))) {
    // On the CPU, several chunks per call turn the LSTMs' matrix-vector products into matrix
    // products. An export whose batch is fixed to 1 gets the same exact rewrite as for
    // accelerators, which makes its batch dynamic.
    const auto rewrite = graph::rewrite_for_accelerator(model_bytes(), model_path_.string());
    if (rewrite.batch_dynamic) {
      rewritten_model_ = rewrite.model;
      batch_made_dynamic = true;
      spdlog::debug("{}: for batches on the CPU: {}", model_path_.string(), rewrite.describe());
    }
  }
  static_shapes_ = runtime::traits(config_.provider).static_shapes;
  auto first = std::make_unique<Worker>();
  if (static_shapes_) {
    // The compiled-graph cache is keyed by a model file's digest: the rewritten model is kept on
    // disk under its own digest, where warm-cache and the placement look for it too.
    const auto root = runtime::CompileCache::root_or_default(config_.compile_cache_root);
    const auto file = graph::accelerator_model_file(model_path_, root / "models");
    compiled_model_ = {file.path, file.sha256, model_path_.string()};
    compiled_sessions_ = std::make_unique<runtime::ShapedSessionPool>(root, session_config_);
    const std::size_t batch = config_.batch_buckets ? config_.batch_buckets->smallest() : 1;
    signature_ = SegmentationSignature::from(compiled_session(batch));
    // That session reports the batch it was pinned to; the model itself takes any.
    signature_.batch_is_dynamic = batch_made_dynamic;
  } else {
    first->session = open_session(*sessions_, model_path_, rewritten_model_, session_config_);
    signature_ = SegmentationSignature::from(*first->session);
  }
  if (config_.share_first_convolution && config_.provider == runtime::ProviderId::kCpu &&
      !static_shapes_) {
    if (auto split = graph::split_first_convolution(
            rewritten_model_.empty() ? model_bytes() : rewritten_model_, model_path_.string())) {
      // Blocks in use: those of the chunks in flight, plus a chunk's ten seconds ahead.
      const std::size_t in_flight =
          static_cast<std::size_t>(std::max(config_.threads, 1)) * effective_batch_size();
      first_convolution_ = std::make_unique<SharedFirstConvolution>(
          *split, session_config_, 2 * in_flight + 16, model_path_.string());
      rest_model_ = std::move(split->rest_model);
      rest_input_ = split->rest_input;
      first->session = open_session(*sessions_, model_path_, rest_model_, session_config_);
      spdlog::debug("{}: {}, shared across chunks", model_path_.string(), split->to_string());
    }
  }
  workers_.push_back(std::move(first));
  if (signature_.declared_samples > 0 &&
      static_cast<std::size_t>(signature_.declared_samples) != config_.samples_per_chunk) {
    fail(
        "{}: takes chunks of {} samples, but the pipeline cuts {} (10 s at 16 kHz); use a "
        "segmentation-3.0 model exported for 10 s chunks or with a dynamic length",
        model_path_.string(), signature_.declared_samples, config_.samples_per_chunk);
  }
  if (const auto warning = unfolded_fp16_warning(model_bytes(), model_path_.string());
      !warning.empty()) {
    spdlog::warn("{}", warning);
  }
  // On a static-shape provider every session compiles its buckets: one session, so that a
  // bucket is never compiled twice at once into the same cache entry.
  const int worker_count = config_.provider == runtime::ProviderId::kCpu ? config_.threads
                           : static_shapes_                              ? 1
                                            : config_.accelerator_sessions;
  for (int worker = 1; worker < worker_count; ++worker) {
    auto next = std::make_unique<Worker>();
    if (!static_shapes_) {
      next->session =
          open_session(*sessions_, model_path_, first_convolution_ ? rest_model_ : rewritten_model_,
                       session_config_);
    }
    workers_.push_back(std::move(next));
  }
}

SegmentationModel::~SegmentationModel() = default;

runtime::OnnxSession& SegmentationModel::compiled_session(std::size_t batch) {
  const auto samples = static_cast<std::int64_t>(config_.samples_per_chunk);
  const auto chunks = static_cast<std::int64_t>(batch);
  return compiled_sessions_->session_for(compiled_model_, {{"waveform", {chunks, 1, samples}}},
                                         {{"batch", chunks}, {"samples", samples}});
}

runtime::OnnxSession& SegmentationModel::session_for(Worker& worker, std::size_t batch) {
  return static_shapes_ ? compiled_session(batch) : *worker.session;
}

std::size_t SegmentationModel::effective_batch_size() const {
  return signature_.batch_is_dynamic && !cpu_float16_ ? config_.batch_size : 1;
}

std::size_t SegmentationModel::accelerator_chunks_in_flight() const {
  if (config_.provider == runtime::ProviderId::kCpu) return 0;
  const int calls = static_shapes_ ? 1 : config_.accelerator_sessions;
  return effective_batch_size() * static_cast<std::size_t>(std::max(calls, 1));
}

std::vector<runtime::BatchSlice> SegmentationModel::plan_calls(std::size_t chunk_count,
                                                               std::size_t rows) const {
  const std::size_t batch_size = effective_batch_size();
  if (config_.batch_buckets && signature_.batch_is_dynamic) {
    return runtime::plan_batches(chunk_count, *config_.batch_buckets, batch_size);
  }
  const SegmentationCallPadding padding = config_.provider == runtime::ProviderId::kCpu
                                              ? SegmentationCallPadding::kWholeBatch
                                          : static_shapes_ ? SegmentationCallPadding::kNone
                                                           : SegmentationCallPadding::kMultiple;
  return plan_unbucketed_calls(chunk_count, batch_size, padding, config_.accelerator_batch_multiple,
                               rows);
}

std::vector<runtime::BatchSlice> plan_unbucketed_calls(std::size_t chunk_count,
                                                       std::size_t batch_size,
                                                       SegmentationCallPadding padding,
                                                       std::size_t accelerator_multiple,
                                                       std::size_t rows) {
  // A static-shape provider compiles the batch it is given: capping it would compile one more.
  if (rows > 0 && padding != SegmentationCallPadding::kNone) {
    batch_size = std::min(batch_size, rows);
    return plan_padded_calls(chunk_count, batch_size, batch_size);
  }
  // On the CPU every call is padded to the whole batch: a row's result does not depend on the
  // other rows of a matrix product, but a call of one chunk takes the matrix-vector kernels.
  // Padded, a chunk's arithmetic is the same wherever it falls (last call of a run, or among
  // another recording's chunks in a corpus batch).
  const std::size_t multiple = padding == SegmentationCallPadding::kWholeBatch ? batch_size
                               : padding == SegmentationCallPadding::kNone     ? 1
                                                                           : accelerator_multiple;
  return plan_padded_calls(chunk_count, batch_size, multiple);
}

std::vector<runtime::BatchSlice> plan_padded_calls(std::size_t chunk_count, std::size_t batch_size,
                                                   std::size_t multiple) {
  if (batch_size < 1 || multiple < 1) {
    fail("plan_padded_calls: batch size and multiple must be at least 1 (got {} and {})",
         batch_size, multiple);
  }
  std::vector<runtime::BatchSlice> plan;
  for (std::size_t offset = 0; offset < chunk_count; offset += batch_size) {
    const std::size_t count = std::min(batch_size, chunk_count - offset);
    const std::size_t padded = std::min(batch_size, (count + multiple - 1) / multiple * multiple);
    plan.push_back({offset, count, padded});
  }
  return plan;
}

void SegmentationModel::run(std::size_t chunk_count, SegmentationFeed& feed, std::size_t rows) {
  const std::size_t samples = config_.samples_per_chunk;
  const std::vector<runtime::BatchSlice> calls = plan_calls(chunk_count, rows);
  const std::size_t batch_count = calls.size();
  std::vector<NdArray<float>> batch_outputs(batch_count);

  std::atomic<std::size_t> next_batch{0};
  std::atomic<bool> stop{false};
  std::mutex report_mutex;
  std::size_t chunks_done = 0;
  std::size_t next_batch_to_report = 0;
  std::size_t frames = 0;  // per chunk, from the first batch done
  std::exception_ptr first_error;
  // Accelerators may pick kernels by what else is in the call, so only the CPU reuses
  // (config_.reuse_silent_chunks), and only calls whose every row is a silent chunk.
  const bool reuse_silence = config_.reuse_silent_chunks &&
                             config_.provider == runtime::ProviderId::kCpu && !static_shapes_;
  std::mutex silence_mutex;
  NdArray<float> silent_output;  // [1, frames, classes] of an all-zero chunk, once it has run
  // Log-probabilities are at most 0 (-inf is possible); NaN or +inf comes from a damaged model
  // and decoded as silence: exit 0 with no turns.
  const auto fail_on_damaged_scores = [this](const NdArray<float>& scores) {
    if (std::any_of(scores.values().begin(), scores.values().end(),
                    [](float value) { return std::isnan(value) || value == HUGE_VALF; })) {
      fail(
          "{}: returned NaN or infinite scores; the model is damaged (check it with `parley "
          "models verify`, or fetch it again)",
          model_path_.string());
    }
  };

  // With a shared first convolution the model's input is the convolution's frames of each chunk.
  // A chunk with no usable origin is its own recording (a key no recording of the feed has).
  struct ClearOnExit {
    SharedFirstConvolution* convolution;
    ~ClearOnExit() {
      if (convolution) convolution->clear();
    }
  } clear_on_exit{first_convolution_.get()};
  const std::size_t row_values =
      first_convolution_ ? static_cast<std::size_t>(first_convolution_->filters() *
                                                    first_convolution_->frames_per_chunk(
                                                        static_cast<std::int64_t>(samples)))
                         : samples;
  const auto fill_input = [&](Worker& worker, std::size_t chunk, std::size_t row) {
    const std::span<float> target(worker.input.data() + row * row_values, row_values);
    if (!first_convolution_) {
      feed.read_chunk(chunk, target);
      return std::all_of(target.begin(), target.end(), [](float value) { return value == 0.f; });
    }
    worker.chunk_samples.assign(samples, 0.f);
    feed.read_chunk(chunk, worker.chunk_samples);
    std::optional<SegmentationFeed::ChunkOrigin> origin = feed.origin(chunk);
    if (!origin || origin->start_sample % first_convolution_->stride() != 0) {
      constexpr std::size_t kOwnRecording = std::size_t{1} << 62;
      origin = SegmentationFeed::ChunkOrigin{kOwnRecording + chunk, worker.chunk_samples, 0};
    }
    first_convolution_->chunk_input(origin->recording, origin->samples, origin->start_sample,
                                    worker.chunk_samples, target);
    return std::all_of(worker.chunk_samples.begin(), worker.chunk_samples.end(),
                       [](float value) { return value == 0.f; });
  };
  const std::string& input_name = first_convolution_ ? rest_input_ : signature_.input_name;

  const std::size_t worker_threads = std::min(workers_.size(), batch_count);
  // Traced (core/trace.h), each worker's calls go on a track of their own in the caller's trace.
  const TraceLane caller = current_trace_lane();
  auto work = [&](std::size_t worker_index) {
    Worker& worker = *workers_[worker_index];
    const TraceLaneBinding binding(
        caller ? caller.on_track(kTraceSegmentationWorkerTrack +
                                 static_cast<std::uint32_t>(worker_index))
               : TraceLane{},
        caller ? fmt::format("segmentation worker {}", worker_index) : std::string());
    try {
      while (!stop.load()) {
        const std::size_t batch = next_batch.fetch_add(1);
        if (batch >= batch_count) break;
        const runtime::BatchSlice& call = calls[batch];
        // The call from its input to its scores handed on (the model's run is an event of its
        // own inside it, runtime/onnx_session.cpp).
        TraceSpan traced_call("segmentation call");
        if (traced_call) {
          traced_call.args()
              .number("first_chunk", static_cast<double>(call.offset))
              .number("chunks", static_cast<double>(call.count))
              .number("batch", static_cast<double>(call.bucket));
        }
        if (worker.input.empty() || worker.input.dim(0) != call.bucket) {
          worker.input =
              first_convolution_
                  ? NdArray<float>(
                        {call.bucket, static_cast<std::size_t>(first_convolution_->filters()),
                         row_values / static_cast<std::size_t>(first_convolution_->filters())})
                  : NdArray<float>({call.bucket, 1, samples});
        }
        // Padding rows stay zero: chunks are independent, so they change no real row.
        std::fill(worker.input.data(), worker.input.data() + worker.input.size(), 0.f);
        bool all_silent = true;
        for (std::size_t i = 0; i < call.count; ++i) {
          all_silent = fill_input(worker, call.offset + i, i) && all_silent;
        }
        // A whole call of silent chunks has the same input as any other (padding rows are
        // zero, but a silent chunk's row after the shared convolution need not be).
        const bool silent = reuse_silence && call.count == call.bucket && all_silent;
        std::vector<NdArray<float>> outputs;
        if (silent) {
          const std::lock_guard lock(silence_mutex);
          if (!silent_output.empty() && silent_output.dim(0) == call.bucket) {
            outputs.push_back(silent_output);
          }
        }
        if (outputs.empty()) {
          // A worker's last call of the run hands its arena back (it grows with the batch):
          // kept, it would sit idle through embedding's tail and clustering.
          const bool last_of_worker = batch + worker_threads >= batch_count;
          outputs = session_for(worker, call.bucket)
                        .run({{input_name, &worker.input}}, {signature_.output_name},
                             last_of_worker && config_.provider == runtime::ProviderId::kCpu);
          if (silent) {
            const std::lock_guard lock(silence_mutex);
            silent_output = outputs.front();
          }
        }
        NdArray<float>& output = outputs.front();
        if (output.rank() != 3 || output.dim(0) != call.bucket ||
            output.dim(2) != static_cast<std::size_t>(signature_.classes)) {
          fail("{}: returned shape [{}] for {} chunk(s); expected [{},frames,{}]",
               model_path_.string(), fmt::join(output.shape(), ","), call.bucket, call.bucket,
               signature_.classes);
        }
        // The padding rows' scores are dropped unread: only the chunks' own are checked.
        NdArray<float> kept =
            call.padding() == 0 ? std::move(output) : runtime::truncate_axis(output, 0, call.count);
        fail_on_damaged_scores(kept);
        // Scores go on in chunk order: a worker may wait here for an earlier call's, and the
        // hand-on itself for room in the embedding side's queue.
        const TraceSpan handing_on("segmentation hand-on", kTraceWait);
        std::lock_guard lock(report_mutex);
        if (frames == 0) frames = kept.dim(1);
        if (kept.dim(1) != frames) {
          fail("{}: returned {} frames for one batch and {} for another of equal-length chunks",
               model_path_.string(), kept.dim(1), frames);
        }
        batch_outputs[batch] = std::move(kept);
        chunks_done += call.count;
        feed.chunks_done(chunks_done);
        // Batches finish out of order across workers; they are handed on in chunk order.
        while (next_batch_to_report < batch_count && !batch_outputs[next_batch_to_report].empty()) {
          // Handed on, not kept: kept here they would hold every chunk's scores until the end
          // (59 MB an hour at a 1 s step), which a feed may keep in a smaller form.
          feed.take_scores(calls[next_batch_to_report].offset,
                           std::exchange(batch_outputs[next_batch_to_report], NdArray<float>()));
          ++next_batch_to_report;
        }
      }
    } catch (...) {
      stop.store(true);
      std::lock_guard lock(report_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };

  if (worker_threads <= 1) {
    work(0);
  } else {
    // jthreads join on destruction, also when starting a later one throws.
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < worker_threads; ++t) threads.emplace_back(work, t);
    threads.clear();
  }
  if (first_error) std::rethrow_exception(first_error);

  if (batch_count > 0 && frames == 0) {
    fail(
        "{}: returned 0 frames for a chunk of {} samples; the model is not a segmentation model "
        "or is damaged (check it with `parley models verify`)",
        model_path_.string(), config_.samples_per_chunk);
  }
}

NdArray<float> SegmentationModel::run(const NdArray<float>& chunks, std::size_t rows) {
  if (chunks.rank() != 2 || chunks.dim(1) != config_.samples_per_chunk) {
    fail("segmentation: chunks must be [chunk_count, {}] samples, got [{}]",
         config_.samples_per_chunk, fmt::join(chunks.shape(), ","));
  }
  // Rows of `chunks`, copied as they are read.
  class CutChunks final : public ScoreKeepingFeed {
   public:
    explicit CutChunks(const NdArray<float>& chunks) : chunks_(chunks) {}
    void read_chunk(std::size_t chunk, std::span<float> samples) override {
      std::memcpy(samples.data(), chunks_.data() + chunk * samples.size(),
                  samples.size() * sizeof(float));
    }

   private:
    const NdArray<float>& chunks_;
  } feed(chunks);
  run(chunks.dim(0), feed, rows);
  if (chunks.dim(0) == 0) {
    return NdArray<float>({0, 0, static_cast<std::size_t>(signature_.classes)});
  }
  return feed.take_all();
}

}  // namespace parley::stages
