#include "server/stream_diarizer_session.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "core/error.h"

namespace parley::server {
namespace {

TEST(StreamDiarizerSession, RequestSettingsBecomeTheStreamConfig) {
  LiveStreamRequest request;
  request.sample_rate = 8000;
  request.settings = {{"step", "0.25"}, {"latency", "1.5"}, {"provisional", "true"}};
  const stream::StreamConfig config = stream_config(request, {});
  EXPECT_EQ(config.sample_rate, 8000.0);
  EXPECT_EQ(config.step_seconds, 0.25);
  EXPECT_EQ(config.latency_seconds, 1.5);
  EXPECT_TRUE(config.provisional);
  EXPECT_FALSE(config.final_recluster);
  EXPECT_EQ(config.embedding, stream::StreamEmbedding::kAuto);
}

// As `parley stream --stream-embedding`: auto, window or rolling.
TEST(StreamDiarizerSession, EmbeddingIsAStreamSetting) {
  for (const auto& [text, expected] : {std::pair{"auto", stream::StreamEmbedding::kAuto},
                                       std::pair{"window", stream::StreamEmbedding::kWindow},
                                       std::pair{"rolling", stream::StreamEmbedding::kRolling}}) {
    LiveStreamRequest request;
    request.settings = {{"embedding", text}};
    EXPECT_EQ(stream_config(request, {}).embedding, expected) << text;
  }
  LiveStreamRequest request;
  request.settings = {{"embedding", "whole"}};
  try {
    stream_config(request, {});
    FAIL() << "embedding=whole was taken";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("embedding"), std::string::npos) << message;
    EXPECT_NE(message.find("rolling"), std::string::npos) << message;  // the choices
    EXPECT_NE(message.find("whole"), std::string::npos) << message;
  }
}

TEST(StreamDiarizerSession, BadSettingsAreErrorsNamingThem) {
  const auto message = [](const std::string& name, const std::string& value) {
    LiveStreamRequest request;
    request.settings[name] = value;
    try {
      stream_config(request, {});
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(message("latency", "abc").find("latency"), std::string::npos);
  EXPECT_NE(message("latency", "nan").find("latency"), std::string::npos);
  EXPECT_NE(message("latency", "60").find("latency"), std::string::npos);  // StreamConfig's range
  EXPECT_NE(message("provisional", "yes").find("provisional"), std::string::npos);
  EXPECT_NE(message("step", "").find("step"), std::string::npos);
  EXPECT_NE(message("color", "red").find("color"), std::string::npos);
  EXPECT_NE(message("embedding", "").find("embedding"), std::string::npos);
}

// The live clustering's two settings, as `parley stream --max-speakers --match-threshold`.
TEST(StreamDiarizerSession, SpeakerBoundAndMatchThresholdAreStreamSettings) {
  LiveStreamRequest request;
  request.settings = {{"max_speakers", "1"}, {"match_threshold", "0.25"}};
  const stream::StreamConfig config = stream_config(request, {});
  EXPECT_EQ(config.max_speakers, 1u);
  EXPECT_EQ(config.match_threshold, 0.25);
}

// The stream option table's checks and messages (stream/stream_options.h), in the WebSocket's
// parameter names (not the configuration's fields).
TEST(StreamDiarizerSession, RangeErrorsNameTheQueryParameters) {
  const auto message = [](std::map<std::string, std::string> settings, int rate = 16000) {
    LiveStreamRequest request;
    request.sample_rate = rate;
    request.settings = std::move(settings);
    try {
      stream_config(request, {});
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  const std::string latency = message({{"latency", "60"}});
  EXPECT_NE(latency.find("latency: must be 0.5 to 5 (got 60)"), std::string::npos) << latency;
  EXPECT_EQ(latency.find("latency_seconds"), std::string::npos) << latency;
  const std::string both = message({{"latency", "1"}, {"step", "2"}});
  EXPECT_NE(both.find("latency (1) must be at least step (2)"), std::string::npos) << both;
  const std::string step = message({{"step", "0.01"}});
  EXPECT_NE(step.find("step: must be 0.1 to 5 (got 0.01)"), std::string::npos) << step;
  EXPECT_EQ(step.find("step_seconds"), std::string::npos) << step;
  const std::string speakers = message({{"max_speakers", "0"}});
  EXPECT_NE(speakers.find("max_speakers: must be 1 to 1000 (got 0)"), std::string::npos)
      << speakers;
  EXPECT_NE(message({{"max_speakers", "-1"}}).find("max_speakers: must be 1 to 1000"),
            std::string::npos);
  EXPECT_NE(message({{"max_speakers", "2.5"}}).find("max_speakers: expects a whole number"),
            std::string::npos);
  EXPECT_NE(message({{"match_threshold", "3"}}).find("match_threshold: must be 0 to 2 (got 3)"),
            std::string::npos);
  EXPECT_NE(message({{"match_threshold", "nan"}}).find("match_threshold: "), std::string::npos);
  const std::string rate = message({}, 500);
  EXPECT_NE(rate.find("rate: must be 1000 to 768000 (got 500)"), std::string::npos) << rate;
  EXPECT_EQ(rate.find("sample_rate"), std::string::npos) << rate;
  // The table's bounds, the engine's (audio::kMinSampleRate to kMaxSampleRate): past the
  // WebSocket's former 8000 to 192000.
  EXPECT_EQ(message({}, 1000), "");
  EXPECT_EQ(message({}, 768000), "");
}

}  // namespace
}  // namespace parley::server
