#include "server/websocket.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace parley::server::websocket {
namespace {

constexpr std::uint32_t kMask = 0x37fa213d;

// Every message `bytes` holds, fed `piece` bytes at a time; the error, if any, last.
struct Read {
  std::vector<Message> messages;
  std::optional<ReadError> error;
};
Read read_all(std::string_view bytes, std::size_t piece, std::size_t max_message = 1 << 20) {
  MessageReader reader(max_message);
  Read read;
  while (!bytes.empty() && !reader.error()) {
    const std::string_view chunk = bytes.substr(0, std::min(piece, bytes.size()));
    const std::size_t used = reader.feed(chunk);
    if (auto message = reader.take()) read.messages.push_back(std::move(*message));
    if (used == 0 && !reader.error()) ADD_FAILURE() << "the reader took nothing";
    bytes.remove_prefix(used);
    if (used == 0) break;
  }
  read.error = reader.error();
  return read;
}

TEST(WebSocket, AcceptKeyOfRfc6455) {
  // RFC 6455 section 1.3's example.
  EXPECT_EQ(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_TRUE(is_valid_client_key("dGhlIHNhbXBsZSBub25jZQ=="));
  EXPECT_FALSE(is_valid_client_key("dGhlIHNhbXBsZSBub25jZQ"));
  EXPECT_FALSE(is_valid_client_key("dGhlIHNhbXBsZSBub25j!Q=="));
  EXPECT_FALSE(is_valid_client_key(""));
}

TEST(WebSocket, MaskedFramesOfRfc6455) {
  // Section 5.7: a masked "Hello" from a client.
  const std::string hello("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11);
  EXPECT_EQ(encode_client_frame(Opcode::kText, "Hello", kMask), hello);
  const Read read = read_all(hello, 1);
  ASSERT_EQ(read.messages.size(), 1u);
  EXPECT_EQ(read.messages[0].opcode, Opcode::kText);
  EXPECT_EQ(read.messages[0].payload, "Hello");
  // The server's unmasked "Hello".
  EXPECT_EQ(encode_frame(Opcode::kText, "Hello"), std::string("\x81\x05Hello", 7));
}

TEST(WebSocket, LengthsOfEveryForm) {
  for (const std::size_t size : {0u, 125u, 126u, 65535u, 65536u, 200000u}) {
    std::string payload(size, '\0');
    for (std::size_t k = 0; k < size; ++k) payload[k] = static_cast<char>(k * 7);
    const std::string frame = encode_client_frame(Opcode::kBinary, payload, kMask);
    for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, frame.size()}) {
      if (piece == 1 && size > 70000) continue;
      const Read read = read_all(frame, piece);
      ASSERT_EQ(read.messages.size(), 1u) << size;
      EXPECT_EQ(read.messages[0].payload, payload) << size;
      EXPECT_FALSE(read.error);
    }
  }
  const std::string big = encode_frame(Opcode::kBinary, std::string(70000, 'x'));
  EXPECT_EQ(static_cast<std::uint8_t>(big[1]), 127);
  EXPECT_EQ(big.size(), 70000u + 10u);
}

TEST(WebSocket, FragmentsWithControlFramesBetween) {
  std::string bytes = encode_client_frame(Opcode::kText, "Hel", kMask, false);
  bytes += encode_client_frame(Opcode::kPing, "p", kMask);
  bytes += encode_client_frame(Opcode::kContinuation, "l", kMask, false);
  bytes += encode_client_frame(Opcode::kContinuation, "o", kMask, true);
  bytes += encode_client_frame(Opcode::kBinary, std::string("\0\1", 2), kMask);
  const Read read = read_all(bytes, 3);
  ASSERT_EQ(read.messages.size(), 3u);
  EXPECT_EQ(read.messages[0].opcode, Opcode::kPing);
  EXPECT_EQ(read.messages[0].payload, "p");
  EXPECT_EQ(read.messages[1].opcode, Opcode::kText);
  EXPECT_EQ(read.messages[1].payload, "Hello");
  EXPECT_EQ(read.messages[2].opcode, Opcode::kBinary);
  EXPECT_FALSE(read.error);
}

TEST(WebSocket, ConsumesNoMoreThanOneMessage) {
  const std::string two = encode_client_frame(Opcode::kText, "one", kMask) +
                          encode_client_frame(Opcode::kText, "two", kMask);
  MessageReader reader(1024);
  const std::size_t used = reader.feed(two);
  EXPECT_EQ(used, two.size() / 2);
  EXPECT_EQ(reader.take()->payload, "one");
  EXPECT_FALSE(reader.take());
  EXPECT_EQ(reader.feed(std::string_view(two).substr(used)), two.size() / 2);
  EXPECT_EQ(reader.take()->payload, "two");
}

std::uint16_t error_code(const std::string& bytes, std::size_t max_message = 1024) {
  const Read read = read_all(bytes, bytes.size(), max_message);
  return read.error ? read.error->code : 0;
}

TEST(WebSocket, HostileFramesAreErrors) {
  // Unmasked.
  EXPECT_EQ(error_code(encode_frame(Opcode::kText, "hi")), kProtocolError);
  // Reserved bits, unknown opcodes.
  std::string rsv = encode_client_frame(Opcode::kText, "hi", kMask);
  rsv[0] = static_cast<char>(rsv[0] | 0x40);
  EXPECT_EQ(error_code(rsv), kProtocolError);
  for (const int opcode : {0x3, 0x7, 0xB, 0xF}) {
    std::string frame = encode_client_frame(Opcode::kText, "hi", kMask);
    frame[0] = static_cast<char>(0x80 | opcode);
    EXPECT_EQ(error_code(frame), kProtocolError) << opcode;
  }
  // A fragmented or oversize control frame.
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kPing, "x", kMask, false)), kProtocolError);
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kPing, std::string(126, 'x'), kMask)),
            kProtocolError);
  // A continuation out of place, a new message inside a fragmented one.
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kContinuation, "x", kMask)), kProtocolError);
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kText, "a", kMask, false) +
                       encode_client_frame(Opcode::kBinary, "b", kMask)),
            kProtocolError);
  // Too big, as one frame or over several; a length with its top bit set.
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kBinary, std::string(1025, 'x'), kMask)),
            kMessageTooBig);
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kBinary, std::string(600, 'x'), kMask, false) +
                       encode_client_frame(Opcode::kContinuation, std::string(600, 'x'), kMask)),
            kMessageTooBig);
  std::string huge("\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04", 14);
  EXPECT_EQ(error_code(huge), kProtocolError);
  huge[2] = 0x7f;
  EXPECT_EQ(error_code(huge), kMessageTooBig);
  // Text that is not UTF-8; close frames that are malformed.
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kText, "\xc3\x28", kMask)), kInvalidPayload);
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kClose, "x", kMask)), kProtocolError);
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kClose, std::string("\x03\xed", 2), kMask)),
            kProtocolError);  // 1005
  EXPECT_EQ(error_code(encode_client_frame(Opcode::kClose, std::string("\x03\xe8\xff", 3), kMask)),
            kInvalidPayload);
}

TEST(WebSocket, CloseFrames) {
  const Read read = read_all(encode_client_frame(Opcode::kClose,
                                                 std::string("\x03\xe8"
                                                             "bye",
                                                             5),
                                                 kMask),
                             2);
  ASSERT_EQ(read.messages.size(), 1u);
  EXPECT_EQ(read.messages[0].opcode, Opcode::kClose);
  EXPECT_EQ(close_code(read.messages[0].payload), kNormal);
  EXPECT_EQ(close_code(""), kNoStatus);
  const std::string close = encode_close(kGoingAway, std::string(300, 'r'));
  EXPECT_EQ(close.size(), 2u + 125u);
  EXPECT_EQ(close_code(std::string_view(close).substr(2)), kGoingAway);
  EXPECT_THROW(encode_frame(Opcode::kPing, std::string(126, 'x')), std::exception);
}

TEST(WebSocket, NothingAfterAnError) {
  MessageReader reader(1024);
  EXPECT_GT(reader.feed(encode_frame(Opcode::kText, "hi")), 0u);
  ASSERT_TRUE(reader.error());
  EXPECT_EQ(reader.feed(encode_client_frame(Opcode::kText, "hi", kMask)), 0u);
  EXPECT_FALSE(reader.take());
}

}  // namespace
}  // namespace parley::server::websocket
