#pragma once
// The WebSocket protocol (RFC 6455), server side, without sockets: the opening handshake's
// accept key, a reader that turns a client's bytes into whole messages, and the frames the
// server writes. cpp-httplib has none; `parley serve`'s live endpoint (/v1/stream) runs on it.
//
// The reader holds at most one message (max_message_bytes) and one control frame: it consumes
// bytes only up to the end of the next complete message, so a client that sends faster than the
// server handles messages is held back by TCP instead of filling memory.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parley::server::websocket {

enum class Opcode : std::uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

// Close codes (RFC 6455 section 7.4.1) the server sends.
enum CloseCode : std::uint16_t {
  kNormal = 1000,
  kGoingAway = 1001,        // the server stops
  kProtocolError = 1002,    // a frame breaks the protocol
  kUnsupportedData = 1003,  // a message of a kind the endpoint does not take
  kNoStatus = 1005,         // (never sent) a close frame without a code
  kInvalidPayload = 1007,   // text that is not UTF-8, audio that is not whole samples
  kPolicyViolation = 1008,  // the client does not read what the server sends
  kMessageTooBig = 1009,    // over max_message_bytes
  kInternalError = 1011,    // the server failed the stream (its log says why)
  kTryAgainLater = 1013,    // the server is busy
};

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key + RFC's GUID)).
std::string accept_key(std::string_view client_key);

// True for a Sec-WebSocket-Key a client may send: base64 of 16 bytes (24 characters).
bool is_valid_client_key(std::string_view key);

struct Message {
  Opcode opcode = Opcode::kText;  // kText, kBinary, kClose, kPing or kPong
  std::string payload;            // a close's payload is its code (2 bytes) and reason
};

// Why the reader stopped: the close code to answer with and a reason for the log.
struct ReadError {
  std::uint16_t code = kProtocolError;
  std::string reason;
};

class MessageReader {
 public:
  explicit MessageReader(std::size_t max_message_bytes);

  // Consumes bytes from the front of `bytes`, up to the end of the next complete message (then
  // take() has it) or of `bytes`, and returns how many. After an error it consumes nothing.
  std::size_t feed(std::string_view bytes);
  // The message the last feed() completed, once.
  std::optional<Message> take();
  // Set once the client broke the protocol (or sent more than allowed); nothing follows.
  const std::optional<ReadError>& error() const { return error_; }

 private:
  void fail(std::uint16_t code, std::string reason);
  void header_complete();
  void frame_complete();

  std::size_t max_message_bytes_;
  // The current frame's header (2 to 14 bytes) while it arrives.
  std::uint8_t header_[14] = {};
  std::size_t header_size_ = 0;
  std::size_t header_needed_ = 2;
  bool in_payload_ = false;
  bool fin_ = false;
  Opcode frame_opcode_ = Opcode::kText;
  std::uint8_t mask_[4] = {};
  std::uint64_t payload_left_ = 0;
  std::uint64_t payload_index_ = 0;  // for the mask's position
  // A data message being assembled (over one or more frames), and a control frame's payload.
  std::optional<Opcode> message_opcode_;
  std::string message_;
  std::string control_;
  std::optional<Message> ready_;
  std::optional<ReadError> error_;
};

// One unfragmented server frame (servers do not mask). A control frame's payload must be at
// most 125 bytes.
std::string encode_frame(Opcode opcode, std::string_view payload);
// A client's frame, masked with `mask` (for tests and fuzzing seeds; a server never sends one).
std::string encode_client_frame(Opcode opcode, std::string_view payload, std::uint32_t mask,
                                bool fin = true);
// A close frame with a code and a reason (cut to fit 125 bytes at a UTF-8 boundary).
std::string encode_close(std::uint16_t code, std::string_view reason);

// The code of a received close frame's payload (kNoStatus when it has none).
std::uint16_t close_code(std::string_view payload);

}  // namespace parley::server::websocket
