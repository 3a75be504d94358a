#include "server/stream_diarizer_session.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace parley::server
