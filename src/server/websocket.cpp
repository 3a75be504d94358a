#include "server/websocket.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>

#include "core/error.h"
#include "core/text.h"

namespace parley::server::websocket {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool is_control(Opcode opcode) { return (static_cast<std::uint8_t>(opcode) & 0x8) != 0; }

bool is_known(std::uint8_t opcode) { return opcode <= 0x2 || (opcode >= 0x8 && opcode <= 0xA); }

// Codes a peer may send in a close frame (RFC 6455 section 7.4): the defined ones that are not
// reserved for local use (1005, 1006, 1015), and 3000-4999 for libraries and applications.
bool is_sendable_close_code(std::uint16_t code) {
  if (code >= 3000 && code <= 4999) return true;
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014);
}

std::string header(Opcode opcode, std::size_t size, bool fin, bool masked) {
  std::string out;
  out.push_back(static_cast<char>((fin ? 0x80 : 0x00) | static_cast<std::uint8_t>(opcode)));
  const std::uint8_t mask_bit = masked ? 0x80 : 0x00;
  if (size < 126) {
    out.push_back(static_cast<char>(mask_bit | size));
  } else if (size <= 0xFFFF) {
    out.push_back(static_cast<char>(mask_bit | 126));
    out.push_back(static_cast<char>((size >> 8) & 0xFF));
    out.push_back(static_cast<char>(size & 0xFF));
  } else {
    out.push_back(static_cast<char>(mask_bit | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((static_cast<std::uint64_t>(size) >> shift) & 0xFF));
    }
  }
  return out;
}

}  // namespace

std::string accept_key(std::string_view client_key) {
  const std::string text = std::string(client_key) + std::string(kGuid);
  std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  // Base64 of 20 bytes: 28 characters and the NUL EVP_EncodeBlock writes.
  std::array<unsigned char, 29> encoded{};
  const int length = EVP_EncodeBlock(encoded.data(), digest.data(), SHA_DIGEST_LENGTH);
  return {reinterpret_cast<const char*>(encoded.data()), static_cast<std::size_t>(length)};
}

bool is_valid_client_key(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  std::array<unsigned char, 19> decoded{};
  return EVP_DecodeBlock(decoded.data(), reinterpret_cast<const unsigned char*>(key.data()),
                         static_cast<int>(key.size())) == 18;
}

MessageReader::MessageReader(std::size_t max_message_bytes)
    : max_message_bytes_(max_message_bytes) {}

void MessageReader::fail(std::uint16_t code, std::string reason) {
  error_ = ReadError{code, std::move(reason)};
}

std::optional<Message> MessageReader::take() {
  std::optional<Message> message = std::move(ready_);
  ready_.reset();
  return message;
}

std::size_t MessageReader::feed(std::string_view bytes) {
  std::size_t used = 0;
  while (used < bytes.size() && !error_ && !ready_) {
    if (!in_payload_) {
      const std::size_t taken = std::min(header_needed_ - header_size_, bytes.size() - used);
      std::copy_n(bytes.data() + used, taken, header_ + header_size_);
      header_size_ += taken;
      used += taken;
      if (header_size_ < header_needed_) break;
      header_complete();
      continue;
    }
    const std::size_t taken =
        static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, bytes.size() - used));
    std::string& target = is_control(frame_opcode_) ? control_ : message_;
    const std::size_t start = target.size();
    target.append(bytes.data() + used, taken);
    for (std::size_t k = 0; k < taken; ++k) {
      target[start + k] = static_cast<char>(static_cast<std::uint8_t>(target[start + k]) ^
                                            mask_[(payload_index_ + k) % 4]);
    }
    payload_index_ += taken;
    payload_left_ -= taken;
    used += taken;
    if (payload_left_ == 0) frame_complete();
  }
  return used;
}

void MessageReader::header_complete() {
  const std::uint8_t first = header_[0];
  const std::uint8_t second = header_[1];
  if (header_needed_ == 2) {
    // The rest of the header's length follows from its first two bytes; the checks that need
    // only them come first, before any more is read.
    if ((first & 0x70) != 0) return fail(kProtocolError, "reserved bits set (no extension agreed)");
    const std::uint8_t opcode = first & 0x0F;
    if (!is_known(opcode)) return fail(kProtocolError, "unknown opcode");
    if ((second & 0x80) == 0) return fail(kProtocolError, "a client's frames must be masked");
    const auto frame_opcode = static_cast<Opcode>(opcode);
    const bool fin = (first & 0x80) != 0;
    const std::uint8_t length = second & 0x7F;
    if (is_control(frame_opcode) && (!fin || length > 125)) {
      return fail(kProtocolError, "a control frame must be whole and at most 125 bytes");
    }
    if (frame_opcode == Opcode::kContinuation && !message_opcode_) {
      return fail(kProtocolError, "a continuation frame without a message to continue");
    }
    if ((frame_opcode == Opcode::kText || frame_opcode == Opcode::kBinary) && message_opcode_) {
      return fail(kProtocolError, "a new message before the last one's final frame");
    }
    header_needed_ = 2 + (length == 126 ? 2 : length == 127 ? 8 : 0) + 4;
    if (header_size_ < header_needed_) return;
  }
  fin_ = (first & 0x80) != 0;
  frame_opcode_ = static_cast<Opcode>(first & 0x0F);
  const std::uint8_t length = second & 0x7F;
  std::size_t at = 2;
  std::uint64_t size = length;
  if (length == 126 || length == 127) {
    const std::size_t count = length == 126 ? 2 : 8;
    size = 0;
    for (std::size_t k = 0; k < count; ++k) size = (size << 8) | header_[at + k];
    at += count;
    if (length == 127 && (size >> 63) != 0) {
      return fail(kProtocolError, "a frame length with its top bit set");
    }
  }
  std::copy_n(header_ + at, 4, mask_);
  if (!is_control(frame_opcode_)) {
    if (size > max_message_bytes_ - std::min(message_.size(), max_message_bytes_)) {
      return fail(kMessageTooBig,
                  "message longer than " + std::to_string(max_message_bytes_) + " bytes");
    }
    if (frame_opcode_ != Opcode::kContinuation) message_opcode_ = frame_opcode_;
    message_.reserve(message_.size() + static_cast<std::size_t>(size));
  }
  header_size_ = 0;
  header_needed_ = 2;
  payload_left_ = size;
  payload_index_ = 0;
  in_payload_ = true;
  if (size == 0) frame_complete();
}

void MessageReader::frame_complete() {
  in_payload_ = false;
  if (is_control(frame_opcode_)) {
    if (frame_opcode_ == Opcode::kClose) {
      if (control_.size() == 1) return fail(kProtocolError, "a close frame of one byte");
      if (control_.size() >= 2) {
        if (!is_sendable_close_code(close_code(control_))) {
          return fail(kProtocolError, "a close code no endpoint may send");
        }
        if (!is_valid_utf8(std::string_view(control_).substr(2))) {
          return fail(kInvalidPayload, "a close reason that is not UTF-8");
        }
      }
    }
    ready_ = Message{frame_opcode_, std::move(control_)};
    control_.clear();
    return;
  }
  if (!fin_) return;
  if (*message_opcode_ == Opcode::kText && !is_valid_utf8(message_)) {
    return fail(kInvalidPayload, "a text message that is not UTF-8");
  }
  ready_ = Message{*message_opcode_, std::move(message_)};
  message_.clear();
  message_opcode_.reset();
}

std::string encode_frame(Opcode opcode, std::string_view payload) {
  if (is_control(opcode) && payload.size() > 125) {
    throw Error("a WebSocket control frame holds at most 125 bytes");
  }
  std::string out = header(opcode, payload.size(), true, false);
  out.append(payload);
  return out;
}

std::string encode_client_frame(Opcode opcode, std::string_view payload, std::uint32_t mask,
                                bool fin) {
  std::string out = header(opcode, payload.size(), fin, true);
  const std::array<std::uint8_t, 4> key = {
      static_cast<std::uint8_t>(mask >> 24), static_cast<std::uint8_t>(mask >> 16),
      static_cast<std::uint8_t>(mask >> 8), static_cast<std::uint8_t>(mask)};
  for (const std::uint8_t byte : key) out.push_back(static_cast<char>(byte));
  for (std::size_t k = 0; k < payload.size(); ++k) {
    out.push_back(static_cast<char>(static_cast<std::uint8_t>(payload[k]) ^ key[k % 4]));
  }
  return out;
}

std::string encode_close(std::uint16_t code, std::string_view reason) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  payload.append(cut_at_utf8_boundary(reason, 123));
  return encode_frame(Opcode::kClose, payload);
}

std::uint16_t close_code(std::string_view payload) {
  if (payload.size() < 2) return kNoStatus;
  return static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                    static_cast<std::uint8_t>(payload[1]));
}

}  // namespace parley::server::websocket
