// The WebSocket frame reader of `parley serve`'s live endpoint (server/websocket.h): the fuzzer's
// bytes are what a client sends after the upgrade, fed in pieces whose sizes the first byte
// picks (a frame's header and payload split anywhere). The reader must stop at an error with a
// close code a server may send, never hand out a message over its limit or a text that is not
// UTF-8, and read back each message it produced when that is framed again.
#include <cstdlib>
#include <string>

#include "core/text.h"
#include "fuzz_input.h"
#include "server/websocket.h"

namespace {

namespace ws = parley::server::websocket;
constexpr std::size_t kMaxMessage = 4096;

void check(bool condition) {
  if (!condition) std::abort();
}

void check_round_trip(const ws::Message& message) {
  const bool fragmented = message.payload.size() > 3 && message.opcode != ws::Opcode::kClose &&
                          message.opcode != ws::Opcode::kPing &&
                          message.opcode != ws::Opcode::kPong;
  std::string bytes;
  if (fragmented) {
    const std::size_t half = message.payload.size() / 2;
    bytes = ws::encode_client_frame(message.opcode, message.payload.substr(0, half), 0x5a5a0f0f,
                                    false) +
            ws::encode_client_frame(ws::Opcode::kContinuation, message.payload.substr(half),
                                    0x01020304);
  } else {
    bytes = ws::encode_client_frame(message.opcode, message.payload, 0xdeadbeef);
  }
  ws::MessageReader reader(kMaxMessage);
  check(reader.feed(bytes) == bytes.size());
  const auto again = reader.take();
  check(again && again->opcode == message.opcode && again->payload == message.payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view input = parley::fuzz::as_text(data + 1, size - 1);
  ws::MessageReader reader(kMaxMessage);
  while (!input.empty()) {
    const std::size_t used = reader.feed(input.substr(0, piece));
    input.remove_prefix(used);
    if (auto message = reader.take()) {
      check(message->payload.size() <= kMaxMessage);
      if (message->opcode == ws::Opcode::kText) check(parley::is_valid_utf8(message->payload));
      check_round_trip(*message);
    } else if (used == 0) {
      break;
    }
    if (reader.error()) break;
  }
  if (const auto& error = reader.error()) {
    check(error->code == ws::kProtocolError || error->code == ws::kInvalidPayload ||
          error->code == ws::kMessageTooBig);
    check(reader.feed("\x81\x80\x00\x00\x00\x00") == 0);
  }
  return 0;
}
