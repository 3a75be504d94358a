// `parley stream FILE|-`: live diarization of a recording or of raw PCM arriving on standard
// input, printing speaker-turn events as JSON lines while the audio goes by (docs/live.md).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include "audio/mono_resampled_stream.h"
#include "cli/commands.h"
#include "cli/diarization_options.h"
#include "core/error.h"
#include "core/sample_rate.h"
#include "models/speed_twin.h"
#include "stream/stream_diarizer.h"

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

// Sleeps until `seconds` of audio have had time to arrive since `start` (--realtime).
void pace(Clock::time_point start, double seconds) {
  std::this_thread::sleep_until(
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
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
void stream_file(const StreamArguments& arguments, stream::StreamDiarizer& diarizer) {
  audio::MonoResampledStream audio(arguments.input);
  std::vector<float> block(static_cast<std::size_t>(kSampleRate / 50));
  const Clock::time_point start = Clock::now();
  double seconds = 0.0;
  while (const std::size_t n = audio.read(block)) {
    if (arguments.realtime) pace(start, seconds);
    diarizer.push(std::span<const float>(block).first(n));
    seconds += static_cast<double>(n) / kSampleRate;
    print_events(diarizer);
  }
}

// Raw PCM from a file or standard input, in whatever pieces read() returns.
void stream_raw(const StreamArguments& arguments, stream::StreamDiarizer& diarizer) {
  const bool from_stdin = arguments.input == "-";
  std::FILE* file = from_stdin ? stdin : std::fopen(arguments.input.c_str(), "rb");
  if (file == nullptr) fail("cannot open {}: {}", arguments.input, std::strerror(errno));
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(
      from_stdin ? nullptr : file, [](std::FILE* f) { return f ? std::fclose(f) : 0; });
  const bool int16 = arguments.raw_format == "s16le";
  const std::size_t sample_bytes = int16 ? 2 : 4;
  const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(arguments.raw_channels);
  // 20 ms of input per read, whole frames; a partial frame waits for the next read.
  std::vector<unsigned char> bytes(
      std::max<std::size_t>(1, static_cast<std::size_t>(arguments.raw_rate / 50)) * frame_bytes);
  std::vector<unsigned char> carry;
  std::vector<std::int16_t> pcm;
  std::vector<float> floats;
  const Clock::time_point start = Clock::now();
  double seconds = 0.0;
  for (;;) {
    const std::size_t got = std::fread(bytes.data(), 1, bytes.size(), file);
    if (got == 0) {
      if (std::ferror(file)) fail("cannot read {}: {}", arguments.input, std::strerror(errno));
      break;
    }
    carry.insert(carry.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(got));
    const std::size_t whole = carry.size() / frame_bytes * frame_bytes;
    const std::size_t samples = whole / sample_bytes;
    if (arguments.realtime) pace(start, seconds);
    if (int16) {
      pcm.resize(samples);
      std::memcpy(pcm.data(), carry.data(), whole);  // little-endian hosts only (x86, arm64)
      diarizer.push_int16(pcm, arguments.raw_channels);
    } else {
      floats.resize(samples);
      std::memcpy(floats.data(), carry.data(), whole);
      for (float& v : floats) v = std::isfinite(v) ? v : 0.0F;
      diarizer.push_interleaved(floats, arguments.raw_channels);
    }
    carry.erase(carry.begin(), carry.begin() + static_cast<std::ptrdiff_t>(whole));
    seconds += static_cast<double>(samples / static_cast<std::size_t>(arguments.raw_channels)) /
               arguments.raw_rate;
    print_events(diarizer);
  }
  if (!carry.empty()) {
    spdlog::warn("{}: the input ended inside a sample frame; its last {} bytes were ignored",
                 arguments.input, carry.size());
  }
}

void run_stream(StreamArguments arguments) {
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
  if (arguments.input == "-" && !arguments.raw) {
    fail("reading standard input needs --raw with --rate, --format and --channels (raw PCM)");
  }
  stream::StreamConfig& config = arguments.config;
  config.sample_rate = arguments.raw ? arguments.raw_rate : kSampleRate;
  if (flags.max_speakers) config.max_speakers = static_cast<std::size_t>(*flags.max_speakers);
  config.embedding = stream::parse_stream_embedding(arguments.embedding);
  config.validate();
  if (!arguments.raw) {
    // A typo fails before the models load.
    static_cast<void>(audio::open_audio_source(arguments.input));
  }
  const OutputOptions output_options{.overwrite_read_only = flags.force};
  const bool write_result = flags.out != "-";
  if (write_result) check_output_file("--out", flags.out, output_options);

  const pipeline::DiarizationModels paths = resolve_models(arguments.engine, flags);
  models::warn_if_speed_twin(paths.embedding);
  const stream::StreamModels models(paths, diarization_config(arguments.engine, flags));
  stream::StreamDiarizer diarizer(models, config);
  spdlog::debug("stream embedding: {}", stream::stream_embedding_name(diarizer.embedding()));
  if (arguments.raw) {
    stream_raw(arguments, diarizer);
  } else {
    stream_file(arguments, diarizer);
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
      "raw PCM on standard input with -)");
  command->add_option("input", arguments->input, "recording, raw PCM file, or - (standard input)")
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
  stream::StreamConfig& config = arguments->config;
  command
      ->add_option("--step", config.step_seconds,
                   "seconds the rolling 10 s window moves between two model runs")
      ->check(number_between(0.1, 5.0))
      ->capture_default_str();
  command
      ->add_option("--latency", config.latency_seconds,
                   "seconds of audio after which a frame's speaker is final (0.5 to 5)")
      ->check(number_between(0.5, 5.0))
      ->capture_default_str();
  command
      ->add_option("--match-threshold", config.match_threshold,
                   "cosine distance under which a voice matches a known speaker")
      ->check(number_between(0.0, 2.0))
      ->capture_default_str();
  command->add_flag("--provisional", config.provisional,
                    "also print turn_update events for the frames not final yet");
  command->add_flag("--final-recluster", config.final_recluster,
                    "at the end, diarize the whole stream as `parley diarize` does and write "
                    "that (under the live names) with -o");
  command
      ->add_option("--stream-embedding", arguments->embedding,
                   "how windows are embedded: rolling keeps the embedding trunk's frames between "
                   "steps (less than half the CPU at a 0.5 s step), window runs it on every whole "
                   "window; auto: rolling with --embedding-mode shared, a step of whole 10 ms "
                   "and the embedding network on the CPU")
      ->check(CLI::IsMember({"auto", "window", "rolling"}))
      ->capture_default_str();
  command->add_flag("--realtime", arguments->realtime,
                    "pace the input at real time (as from a microphone) instead of as fast as "
                    "possible");
  command->add_flag("--raw", arguments->raw, "the input is headerless PCM (see --rate, --format)");
  command->add_option("--rate", arguments->raw_rate, "sample rate of --raw input (Hz)")
      ->check(number_between(1000, 768000))
      ->capture_default_str();
  command->add_option("--channels", arguments->raw_channels, "--raw channels (interleaved)")
      ->check(number_between(1, 64))
      ->capture_default_str();
  command->callback([arguments] { run_stream(*arguments); });
}

}  // namespace parley::cli
