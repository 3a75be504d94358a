// `parley stream FILE|-`: live diarization of a recording or of WAV or raw PCM arriving on
// standard input, printing speaker-turn events as JSON lines while the audio goes by
// (docs/live.md).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include "audio/audio_source.h"
#include "audio/mono_resampled_stream.h"
#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "core/error.h"
#include "core/sample_rate.h"
#include "models/speed_twin.h"
#include "stream/pcm_input.h"
#include "stream/real_time_pacer.h"
#include "stream/stream_diarizer.h"
#include "stream/stream_options.h"

namespace parley::cli {
namespace {

struct StreamArguments {
  std::string input;
  DiarizationFlags flags;
  EngineFlags engine;
  stream::StreamConfig config;
  bool raw = false;
  double raw_rate = 16000.0;
  std::string raw_format = "s16le";  // from --format when it names a sample format
  int raw_channels = 1;
  bool realtime = false;
  std::string embedding = "auto";  // --stream-embedding
};

using Clock = std::chrono::steady_clock;

// --realtime: a pacer holding each block back until it would have been captured, its arrival
// stated to push(); as fast as possible, none (the audio counts as arriving when pushed).
std::optional<stream::RealTimePacer> pacer(bool realtime, double rate) {
  if (!realtime) return std::nullopt;
  return stream::RealTimePacer(rate, Clock::now());
}

std::optional<Clock::time_point> arrive(std::optional<stream::RealTimePacer>& pacer,
                                        std::size_t frames) {
  if (!pacer) return std::nullopt;
  return pacer->arrive(frames);
}

// SIGINT and SIGTERM end the stream as the end of its input does (the last events, the -o file);
// a second one aborts. The signals are blocked from construction on, in this thread and in every
// thread started later (the engine's inherit the mask), and taken by one watcher thread, which
// wakes a reader waiting for input through a pipe.
class StopOnSignal {
 public:
  StopOnSignal() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
    if (::pipe(wake_.data()) != 0) fail("cannot create a pipe: {}", std::strerror(errno));
    watcher_ = std::thread([this] { watch(); });
  }
  ~StopOnSignal() {
    closing_ = true;
    pthread_kill(watcher_.native_handle(), SIGTERM);
    watcher_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  bool requested() const { return requested_; }
  int wake_fd() const { return wake_[0]; }

 private:
  void watch() {
    for (;;) {
      int number = 0;
      if (sigwait(&signals_, &number) != 0 || closing_) return;
      if (!requested_.exchange(true)) {
        spdlog::warn("{}: ending the stream as at the end of its input (again to abort)",
                     strsignal(number));
        const char byte = 1;
        static_cast<void>(::write(wake_[1], &byte, 1));
        continue;
      }
      // The second signal: its default action, which ends the process.
      std::signal(number, SIG_DFL);
      pthread_sigmask(SIG_UNBLOCK, &signals_, nullptr);
      std::raise(number);
    }
  }

  sigset_t signals_{};
  sigset_t previous_{};
  std::array<int, 2> wake_{-1, -1};
  std::atomic<bool> requested_{false};
  std::atomic<bool> closing_{false};
  std::thread watcher_;
};

// Reads what `fd` has (at most `into.size()` bytes, waiting for some); 0 at its end or once a
// signal asked the stream to stop.
std::size_t read_some(int fd, std::span<unsigned char> into, const StopOnSignal& stop,
                      const std::string& name) {
  std::array<pollfd, 2> waits{{{fd, POLLIN, 0}, {stop.wake_fd(), POLLIN, 0}}};
  for (;;) {
    if (stop.requested()) return 0;
    if (::poll(waits.data(), waits.size(), -1) < 0) {
      if (errno == EINTR) continue;
      fail("cannot wait for {}: {}", name, std::strerror(errno));
    }
    if (waits[1].revents != 0) return 0;
    const ssize_t got = ::read(fd, into.data(), into.size());
    if (got >= 0) return static_cast<std::size_t>(got);
    if (errno != EINTR && errno != EAGAIN) fail("cannot read {}: {}", name, std::strerror(errno));
  }
}

void print_events(stream::StreamDiarizer& diarizer) {
  for (const stream::StreamEvent& event : diarizer.take_events()) {
    const std::string line = event.to_json() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() ||
        std::fflush(stdout) != 0) {
      fail("cannot write the events to standard output: {}", std::strerror(errno));
    }
  }
}

// A file the audio layer decodes, pushed at 16 kHz in 20 ms blocks.
void stream_file(const StreamArguments& arguments, stream::StreamDiarizer& diarizer,
                 const StopOnSignal& stop) {
  audio::MonoResampledStream audio(arguments.input);
  std::vector<float> block(static_cast<std::size_t>(kSampleRate / 50));
  std::optional<stream::RealTimePacer> paced = pacer(arguments.realtime, kSampleRate);
  while (!stop.requested()) {
    const std::size_t n = audio.read(block);
    if (n == 0) break;
    diarizer.push(std::span<const float>(block).first(n), arrive(paced, n));
    print_events(diarizer);
  }
}

// What headerless PCM is: from --rate, --format and --channels, or from a WAV header.
struct PcmShape {
  double rate = 16000.0;
  stream::PcmFormat format = stream::PcmFormat::kS16le;
  int channels = 1;
};

// A file or standard input read in whatever pieces read() returns, with bytes looked at ahead
// (a WAV header's) given back first.
class PcmInput {
 public:
  PcmInput(const std::string& input, const StopOnSignal& stop)
      : name_(input == "-" ? std::string("standard input") : input), stop_(stop) {
    if (input != "-") {
      fd_ = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) fail("cannot open {}: {}", input, std::strerror(errno));
      owned_ = true;
    }
  }
  ~PcmInput() {
    if (owned_) ::close(fd_);
  }
  PcmInput(const PcmInput&) = delete;
  PcmInput& operator=(const PcmInput&) = delete;

  const std::string& name() const { return name_; }

  // Some bytes (at most into.size()); 0 at the end of the input or once a signal stops it.
  std::size_t read(std::span<unsigned char> into) {
    if (!ahead_.empty()) {
      const std::size_t n = std::min(into.size(), ahead_.size());
      std::memcpy(into.data(), ahead_.data(), n);
      ahead_.erase(ahead_.begin(), ahead_.begin() + static_cast<std::ptrdiff_t>(n));
      return n;
    }
    return read_some(fd_, into, stop_, name_);
  }

  // Exactly `count` bytes, fewer only where the input ends (or a signal stops it) first.
  std::vector<unsigned char> read_exactly(std::size_t count) {
    std::vector<unsigned char> bytes(count);
    std::size_t got = 0;
    while (got < count) {
      const std::size_t n = read(std::span(bytes).subspan(got));
      if (n == 0) break;
      got += n;
    }
    bytes.resize(got);
    return bytes;
  }

  // Gives `bytes` back to be read again first.
  void unread(std::vector<unsigned char> bytes) {
    bytes.insert(bytes.end(), ahead_.begin(), ahead_.end());
    ahead_ = std::move(bytes);
  }

 private:
  std::string name_;
  const StopOnSignal& stop_;
  int fd_ = STDIN_FILENO;
  bool owned_ = false;
  std::vector<unsigned char> ahead_;
};

std::uint32_t little_endian(const std::vector<unsigned char>& bytes, std::size_t at,
                            std::size_t size) {
  std::uint32_t value = 0;
  for (std::size_t k = size; k-- > 0;) value = (value << 8) | bytes[at + k];
  return value;
}

bool starts_with_riff(const std::vector<unsigned char>& bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "RIFF", 4) == 0;
}

// A WAV stream's header, read from a pipe as it comes (no seeking): the shape of its samples,
// and the bytes its data chunk declares (none: until the input ends, as ffmpeg and arecord
// declare 0xFFFFFFFF or a huge size when they write to a pipe). The input is left at the first
// sample. Takes 16-bit PCM and 32-bit float, what ffmpeg (-f wav) and arecord write by default or
// on request.
std::pair<PcmShape, std::optional<std::uint64_t>> read_wav_header(PcmInput& input) {
  const std::string& name = input.name();
  const std::vector<unsigned char> riff = input.read_exactly(12);
  if (riff.size() < 12 || !starts_with_riff(riff) || std::memcmp(riff.data() + 8, "WAVE", 4) != 0) {
    fail("{}: starts with RIFF but is not a WAVE stream (or ends inside its header)", name);
  }
  std::optional<PcmShape> shape;
  for (;;) {
    const std::vector<unsigned char> chunk = input.read_exactly(8);
    if (chunk.size() < 8) fail("{}: the WAV stream ends before its data chunk", name);
    const std::string id(chunk.begin(), chunk.begin() + 4);
    const std::uint32_t size = little_endian(chunk, 4, 4);
    if (id == "data") {
      if (!shape) fail("{}: the WAV stream has no fmt chunk before its data", name);
      std::optional<std::uint64_t> declared;
      if (size != 0 && size != 0xFFFFFFFFU) declared = size;
      return {*shape, declared};
    }
    // Chunks are padded to an even size. A fmt chunk is at most a few dozen bytes; others
    // (LIST, fact) are skipped a piece at a time.
    std::uint64_t left = std::uint64_t{size} + (size % 2);
    if (id == "fmt ") {
      if (size < 16 || size > 1024) fail("{}: the WAV stream's fmt chunk is damaged", name);
      const std::vector<unsigned char> fmt = input.read_exactly(static_cast<std::size_t>(left));
      if (fmt.size() < left) fail("{}: the WAV stream ends inside its fmt chunk", name);
      std::uint32_t tag = little_endian(fmt, 0, 2);
      // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID starts with the tag.
      if (tag == 0xFFFE && size >= 26) tag = little_endian(fmt, 24, 2);
      const std::uint32_t bits = little_endian(fmt, 14, 2);
      PcmShape found;
      found.channels = static_cast<int>(little_endian(fmt, 2, 2));
      found.rate = little_endian(fmt, 4, 4);
      if (tag == 1 && bits == 16) {
        found.format = stream::PcmFormat::kS16le;
      } else if (tag == 3 && bits == 32) {
        found.format = stream::PcmFormat::kF32le;
      } else {
        fail(
            "{}: WAV of format {} with {}-bit samples is not read from a pipe; send 16-bit PCM "
            "(ffmpeg -c:a pcm_s16le, arecord -f S16_LE) or 32-bit float, or give a file",
            name, tag, bits);
      }
      if (found.channels < 1 || found.channels > 64 || found.rate < audio::kMinSampleRate ||
          found.rate > audio::kMaxSampleRate) {
        fail(
            "{}: the WAV stream declares {} channels at {} Hz; parley takes 1 to 64 channels at "
            "{} to {} Hz",
            name, found.channels, found.rate, audio::kMinSampleRate, audio::kMaxSampleRate);
      }
      shape = found;
      continue;
    }
    while (left > 0) {
      const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(left, 65536));
      const std::vector<unsigned char> skipped = input.read_exactly(piece);
      if (skipped.size() < piece) fail("{}: the WAV stream ends before its data chunk", name);
      left -= piece;
    }
  }
}

// PCM of `shape` from `input` (at most `limit` bytes), pushed as it comes.
void stream_pcm(const StreamArguments& arguments, PcmInput& input, const PcmShape& shape,
                std::optional<std::uint64_t> limit, stream::StreamDiarizer& diarizer) {
  const std::size_t frame_bytes =
      stream::pcm_sample_bytes(shape.format) * static_cast<std::size_t>(shape.channels);
  // 20 ms of input per read, whole frames; a partial frame waits for the next read.
  std::vector<unsigned char> bytes(
      std::max<std::size_t>(1, static_cast<std::size_t>(shape.rate / 50)) * frame_bytes);
  std::vector<unsigned char> carry;
  std::optional<stream::RealTimePacer> paced = pacer(arguments.realtime, shape.rate);
  for (;;) {
    std::span<unsigned char> into(bytes);
    if (limit)
      into = into.first(static_cast<std::size_t>(std::min<std::uint64_t>(*limit, into.size())));
    const std::size_t got = into.empty() ? 0 : input.read(into);
    if (got == 0) break;
    if (limit) *limit -= got;
    carry.insert(carry.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(got));
    const std::size_t whole = carry.size() / frame_bytes * frame_bytes;
    const std::optional<Clock::time_point> arrival = arrive(paced, whole / frame_bytes);
    try {
      stream::push_pcm(diarizer, std::span(carry).first(whole), shape.format, shape.channels,
                       arrival);
    } catch (const Error& error) {
      fail("{}: {}", input.name(), error.what());
    }
    carry.erase(carry.begin(), carry.begin() + static_cast<std::ptrdiff_t>(whole));
    print_events(diarizer);
  }
  if (!carry.empty()) {
    spdlog::warn("{}: the input ended inside a sample frame; its last {} bytes were ignored",
                 input.name(), carry.size());
  }
}

// The batch clustering's flags, which only --final-recluster's diarization of the whole stream
// reads (the live clustering has --max-speakers and --match-threshold).
constexpr std::array<const char*, 4> kReclusterFlags = {"--num-speakers", "--min-speakers",
                                                        "--clustering", "--ahc-threshold"};

// Refuses flags that would be ignored: the sample format, rate and channels of a decoded file,
// the batch clustering without --final-recluster, --final-recluster without -o (its result is
// written nowhere else), and -o - (standard output carries the events).
void refuse_ignored_flags(const StreamArguments& arguments, const CLI::App& command) {
  const auto given = [&](const char* flag) { return command.get_option(flag)->count() > 0; };
  if (!arguments.raw) {
    const bool sample_format =
        arguments.flags.format == "s16le" || arguments.flags.format == "f32le";
    for (const char* flag : {"--rate", "--channels", "--format"}) {
      const bool format = std::string_view(flag) == "--format";
      if (given(flag) && (!format || sample_format)) {
        fail(
            "{}{} describes headerless PCM: add --raw to read {} as raw samples; a recording is "
            "decoded with the format, rate and channels of its header",
            flag, format ? " " + arguments.flags.format : std::string(), arguments.input);
      }
    }
  }
  for (const char* flag : kReclusterFlags) {
    if (given(flag) && !arguments.config.final_recluster) {
      fail(
          "{} applies only with --final-recluster (the batch diarization of the whole stream); "
          "the live clustering takes --max-speakers and --match-threshold",
          flag);
    }
  }
  if (arguments.config.final_recluster && !given("--out")) {
    fail(
        "--final-recluster writes its batch diarization of the whole stream only to the -o file: "
        "give -o FILE, or leave --final-recluster out (the events on standard output are the "
        "live ones either way)");
  }
  if (given("--out") && arguments.flags.out == "-") {
    fail(
        "-o - cannot be used: standard output carries the events (JSON lines); give -o a file for "
        "the final result");
  }
}

void run_stream(StreamArguments arguments, const CLI::App& command) {
  refuse_ignored_flags(arguments, command);
  // --format is shared: a sample format describes --raw input, anything else the -o file.
  if (arguments.flags.format == "s16le" || arguments.flags.format == "f32le") {
    arguments.raw_format = std::exchange(arguments.flags.format, std::string());
  }
  const DiarizationFlags& flags = arguments.flags;
  const std::string& format = flags.format;
  if (!format.empty() && format != "rttm" && format != "json" && format != "txt" &&
      format != "srt" && format != "vtt") {
    fail(
        "--format takes s16le or f32le (raw input) or rttm, json, txt, srt, vtt (the -o file); "
        "got {}",
        format);
  }
  const bool from_stdin = arguments.input == "-";
  stream::StreamConfig& config = arguments.config;
  config.sample_rate = arguments.raw ? arguments.raw_rate : kSampleRate;
  if (flags.max_speakers) config.max_speakers = static_cast<std::size_t>(*flags.max_speakers);
  config.embedding = stream::parse_stream_embedding(arguments.embedding);
  config.validate();
  if (!arguments.raw && !from_stdin) {
    // A typo fails before the models load.
    static_cast<void>(audio::open_audio_source(arguments.input));
  }
  const OutputOptions output_options{.overwrite_read_only = flags.force};
  const bool write_result = flags.out != "-";
  if (write_result) check_output_file("--out", flags.out, output_options);

  // Before the models load: their threads inherit the blocked signals.
  const StopOnSignal stop;
  // Raw PCM, or WAV from a pipe: its header is read as it comes, before the models load, so that
  // what is not WAV fails at once.
  std::optional<PcmInput> pcm;
  PcmShape shape{
      arguments.raw_rate,
      arguments.raw_format == "f32le" ? stream::PcmFormat::kF32le : stream::PcmFormat::kS16le,
      arguments.raw_channels};
  std::optional<std::uint64_t> limit;
  if (arguments.raw || from_stdin) {
    pcm.emplace(arguments.input, stop);
    std::vector<unsigned char> head = pcm->read_exactly(4);
    const bool wav = starts_with_riff(head);
    pcm->unread(std::move(head));
    if (from_stdin && !arguments.raw) {
      if (!wav && !stop.requested()) {
        fail(
            "standard input does not start with a WAV header (RIFF): for headerless PCM add --raw "
            "with --rate, --format and --channels");
      }
      if (wav) std::tie(shape, limit) = read_wav_header(*pcm);
      config.sample_rate = shape.rate;
      config.validate();
    } else if (wav) {
      spdlog::warn(
          "{} starts with a WAV header (RIFF), read as samples because of --raw (leave --raw "
          "out to read it as WAV)",
          pcm->name());
    }
  }
  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, flags);
  // Loud on purpose, even with --quiet (as `parley diarize`): labels from a twin are noise.
  models::warn_if_speed_twin(paths.embedding);
  const stream::StreamModels models(paths, diarization_config(arguments.engine, flags));
  stream::StreamDiarizer diarizer(models, config);
  spdlog::debug("stream embedding: {}", stream::stream_embedding_name(diarizer.embedding()));
  if (pcm) {
    stream_pcm(arguments, *pcm, shape, limit, diarizer);
  } else {
    stream_file(arguments, diarizer, stop);
  }
  const std::string uri =
      arguments.input == "-" ? std::string("stdin") : recording_uri(arguments.input);
  const pipeline::DiarizationResult result = diarizer.finish(uri);
  print_events(diarizer);
  if (write_result) write_output(format_result(result, flags), flags.out, output_options);
  if (!flags.quiet) {
    fmt::print(stderr, "{}: {:.1f} s of audio, {} speakers, {} turns\n", uri,
               result.duration_seconds, result.speaker_count, result.turns.size());
  }
}

}  // namespace

void add_stream_command(CLI::App& app) {
  auto arguments = std::make_shared<StreamArguments>();
  auto* command = app.add_subcommand(
      "stream",
      "Diarize live: speaker turns as JSON lines within a set latency of the audio (a file, or "
      "WAV or raw PCM on standard input with -)");
  command
      ->add_option("input", arguments->input,
                   "recording, raw PCM file (--raw), or - (standard input: WAV, or raw PCM with "
                   "--raw)")
      ->required();
  add_diarization_flags(*command, arguments->flags);
  add_engine_flags(*command, arguments->engine);
  // --format names either the -o file's format or, with --raw, the sample format.
  command->remove_option(command->get_option("--format"));
  command->add_option("--format", arguments->flags.format,
                      "with --raw: s16le or f32le (default s16le); else the -o file's format: "
                      "rttm (default), json, txt, srt or vtt");
  // The engine's --step is the batch chunk step (kept for --final-recluster); the stream's own
  // step replaces the flag.
  command->remove_option(command->get_option("--step"));
  // The stream's own options from its table (stream/stream_options.h), as every face's.
  stream::StreamConfig& config = arguments->config;
  add_spec_flag(*command, stream::stream_option("step"), config.step_seconds);
  add_spec_flag(*command, stream::stream_option("latency"), config.latency_seconds);
  add_spec_flag(*command, stream::stream_option("match_threshold"), config.match_threshold);
  add_spec_flag(*command, stream::stream_option("provisional"), config.provisional);
  add_spec_flag(*command, stream::stream_option("final_recluster"), config.final_recluster)
      ->description(stream::stream_option("final_recluster").help + ", written with -o");
  add_spec_flag(*command, stream::stream_option("embedding"), arguments->embedding);
  command->add_flag("--realtime", arguments->realtime,
                    "pace the input at real time (as from a microphone) instead of as fast as "
                    "possible");
  command->add_flag("--raw", arguments->raw, "the input is headerless PCM (see --rate, --format)");
  add_spec_flag(*command, stream::stream_option("sample_rate"), arguments->raw_rate)
      ->description("with --raw: " + stream::stream_option("sample_rate").help);
  add_spec_flag(*command, stream::stream_option("channels"), arguments->raw_channels)
      ->description("with --raw: " + stream::stream_option("channels").help);
  command->get_option("--out")->default_str("")->description(
      "file of the final result (written when the input ends, also on SIGINT or SIGTERM); "
      "standard output carries the events");
  for (const char* flag : kReclusterFlags) {
    CLI::Option* option = command->get_option(flag);
    option->description("with --final-recluster only: " + option->get_description());
  }
  const pipeline::OptionSpec& max_speakers = stream::stream_option("max_speakers");
  command->get_option("--max-speakers")
      ->description(fmt::format("{} (default {}); with --final-recluster, also the batch "
                                "clustering's bound",
                                max_speakers.help, max_speakers.default_value.dump()));
  command->callback([arguments, command] { run_stream(*arguments, *command); });
}

}  // namespace parley::cli
